/*
 * dlq_int.h — private to dlq.c (`freshet dlq list`, the replay's crash
 * recovery) and dlq_replay.c (`freshet dlq replay`): the positions
 * dlq_replays holds, the replay's intent file, and shared limits.
 */
#ifndef FR_PIPELINE_DLQ_INT_H
#define FR_PIPELINE_DLQ_INT_H

#include "pipeline/maint.h"

#include <stddef.h>
#include <stdint.h>

#define STATE_CAP ((size_t)1 << 30)
#define RAW_CAP ((size_t)128 << 20)
#define REASONS_MAX 64
#define DLQ_MEMORY ((size_t)64 << 20)

/* A log position as one sortable key (partitions < 256, offsets < 2^56). */
uint64_t dlq_pos_key(int32_t partition, int64_t offset);

/* The positions dlq_replays holds, sorted; optional counts by reason. */
struct done_set {
    uint64_t *keys;
    size_t n, cap;
    char reasons[REASONS_MAX][40];
    uint64_t counts[REASONS_MAX];
    uint32_t nreasons;
};
int dlq_done_has(const struct done_set *d, uint64_t key);
int dlq_done_load(const struct fr_lake *lake, struct done_set *d);
void dlq_done_free(struct done_set *d);
uint32_t dlq_crc_of(const struct fr_buf *state);

/* <dir>/dlq-replay/intent: the replay in flight, its phase, and the CRC
 * and length of the checkpoint state it replaces (dlq.c's header). */
struct intent {
    char id[32];
    char phase[16];
    uint32_t base_crc;
    uint64_t base_len;
};
void dlq_intent_path(const char *dir, const char *name, char *out, size_t outlen);
int dlq_intent_read(const char *dir, struct intent *in);
int dlq_intent_write(const char *dir, const struct intent *in);
void dlq_intent_clear(const char *dir);

/* 1 when no reason was asked for, or name is one of them. */
int dlq_reason_selected(char **reasons, int nreasons, const char *name, size_t len);

/* `freshet dlq replay` (argv[0] "replay"): the exit status. */
int fr_dlq_replay_cmd(struct fr_conf *conf, int argc, char **argv);

#endif
