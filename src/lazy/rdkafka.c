/*
 * rdkafka.c — librdkafka, opened on first use (lazy.h, docs/adr/0027):
 * only log.backend = kafka needs it. rd_kafka_new is written by hand so that
 * a missing library is reported through its errstr like any other failure;
 * the variadic rd_kafka_producev is not offered (src/kafka calls
 * rd_kafka_produceva, its array form).
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>

#include "lazy/lazy.h"

#define NOT_LOADED "librdkafka could not be loaded"
#define FAIL RD_KAFKA_RESP_ERR__FAIL
typedef rd_kafka_resp_err_t kerr_t;
typedef rd_kafka_topic_partition_list_t tplist_t;

#define KAFKA_FUNCS(X)                                                                     \
    X(kerr_t, rd_kafka_assign, (rd_kafka_t * rk, const tplist_t *partitions),             \
      (rk, partitions), FAIL)                                                              \
    X(int, rd_kafka_assignment_lost, (rd_kafka_t * rk), (rk), 0)                           \
    X(rd_kafka_conf_t *, rd_kafka_conf_new, (void), (), NULL)                              \
    X(rd_kafka_conf_res_t, rd_kafka_conf_set,                                              \
      (rd_kafka_conf_t * conf, const char *name, const char *value, char *errstr,         \
       size_t errstr_size),                                                                \
      (conf, name, value, errstr, errstr_size), RD_KAFKA_CONF_INVALID)                     \
    X(kerr_t, rd_kafka_consumer_close, (rd_kafka_t * rk), (rk), FAIL)                      \
    X(rd_kafka_message_t *, rd_kafka_consumer_poll, (rd_kafka_t * rk, int timeout_ms),     \
      (rk, timeout_ms), NULL)                                                              \
    X(const char *, rd_kafka_err2name, (kerr_t err), (err), NOT_LOADED)                    \
    X(const char *, rd_kafka_err2str, (kerr_t err), (err), NOT_LOADED)                     \
    X(kerr_t, rd_kafka_fatal_error, (rd_kafka_t * rk, char *errstr, size_t errstr_size),   \
      (rk, errstr, errstr_size), FAIL)                                                     \
    X(kerr_t, rd_kafka_flush, (rd_kafka_t * rk, int timeout_ms), (rk, timeout_ms), FAIL)   \
    X(kerr_t, rd_kafka_get_watermark_offsets,                                              \
      (rd_kafka_t * rk, const char *topic, int32_t partition, int64_t *low, int64_t *high), \
      (rk, topic, partition, low, high), FAIL)                                             \
    X(kerr_t, rd_kafka_header_add,                                                         \
      (rd_kafka_headers_t * hdrs, const char *name, ssize_t name_size, const void *value,  \
       ssize_t value_size),                                                                \
      (hdrs, name, name_size, value, value_size), FAIL)                                    \
    X(kerr_t, rd_kafka_header_get_all,                                                     \
      (const rd_kafka_headers_t *hdrs, size_t idx, const char **namep, const void **valuep, \
       size_t *sizep),                                                                     \
      (hdrs, idx, namep, valuep, sizep), FAIL)                                             \
    X(rd_kafka_headers_t *, rd_kafka_headers_new, (size_t initial_count), (initial_count), \
      NULL)                                                                                \
    X(const char *, rd_kafka_message_errstr, (const rd_kafka_message_t *rkmessage),        \
      (rkmessage), NOT_LOADED)                                                             \
    X(kerr_t, rd_kafka_message_headers,                                                    \
      (const rd_kafka_message_t *rkmessage, rd_kafka_headers_t **hdrsp), (rkmessage, hdrsp), \
      FAIL)                                                                                \
    X(int64_t, rd_kafka_message_timestamp,                                                 \
      (const rd_kafka_message_t *rkmessage, rd_kafka_timestamp_type_t *tstype),           \
      (rkmessage, tstype), -1)                                                             \
    X(kerr_t, rd_kafka_metadata,                                                           \
      (rd_kafka_t * rk, int all_topics, rd_kafka_topic_t *only_rkt,                       \
       const struct rd_kafka_metadata **metadatap, int timeout_ms),                        \
      (rk, all_topics, only_rkt, metadatap, timeout_ms), FAIL)                             \
    X(kerr_t, rd_kafka_offsets_for_times, (rd_kafka_t * rk, tplist_t * offsets, int timeout_ms), \
      (rk, offsets, timeout_ms), FAIL)                                                     \
    X(kerr_t, rd_kafka_pause_partitions, (rd_kafka_t * rk, tplist_t * partitions),        \
      (rk, partitions), FAIL)                                                              \
    X(int, rd_kafka_poll, (rd_kafka_t * rk, int timeout_ms), (rk, timeout_ms), 0)          \
    X(kerr_t, rd_kafka_poll_set_consumer, (rd_kafka_t * rk), (rk), FAIL)                   \
    X(kerr_t, rd_kafka_purge, (rd_kafka_t * rk, int purge_flags), (rk, purge_flags), FAIL) \
    X(rd_kafka_queue_t *, rd_kafka_queue_get_consumer, (rd_kafka_t * rk), (rk), NULL)      \
    X(size_t, rd_kafka_queue_length, (rd_kafka_queue_t * rkqu), (rkqu), 0)                 \
    X(kerr_t, rd_kafka_subscribe, (rd_kafka_t * rk, const tplist_t *topics), (rk, topics), \
      FAIL)                                                                                \
    X(rd_kafka_topic_partition_t *, rd_kafka_topic_partition_list_add,                     \
      (tplist_t * rktparlist, const char *topic, int32_t partition),                      \
      (rktparlist, topic, partition), NULL)                                                \
    X(tplist_t *, rd_kafka_topic_partition_list_new, (int size), (size), NULL)             \
    X(rd_kafka_error_t *, rd_kafka_produceva,                                              \
      (rd_kafka_t * rk, const rd_kafka_vu_t *vus, size_t cnt), (rk, vus, cnt), NULL)       \
    X(kerr_t, rd_kafka_error_code, (const rd_kafka_error_t *error), (error), FAIL)         \
    X(const char *, rd_kafka_error_string, (const rd_kafka_error_t *error), (error),       \
      NOT_LOADED)                                                                          \
    X(int, rd_kafka_version, (void), (), 0)                                                \
    X(const char *, rd_kafka_version_str, (void), (), NOT_LOADED)

#define KAFKA_VOIDS(X)                                                                     \
    X(rd_kafka_conf_destroy, (rd_kafka_conf_t * conf), (conf))                             \
    X(rd_kafka_conf_set_dr_msg_cb,                                                         \
      (rd_kafka_conf_t * conf,                                                             \
       void (*dr_msg_cb)(rd_kafka_t * rk, const rd_kafka_message_t *rkmessage, void *opaque)), \
      (conf, dr_msg_cb))                                                                   \
    X(rd_kafka_conf_set_error_cb,                                                          \
      (rd_kafka_conf_t * conf,                                                             \
       void (*error_cb)(rd_kafka_t * rk, int err, const char *reason, void *opaque)),      \
      (conf, error_cb))                                                                    \
    X(rd_kafka_conf_set_log_cb,                                                            \
      (rd_kafka_conf_t * conf,                                                             \
       void (*log_cb)(const rd_kafka_t *rk, int level, const char *fac, const char *buf)), \
      (conf, log_cb))                                                                      \
    X(rd_kafka_conf_set_opaque, (rd_kafka_conf_t * conf, void *opaque), (conf, opaque))    \
    X(rd_kafka_conf_set_rebalance_cb,                                                      \
      (rd_kafka_conf_t * conf,                                                             \
       void (*rebalance_cb)(rd_kafka_t * rk, rd_kafka_resp_err_t err,                      \
                            rd_kafka_topic_partition_list_t *partitions, void *opaque)),  \
      (conf, rebalance_cb))                                                                \
    X(rd_kafka_destroy, (rd_kafka_t * rk), (rk))                                           \
    X(rd_kafka_headers_destroy, (rd_kafka_headers_t * hdrs), (hdrs))                       \
    X(rd_kafka_message_destroy, (rd_kafka_message_t * rkmessage), (rkmessage))             \
    X(rd_kafka_metadata_destroy, (const struct rd_kafka_metadata *metadata), (metadata))   \
    X(rd_kafka_queue_destroy, (rd_kafka_queue_t * rkqu), (rkqu))                           \
    X(rd_kafka_topic_partition_list_destroy, (tplist_t * rkparlist), (rkparlist))          \
    X(rd_kafka_error_destroy, (rd_kafka_error_t * error), (error))

#define KAFKA_EXTRA(X) X(rd_kafka_new, , )

LAZY_LIBRARY(kafka_dl, "librdkafka.so.1", "librdkafka1", KAFKA_FUNCS, KAFKA_VOIDS, KAFKA_EXTRA);

#define KAFKA_STUB(ret, name, params, args, fail) LAZY_STUB(kafka_dl, ret, name, params, args, fail)
#define KAFKA_VSTUB(name, params, args) LAZY_VSTUB(kafka_dl, name, params, args)
KAFKA_FUNCS(KAFKA_STUB)
KAFKA_VOIDS(KAFKA_VSTUB)

LAZY_HIDDEN rd_kafka_t *(rd_kafka_new)(rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr,
                                       size_t errstr_size)
{
    if (fr_dl_ready(&kafka_dl) != 0) {
        snprintf(errstr, errstr_size, "%s", fr_dl_error(&kafka_dl));
        return NULL;
    }
    return LAZY_FN(kafka_dl, rd_kafka_new)(type, conf, errstr, errstr_size);
}
