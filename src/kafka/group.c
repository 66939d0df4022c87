/*
 * group.c — membership of a Kafka consumer group, for the scale-out mode
 * (`freshet process --group`, docs/SCALEOUT.md): which partitions of
 * freshet's topic this instance owns. Nothing is consumed through it: the
 * assigned partitions are paused at once, and the shards read them with
 * their own assign-at-offset readers (consumer.c), from their checkpoints.
 * The group only decides ownership, and moves it on a rebalance.
 *
 * A rebalance (eager protocol, librdkafka's range assignor), all inside
 * fr_kafka_group_poll on the caller's thread:
 *
 *   OWNING ──revoke──► on_revoke(parts): the caller stops those shards and
 *     ▲                waits for them ──► unassign ──► (no partitions)
 *     │                                                     │
 *     └── on_assign(parts) ◄── assign + pause ◄──assign─────┘
 *
 * Because on_revoke returns only once the shards are stopped, a partition's
 * new owner never starts its shard while the old one still runs, as long as
 * the old member is alive. A member that stalls past the session timeout is
 * dropped by the coordinator without a revoke: its shards may still run
 * (a zombie); the catalog's epoch marker keeps them from committing an
 * epoch twice (ADR 0014, "Fencing").
 *
 * Threads: one thread owns a group; the callbacks run on it.
 */
#include "kafka/kafka_int.h"

#include "core/diag.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

struct fr_kafka_group {
    rd_kafka_t *rk;
    char topic[FR_LOG_MAX_TOPIC + 1];
    fr_kafka_group_fn on_assign, on_revoke;
    void *arg;
    int closing;
};

/* The partition ids of list that belong to the group's topic. */
static int group_ids(const struct fr_kafka_group *g, const rd_kafka_topic_partition_list_t *list,
                     int32_t *ids, int cap)
{
    int n = 0;
    for (int i = 0; list && i < list->cnt && n < cap; i++) {
        if (strcmp(list->elems[i].topic, g->topic) == 0) {
            ids[n++] = list->elems[i].partition;
        }
    }
    return n;
}

static void group_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct fr_kafka_group *g = opaque;
    int32_t ids[FR_KAFKA_GROUP_MAX];
    int n = group_ids(g, parts, ids, FR_KAFKA_GROUP_MAX);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_pause_partitions(rk, parts); /* ownership only, no fetching */
        } else {
            fr_error("kafka", "group: assign: %s", rd_kafka_err2str(e));
        }
        fr_info("kafka", "group: assigned %d partition(s) of %s", n, g->topic);
        if (g->on_assign) {
            g->on_assign(g->arg, ids, n);
        }
        return;
    }
    if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        fr_warn("kafka", "group: rebalance error: %s", rd_kafka_err2str(err));
    }
    if (rd_kafka_assignment_lost(rk)) {
        /* The coordinator dropped this member (silent past the session
         * timeout, e.g. paused): others may own these partitions already. */
        fr_warn("kafka",
                "group: assignment of %d partition(s) lost (out of the group past "
                "the session timeout): stopping their shards, then rejoining",
                n);
    }
    fr_info("kafka", "group: %d partition(s) of %s revoked", n, g->topic);
    if (g->on_revoke) {
        g->on_revoke(g->arg, ids, n);
    }
    rd_kafka_assign(rk, NULL);
}

int fr_kafka_group_join(struct fr_kafka *kafka, const char *group_id, int64_t session_timeout_ms,
                        fr_kafka_group_fn on_assign, fr_kafka_group_fn on_revoke, void *arg,
                        struct fr_kafka_group **out)
{
    *out = NULL;
    if (!kafka || !group_id || !*group_id) {
        return FR_EINVAL;
    }
    struct fr_kafka_group *g = calloc(1, sizeof *g);
    if (!g) {
        return FR_ENOMEM;
    }
    snprintf(g->topic, sizeof g->topic, "%s", fr_kafka_topic(kafka, "recentchange"));
    g->on_assign = on_assign;
    g->on_revoke = on_revoke;
    g->arg = arg;
    rd_kafka_conf_t *conf = NULL;
    int rc = fr_kafka_conf_new(kafka, &conf);
    rc = rc ? rc : fr_kafka_conf_set(conf, "group.id", group_id);
    rc = rc ? rc : fr_kafka_conf_set(conf, "enable.auto.commit", "false");
    rc = rc ? rc : fr_kafka_conf_set(conf, "enable.auto.offset.store", "false");
    rc = rc ? rc : fr_kafka_conf_set(conf, "partition.assignment.strategy", "range");
    rc = rc ? rc : fr_kafka_conf_set_i64(conf, "session.timeout.ms", session_timeout_ms);
    rc = rc ? rc
            : fr_kafka_conf_set_i64(conf, "heartbeat.interval.ms",
                                    session_timeout_ms / 3 > 100 ? session_timeout_ms / 3 : 100);
    if (rc < 0) {
        rd_kafka_conf_destroy(conf);
        free(g);
        return rc;
    }
    rd_kafka_conf_set_rebalance_cb(conf, group_rebalance);
    rd_kafka_conf_set_opaque(conf, g);
    char errstr[512];
    g->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!g->rk) {
        fr_error("kafka", "group: cannot create the consumer: %s", errstr);
        rd_kafka_conf_destroy(conf);
        free(g);
        return FR_EKAFKA;
    }
    rd_kafka_poll_set_consumer(g->rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, g->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(g->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fr_error("kafka", "group: subscribe to %s: %s", g->topic, rd_kafka_err2str(e));
        rd_kafka_destroy(g->rk);
        free(g);
        return fr_kafka_err(e);
    }
    fr_info("kafka", "group %s: joining for topic %s", group_id, g->topic);
    *out = g;
    return FR_OK;
}

int fr_kafka_group_poll(struct fr_kafka_group *g, int timeout_ms)
{
    rd_kafka_message_t *m = rd_kafka_consumer_poll(g->rk, timeout_ms);
    if (!m) {
        return FR_OK;
    }
    int rc = FR_OK;
    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        rd_kafka_resp_err_t fatal = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            char why[256];
            fatal = rd_kafka_fatal_error(g->rk, why, sizeof why);
            fr_error("kafka", "group: fatal: %s", why);
            rc = FR_EKAFKA_FATAL;
        } else {
            fr_warn("kafka", "group: %s", rd_kafka_message_errstr(m));
        }
        (void)fatal;
    }
    rd_kafka_message_destroy(m); /* paused partitions deliver nothing else */
    return rc;
}

void fr_kafka_group_close(struct fr_kafka_group *g)
{
    if (!g) {
        return;
    }
    g->closing = 1;
    rd_kafka_consumer_close(g->rk); /* revokes what it holds: on_revoke runs */
    rd_kafka_destroy(g->rk);
    free(g);
}
