/*
 * kafka_off.c — the selector in a build without FR_KAFKA (CMake picks this
 * file instead of client.c, producer.c and consumer.c): `embedded` works,
 * `kafka` is refused with a clear error. Stateless.
 */
#include "kafka/kafka.h"

#include "core/diag.h"
#include "core/err.h"

#include <string.h>

int fr_kafka_backend_from_conf(const struct fr_conf *conf, struct fr_log_opts *opts,
                               struct fr_kafka **out)
{
    (void)opts;
    *out = NULL;
    if (strcmp(conf->log_backend, "embedded") == 0) {
        return FR_OK;
    }
    fr_error("kafka",
             "log.backend = \"%s\": this freshet was built without Kafka support "
             "(cmake -DFR_KAFKA=ON)",
             conf->log_backend);
    return FR_ECONFIG;
}

void fr_kafka_free(struct fr_kafka *kafka)
{
    (void)kafka;
}

int fr_kafka_group_join(struct fr_kafka *kafka, const char *group_id, int64_t session_timeout_ms,
                        fr_kafka_group_fn on_assign, fr_kafka_group_fn on_revoke, void *arg,
                        struct fr_kafka_group **out)
{
    (void)kafka, (void)group_id, (void)session_timeout_ms, (void)on_assign, (void)on_revoke,
        (void)arg;
    *out = NULL;
    return FR_EINVAL;
}

int fr_kafka_group_poll(struct fr_kafka_group *g, int timeout_ms)
{
    (void)g, (void)timeout_ms;
    return FR_EINVAL;
}

void fr_kafka_group_close(struct fr_kafka_group *g)
{
    (void)g;
}
