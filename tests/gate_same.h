/*
 * gate_same.h — one record through two gates, one with the indexed walk
 * (fr_gate_set_indexed on) and one byte by byte, and whether they agree on
 * the verdict, the detail and every field of the row; and through the
 * indexed gate once more with fr_gate_copy_decode_to, which must copy the
 * record whole and agree too. Shared by tests/unit/test_process_gate.c and
 * tests/fuzz/fuzz_gate.c.
 */
#ifndef FR_TEST_GATE_SAME_H
#define FR_TEST_GATE_SAME_H

#include "process/process.h"

#include <stdlib.h>
#include <string.h>

static inline int gate_same_str(struct fr_proc_str a, struct fr_proc_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

/* NULL when the rows are equal, else the first field that differs. */
static inline const char *gate_same_row(const struct fr_row *a, const struct fr_row *b)
{
    if (a->partition != b->partition || a->offset != b->offset || a->ingest_ms != b->ingest_ms) {
        return "position";
    }
    if (memcmp(a->key, b->key, sizeof a->key) != 0 || !gate_same_str(a->meta_id, b->meta_id)) {
        return "meta.id";
    }
    if (a->event_us != b->event_us) {
        return "event_us";
    }
    if (!gate_same_str(a->wiki, b->wiki) || a->type != b->type || a->has != b->has) {
        return "wiki, type or has";
    }
    if (a->rc_id != b->rc_id || a->ns != b->ns || a->bot != b->bot || a->minor != b->minor ||
        a->patrolled != b->patrolled || a->log_id != b->log_id) {
        return "scalar field";
    }
    if (a->length_old != b->length_old || a->length_new != b->length_new ||
        a->revision_old != b->revision_old || a->revision_new != b->revision_new) {
        return "length or revision";
    }
    if (!gate_same_str(a->title, b->title) || !gate_same_str(a->user, b->user) ||
        !gate_same_str(a->comment, b->comment) || !gate_same_str(a->server_name, b->server_name) ||
        !gate_same_str(a->log_type, b->log_type) || !gate_same_str(a->log_action, b->log_action)) {
        return "string field";
    }
    return NULL;
}

/* Decode json with both gates; NULL when they agree, else what differs.
 * *indexed tells whether the indexed gate took its indexed walk. */
static inline const char *gate_same(struct fr_gate *indexed_gate, struct fr_gate *scan_gate,
                                    const struct fr_proc_pos *pos, const char *json, size_t len,
                                    int *indexed)
{
    static struct fr_row ra, rb;
    static char da[FR_GATE_DETAIL_MAX], db[FR_GATE_DETAIL_MAX];
    uint64_t before = fr_gate_paths(indexed_gate).indexed;
    enum fr_gate_reason a = fr_gate_decode(indexed_gate, pos, json, len, &ra, da);
    *indexed = fr_gate_paths(indexed_gate).indexed != before;
    enum fr_gate_reason b = fr_gate_decode(scan_gate, pos, json, len, &rb, db);
    if (a != b) {
        return "verdict";
    }
    if (strcmp(da, db) != 0) {
        return "detail";
    }
    const char *diff = gate_same_row(&ra, &rb);
    if (diff) {
        return diff;
    }
    /* The copying decode: dst and arena as the decode-ahead thread lays
     * them out, after bytes that must stay as they are. */
    static struct fr_row rc;
    static char dc[FR_GATE_DETAIL_MAX];
    char *mem = malloc(2 * len + 2);
    if (!mem) {
        return "out of memory";
    }
    char *dst = mem + 1;
    mem[0] = 0x5A;
    dst[len] = 0x5A;
    enum fr_gate_reason c =
        fr_gate_copy_decode_to(indexed_gate, pos, json, dst, len, &rc, dc, dst + len + 1);
    if (c != a) {
        diff = "verdict (copying decode)";
    } else if (strcmp(da, dc) != 0) {
        diff = "detail (copying decode)";
    } else if ((len && memcmp(dst, json, len) != 0) || mem[0] != 0x5A || dst[len] != 0x5A) {
        diff = "the copy";
    } else if ((diff = gate_same_row(&ra, &rc)) != NULL) {
        diff = "row (copying decode)";
    }
    free(mem);
    return diff;
}

#endif
