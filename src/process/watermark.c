/*
 * watermark.c — the event-time watermark shared by dedup and every window
 * (DESIGN.md: one policy). Per partition it keeps the largest event time
 * seen; the watermark is
 *
 *     wm = max(wm, min over active partitions of max_p - lateness)
 *
 * so it advances record by record, never moves back, and a partition that
 * lags holds it (with one partition: max event time - lateness). A
 * partition becomes active with its first valid record; the caller may mark
 * it idle (the hook for idle-partition timeouts), which takes it out of the
 * minimum until its next record. Records behind the watermark still raise
 * their partition's maximum (they cannot raise the watermark: they are
 * behind it), so a partition that only ever delivered late data holds the
 * watermark where it is.
 *
 * Invariants: wm is FR_PROC_WM_NONE until the first observation, then
 * non-decreasing; min_part is the active partition with the smallest
 * maximum (ties: the lowest id) or -1. One thread at a time.
 *
 * Saved state (envelope "FRWM", version 1; body, little-endian):
 *
 *   size  field
 *   8     lateness_us (must equal the running instance's)
 *   8     wm (FR_PROC_WM_NONE as INT64_MIN)
 *   4     n: partitions that have data, ascending id
 *   n x   { 4 partition id, 8 max_us, 1 idle (0/1) }
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define WM_MAGIC "FRWM"
#define WM_VERSION 1
#define WM_PART_BYTES (4 + 8 + 1)

struct fr_proc_wm {
    int64_t lateness_us;
    uint32_t max_partitions;
    int64_t wm;
    int64_t *max_us; /* per partition; FR_PROC_WM_NONE = no data */
    uint8_t *idle;   /* per partition */
    int32_t min_part;
    uint32_t seen_end; /* 1 + the highest partition with data (0: none) */
};

int fr_proc_wm_create(int64_t lateness_ms, uint32_t max_partitions, struct fr_proc_wm **out)
{
    *out = NULL;
    if (lateness_ms < 0 || lateness_ms > INT64_C(7) * 86400000 || max_partitions < 1 ||
        max_partitions > 65536) {
        return FR_EINVAL;
    }
    struct fr_proc_wm *wm = calloc(1, sizeof *wm);
    if (!wm) {
        return FR_ENOMEM;
    }
    wm->lateness_us = lateness_ms * 1000;
    wm->max_partitions = max_partitions;
    wm->wm = FR_PROC_WM_NONE;
    wm->min_part = -1;
    wm->max_us = malloc(max_partitions * sizeof *wm->max_us);
    wm->idle = calloc(max_partitions, 1);
    if (!wm->max_us || !wm->idle) {
        fr_proc_wm_destroy(wm);
        return FR_ENOMEM;
    }
    for (uint32_t i = 0; i < max_partitions; i++) {
        wm->max_us[i] = FR_PROC_WM_NONE;
    }
    *out = wm;
    return FR_OK;
}

void fr_proc_wm_destroy(struct fr_proc_wm *wm)
{
    if (!wm) {
        return;
    }
    free(wm->max_us);
    free(wm->idle);
    free(wm);
}

int64_t fr_proc_wm_get(const struct fr_proc_wm *wm)
{
    return wm->wm;
}

int64_t fr_proc_wm_partition_max(const struct fr_proc_wm *wm, int32_t partition)
{
    if (partition < 0 || (uint32_t)partition >= wm->max_partitions) {
        return FR_PROC_WM_NONE;
    }
    return wm->max_us[partition];
}

/* Recompute the minimum over active partitions and raise wm to it. */
static void wm_recompute(struct fr_proc_wm *wm)
{
    int32_t best = -1;
    for (uint32_t i = 0; i < wm->seen_end; i++) {
        if (wm->max_us[i] != FR_PROC_WM_NONE && !wm->idle[i] &&
            (best < 0 || wm->max_us[i] < wm->max_us[best])) {
            best = (int32_t)i;
        }
    }
    wm->min_part = best;
    if (best >= 0) {
        int64_t cand = wm->max_us[best] - wm->lateness_us;
        if (cand > wm->wm) {
            wm->wm = cand;
        }
    }
}

int fr_proc_wm_observe(struct fr_proc_wm *wm, int32_t partition, int64_t event_us)
{
    if (partition < 0 || (uint32_t)partition >= wm->max_partitions || !FR_PROC_TIME_OK(event_us)) {
        return FR_EINVAL;
    }
    int64_t old = wm->max_us[partition];
    int was_active = old != FR_PROC_WM_NONE && !wm->idle[partition];
    if (was_active && event_us <= old) {
        return FR_OK;
    }
    if (event_us > old) {
        wm->max_us[partition] = event_us;
    }
    if ((uint32_t)partition >= wm->seen_end) {
        wm->seen_end = (uint32_t)partition + 1;
    }
    wm->idle[partition] = 0;
    if (!was_active || partition == wm->min_part) {
        wm_recompute(wm);
    }
    return FR_OK;
}

int fr_proc_wm_raise(struct fr_proc_wm *wm, int64_t watermark_us)
{
    if (watermark_us == FR_PROC_WM_NONE) {
        return FR_EINVAL;
    }
    if (wm->wm == FR_PROC_WM_NONE || watermark_us > wm->wm) {
        wm->wm = watermark_us;
    }
    return FR_OK;
}

int fr_proc_wm_set_idle(struct fr_proc_wm *wm, int32_t partition, int idle)
{
    if (partition < 0 || (uint32_t)partition >= wm->max_partitions) {
        return FR_EINVAL;
    }
    wm->idle[partition] = idle ? 1 : 0;
    wm_recompute(wm);
    return FR_OK;
}

int fr_proc_wm_save(const struct fr_proc_wm *wm, struct fr_buf *out)
{
    struct fr_proc_out o;
    fr_proc_out_buf(&o, out);
    return fr_proc_wm_save_out(wm, &o);
}

int fr_proc_wm_save_out(const struct fr_proc_wm *wm, struct fr_proc_out *out)
{
    struct fr_proc_enc enc;
    fr_proc_enc_begin_out(&enc, out, WM_MAGIC, WM_VERSION);
    fr_proc_enc_i64(&enc, wm->lateness_us);
    fr_proc_enc_i64(&enc, wm->wm);
    uint32_t n = 0;
    for (uint32_t i = 0; i < wm->max_partitions; i++) {
        n += wm->max_us[i] != FR_PROC_WM_NONE;
    }
    fr_proc_enc_u32(&enc, n);
    for (uint32_t i = 0; i < wm->max_partitions; i++) {
        if (wm->max_us[i] != FR_PROC_WM_NONE) {
            fr_proc_enc_u32(&enc, i);
            fr_proc_enc_i64(&enc, wm->max_us[i]);
            fr_proc_enc_u8(&enc, wm->idle[i]);
        }
    }
    return fr_proc_enc_end(&enc);
}

int fr_proc_wm_load(struct fr_proc_wm *wm, const void *bytes, size_t len)
{
    struct fr_proc_dec dec;
    int rc = fr_proc_dec_begin(&dec, bytes, len, WM_MAGIC, WM_VERSION);
    if (rc < 0) {
        return rc;
    }
    int64_t lateness = fr_proc_dec_i64(&dec);
    int64_t mark = fr_proc_dec_i64(&dec);
    uint32_t n = fr_proc_dec_count(&dec, UINT32_MAX, WM_PART_BYTES);
    if (dec.err == FR_OK && lateness != wm->lateness_us) {
        return FR_ECONFIG;
    }
    /* Validate everything before touching the state. */
    const uint8_t *parts = fr_proc_dec_bytes(&dec, (size_t)n * WM_PART_BYTES);
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        return rc;
    }
    struct fr_proc_dec it = {.p = parts, .end = parts + (size_t)n * WM_PART_BYTES, .err = FR_OK};
    int64_t prev = -1;
    int64_t min = INT64_MAX;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t id = fr_proc_dec_u32(&it);
        int64_t max = fr_proc_dec_i64(&it);
        uint8_t idle = fr_proc_dec_u8(&it);
        if ((int64_t)id <= prev || !FR_PROC_TIME_OK(max) || idle > 1) {
            return FR_ECORRUPT;
        }
        if (id >= wm->max_partitions) {
            return FR_ECONFIG;
        }
        if (!idle && max < min) {
            min = max;
        }
        prev = id;
    }
    /* The saved mark already includes every saved maximum. */
    if (mark != FR_PROC_WM_NONE && (mark < -2 * FR_PROC_TIME_LIMIT || mark > FR_PROC_TIME_LIMIT)) {
        return FR_ECORRUPT;
    }
    if (min != INT64_MAX && min - lateness > mark) {
        return FR_ECORRUPT;
    }
    for (uint32_t i = 0; i < wm->max_partitions; i++) {
        wm->max_us[i] = FR_PROC_WM_NONE;
        wm->idle[i] = 0;
    }
    it.p = parts;
    wm->seen_end = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t id = fr_proc_dec_u32(&it);
        wm->max_us[id] = fr_proc_dec_i64(&it);
        wm->idle[id] = fr_proc_dec_u8(&it);
        wm->seen_end = id + 1; /* ids ascend */
    }
    wm->wm = mark;
    wm_recompute(wm);
    return FR_OK;
}
