/*
 * proc.c — fr_proc: the operators chained record by record, in the order
 * docs/SEMANTICS.md fixes:
 *
 *   1. gate: reject (dlq) or decode the row
 *   2. late:  event time < watermark (the watermark BEFORE this record)
 *             -> late_arrivals, lateness = watermark - event time
 *   3. dedup: otherwise the meta.id is looked up; a live key makes the row a
 *             duplicate, a new key makes it silver and it is counted in the
 *             minute window and its top-pages pane
 *   4. watermark: the record's event time is folded into its partition
 *             (late and duplicate rows too: they cannot move it past
 *             themselves, but a partition's first record makes it active)
 *   5. settle: if the watermark advanced, dedup keys with event time <
 *             watermark are evicted and every window whose end <= watermark
 *             is emitted to the sink
 *
 * Every step depends only on the state and the record, so the rows are the
 * same wherever the caller cuts epochs and whether or not the state went
 * through fr_proc_save / fr_proc_load in between (tests/unit/
 * test_process_model.c checks this against a reimplementation).
 *
 * Saved state (envelope "FRPS", version 1; body, little-endian):
 *
 *   size  field
 *   8 x 5 records, valid, late, duplicates, silver
 *   4     r reasons with a non-zero count, in table order
 *   r x   { 4+n reason name, 8 count }
 *   8+n   watermark state ("FRWM", watermark.c)
 *   8+n   dedup state ("FRDD", dedup.c)
 *   8+n   minute windows ("FRWN", window.c)
 *   8+n   top pages ("FRTK", topk.c)
 *
 * fr_proc_save appends these bytes to a buffer; fr_proc_save_stream sends
 * the same bytes to a writer through a bounded stage (state.c), so the
 * checkpoint costs no memory the size of the state (docs/adr/0023).
 *
 * One thread at a time.
 */
#include "process/process_int.h"

#include "core/err.h"

#include <stdlib.h>

#define PROC_MAGIC "FRPS"
#define PROC_VERSION 1

struct fr_proc {
    struct fr_proc_opts opts;
    struct fr_gate *gate;
    struct fr_proc_wm *wm;
    struct fr_dedup *dedup;
    struct fr_win *win;
    struct fr_top *top;
    struct fr_row row; /* the last valid row, handed out in results */
    uint64_t records, valid, late, duplicates, silver;
    uint64_t rejected[FR_GATE_REASON_COUNT];
};

void fr_proc_opts_default(struct fr_proc_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->gate.max_event_bytes = FR_GATE_DEFAULT_MAX_EVENT_BYTES;
    opts->gate.max_future_ms = FR_GATE_DEFAULT_MAX_FUTURE_MS;
    opts->lateness_ms = FR_PROC_DEFAULT_LATENESS_MS;
    opts->max_partitions = FR_PROC_DEFAULT_MAX_PARTITIONS;
    opts->dedup.max_keys = FR_DEDUP_DEFAULT_MAX_KEYS;
    opts->win.max_groups = FR_WIN_DEFAULT_MAX_GROUPS;
    opts->win.max_users = FR_WIN_DEFAULT_MAX_USERS;
    opts->win.max_text_bytes = FR_WIN_DEFAULT_MAX_TEXT_BYTES;
    opts->top.max_entries = FR_TOP_DEFAULT_MAX_ENTRIES;
    opts->top.max_text_bytes = FR_TOP_DEFAULT_MAX_TEXT_BYTES;
}

int fr_proc_create(const struct fr_proc_opts *opts, struct fr_proc **out)
{
    *out = NULL;
    if (!opts) {
        return FR_EINVAL;
    }
    struct fr_proc *proc = calloc(1, sizeof *proc);
    if (!proc) {
        return FR_ENOMEM;
    }
    proc->opts = *opts;
    int rc = fr_gate_create(&opts->gate, &proc->gate);
    if (rc == FR_OK) {
        rc = fr_proc_wm_create(opts->lateness_ms, opts->max_partitions, &proc->wm);
    }
    if (rc == FR_OK) {
        rc = fr_dedup_create(&opts->dedup, &proc->dedup);
    }
    if (rc == FR_OK) {
        rc = fr_win_create(&opts->win, &proc->win);
    }
    if (rc == FR_OK) {
        rc = fr_win_top_create(&opts->top, &proc->top);
    }
    if (rc < 0) {
        fr_proc_destroy(proc);
        return rc;
    }
    *out = proc;
    return FR_OK;
}

void fr_proc_destroy(struct fr_proc *proc)
{
    if (!proc) {
        return;
    }
    fr_gate_destroy(proc->gate);
    fr_proc_wm_destroy(proc->wm);
    fr_dedup_destroy(proc->dedup);
    fr_win_destroy(proc->win);
    fr_win_top_destroy(proc->top);
    free(proc);
}

/* Evict and emit whatever a watermark advance from before settles. */
static int proc_settle(struct fr_proc *proc, int64_t before, const struct fr_proc_sink *sink,
                       void *arg)
{
    int64_t wm = fr_proc_wm_get(proc->wm);
    if (wm <= before) {
        return FR_OK;
    }
    fr_dedup_expire(proc->dedup, wm);
    int rc = fr_win_advance(proc->win, wm, sink ? sink->minute : NULL, arg);
    if (rc != 0) {
        return rc;
    }
    return fr_win_top_advance(proc->top, wm, sink ? sink->top : NULL, arg);
}

int fr_proc_record(struct fr_proc *proc, const struct fr_proc_pos *pos, const char *json,
                   size_t len, const struct fr_proc_sink *sink, void *arg,
                   struct fr_proc_result *res)
{
    if (pos->partition < 0 || (uint32_t)pos->partition >= proc->opts.max_partitions) {
        return FR_EINVAL;
    }
    res->reason = fr_gate_decode(proc->gate, pos, json, len, &proc->row, res->detail);
    return fr_proc_apply(proc, pos, res->reason, &proc->row, sink, arg, res);
}

int fr_proc_apply(struct fr_proc *proc, const struct fr_proc_pos *pos,
                  enum fr_gate_reason reason, const struct fr_row *row,
                  const struct fr_proc_sink *sink, void *arg, struct fr_proc_result *res)
{
    if (pos->partition < 0 || (uint32_t)pos->partition >= proc->opts.max_partitions ||
        (unsigned)reason >= FR_GATE_REASON_COUNT) {
        return FR_EINVAL;
    }
    proc->records++;
    int64_t before = fr_proc_wm_get(proc->wm);
    res->watermark_us = before;
    res->lateness_us = 0;
    res->row = NULL;
    res->reason = reason;
    if (reason != FR_GATE_OK) {
        proc->rejected[reason]++;
        res->outcome = FR_PROC_REJECTED;
        return FR_OK;
    }
    proc->valid++;
    res->row = row;
    int rc;
    if (before != FR_PROC_WM_NONE && row->event_us < before) {
        res->outcome = FR_PROC_LATE;
        res->lateness_us = before - row->event_us;
        proc->late++;
    } else {
        rc = fr_dedup_insert(proc->dedup, row->key, row->event_us);
        if (rc < 0) {
            return rc;
        }
        if (rc == 0) {
            res->outcome = FR_PROC_DUPLICATE;
            proc->duplicates++;
        } else {
            res->outcome = FR_PROC_SILVER;
            proc->silver++;
            if ((rc = fr_win_add(proc->win, row)) < 0 ||
                (rc = fr_win_top_add(proc->top, row)) < 0) {
                return rc;
            }
        }
    }
    rc = fr_proc_wm_observe(proc->wm, pos->partition, row->event_us);
    if (rc < 0) {
        return rc;
    }
    return proc_settle(proc, before, sink, arg);
}

void fr_proc_prefetch(const struct fr_proc *proc, const struct fr_row *row)
{
    fr_dedup_prefetch(proc->dedup, row->key);
}

int fr_proc_set_idle(struct fr_proc *proc, int32_t partition, int idle,
                     const struct fr_proc_sink *sink, void *arg)
{
    int64_t before = fr_proc_wm_get(proc->wm);
    int rc = fr_proc_wm_set_idle(proc->wm, partition, idle);
    if (rc < 0) {
        return rc;
    }
    return proc_settle(proc, before, sink, arg);
}

int fr_proc_raise(struct fr_proc *proc, int64_t watermark_us, const struct fr_proc_sink *sink,
                  void *arg)
{
    int64_t before = fr_proc_wm_get(proc->wm);
    int rc = fr_proc_wm_raise(proc->wm, watermark_us);
    if (rc < 0) {
        return rc;
    }
    return proc_settle(proc, before, sink, arg);
}

const struct fr_proc_opts *fr_proc_opts(const struct fr_proc *proc) { return &proc->opts; }

void fr_proc_stats(const struct fr_proc *proc, struct fr_proc_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->records = proc->records;
    stats->valid = proc->valid;
    stats->late = proc->late;
    stats->duplicates = proc->duplicates;
    stats->silver = proc->silver;
    memcpy(stats->rejected, proc->rejected, sizeof stats->rejected);
    stats->watermark_us = fr_proc_wm_get(proc->wm);
    fr_dedup_stats(proc->dedup, &stats->dedup);
    fr_win_stats(proc->win, &stats->win);
    fr_win_top_stats(proc->top, &stats->top);
}

void fr_proc_view(struct fr_proc *proc, struct fr_proc_view *view)
{
    view->watermark_us = fr_proc_wm_get(proc->wm);
    view->max_event_us = FR_PROC_WM_NONE;
    for (uint32_t p = 0; p < proc->opts.max_partitions; p++) {
        int64_t m = fr_proc_wm_partition_max(proc->wm, (int32_t)p);
        if (m > view->max_event_us) {
            view->max_event_us = m;
        }
    }
    view->truncated = 0;
    view->text_len = 0;
    fr_win_view(proc->win, view);
    fr_win_top_view(proc->top, view);
}

/* A nested state: u64 length, then the operator's own envelope. In BUF
 * mode the length is patched once the envelope is written; streaming, it
 * comes from the counting pass's tape. */
static void proc_enc_nested(struct fr_proc_enc *enc, const void *op,
                            int (*save)(const void *op, struct fr_proc_out *out))
{
    if (enc->err != FR_OK) {
        return;
    }
    fr_proc_enc_u64(enc, fr_proc_enc_next_len(enc));
    if (enc->err != FR_OK) {
        return;
    }
    if (!enc->buf) {
        enc->err = save(op, enc->out);
        return;
    }
    size_t at = enc->buf->len;
    enc->err = save(op, enc->out);
    if (enc->err == FR_OK) {
        uint64_t n = enc->buf->len - at;
        for (int i = 0; i < 8; i++) {
            enc->buf->data[at - 8 + i] = (uint8_t)(n >> (8 * i));
        }
    }
}

static int proc_save_wm(const void *op, struct fr_proc_out *out)
{
    return fr_proc_wm_save_out(op, out);
}
static int proc_save_dedup(const void *op, struct fr_proc_out *out)
{
    return fr_dedup_save_out(op, out);
}
static int proc_save_win(const void *op, struct fr_proc_out *out)
{
    return fr_win_save_out(op, out);
}
static int proc_save_top(const void *op, struct fr_proc_out *out)
{
    return fr_win_top_save_out(op, out);
}

static int proc_save_out(const struct fr_proc *proc, struct fr_proc_out *out)
{
    struct fr_proc_enc enc;
    fr_proc_enc_begin_out(&enc, out, PROC_MAGIC, PROC_VERSION);
    fr_proc_enc_u64(&enc, proc->records);
    fr_proc_enc_u64(&enc, proc->valid);
    fr_proc_enc_u64(&enc, proc->late);
    fr_proc_enc_u64(&enc, proc->duplicates);
    fr_proc_enc_u64(&enc, proc->silver);
    uint32_t r = 0;
    for (int k = 1; k < FR_GATE_REASON_COUNT; k++) {
        r += proc->rejected[k] != 0;
    }
    fr_proc_enc_u32(&enc, r);
    for (int k = 1; k < FR_GATE_REASON_COUNT; k++) {
        if (proc->rejected[k]) {
            const char *name = fr_gate_reason_name((enum fr_gate_reason)k);
            fr_proc_enc_str(&enc, name, strlen(name));
            fr_proc_enc_u64(&enc, proc->rejected[k]);
        }
    }
    proc_enc_nested(&enc, proc->wm, proc_save_wm);
    proc_enc_nested(&enc, proc->dedup, proc_save_dedup);
    proc_enc_nested(&enc, proc->win, proc_save_win);
    proc_enc_nested(&enc, proc->top, proc_save_top);
    return fr_proc_enc_end(&enc);
}

int fr_proc_save(const struct fr_proc *proc, struct fr_buf *out)
{
    struct fr_proc_out o;
    fr_proc_out_buf(&o, out);
    return proc_save_out(proc, &o);
}

int fr_proc_save_stream(const struct fr_proc *proc, const struct fr_proc_writer *w)
{
    uint8_t stage[FR_PROC_STREAM_CHUNK];
    struct fr_proc_out out;
    fr_proc_out_count(&out);
    int rc = proc_save_out(proc, &out);
    if (rc < 0) {
        return rc;
    }
    uint64_t len = out.pos;
    fr_proc_out_stream(&out, w, stage, sizeof stage);
    rc = w->begin(w->arg, len);
    rc = rc ? rc : proc_save_out(proc, &out);
    rc = rc ? rc : fr_proc_out_flush(&out);
    if (rc == FR_OK && (out.pos != len || out.next_tape != out.n_tape)) {
        rc = FR_ESTATE;
    }
    return rc;
}

/* The next nested state: its bytes in place. */
static const uint8_t *proc_dec_nested(struct fr_proc_dec *dec, size_t *len)
{
    uint64_t n = fr_proc_dec_u64(dec);
    if (dec->err == FR_OK && n > (uint64_t)(dec->end - dec->p)) {
        dec->err = FR_ECORRUPT;
    }
    *len = dec->err == FR_OK ? (size_t)n : 0;
    return fr_proc_dec_bytes(dec, *len);
}

int fr_proc_load(struct fr_proc *proc, const void *bytes, size_t len)
{
    struct fr_proc *fresh = NULL;
    struct fr_proc_dec dec;
    int rc = fr_proc_dec_begin(&dec, bytes, len, PROC_MAGIC, PROC_VERSION);
    if (rc < 0) {
        return rc;
    }
    rc = fr_proc_create(&proc->opts, &fresh);
    if (rc < 0) {
        return rc;
    }
    fresh->records = fr_proc_dec_u64(&dec);
    fresh->valid = fr_proc_dec_u64(&dec);
    fresh->late = fr_proc_dec_u64(&dec);
    fresh->duplicates = fr_proc_dec_u64(&dec);
    fresh->silver = fr_proc_dec_u64(&dec);
    uint32_t r = fr_proc_dec_count(&dec, FR_GATE_REASON_COUNT, 12);
    rc = FR_ECORRUPT;
    for (uint32_t k = 0; k < r; k++) {
        uint32_t nlen;
        const char *name = fr_proc_dec_str(&dec, 64, &nlen);
        uint64_t count = fr_proc_dec_u64(&dec);
        int reason = dec.err == FR_OK ? fr_gate_reason_from_name(name, nlen) : -1;
        if (reason < 0 || count == 0 || fresh->rejected[reason]) {
            goto cleanup;
        }
        fresh->rejected[reason] = count;
    }
    size_t n;
    const uint8_t *b = proc_dec_nested(&dec, &n);
    if (!b || (rc = fr_proc_wm_load(fresh->wm, b, n)) < 0) {
        rc = b ? rc : FR_ECORRUPT;
        goto cleanup;
    }
    b = proc_dec_nested(&dec, &n);
    if (!b || (rc = fr_dedup_load(fresh->dedup, b, n)) < 0) {
        rc = b ? rc : FR_ECORRUPT;
        goto cleanup;
    }
    b = proc_dec_nested(&dec, &n);
    if (!b || (rc = fr_win_load(fresh->win, b, n)) < 0) {
        rc = b ? rc : FR_ECORRUPT;
        goto cleanup;
    }
    b = proc_dec_nested(&dec, &n);
    if (!b || (rc = fr_win_top_load(fresh->top, b, n)) < 0) {
        rc = b ? rc : FR_ECORRUPT;
        goto cleanup;
    }
    rc = fr_proc_dec_end(&dec);
    if (rc < 0) {
        goto cleanup;
    }
    struct fr_proc tmp = *proc;
    *proc = *fresh;
    *fresh = tmp;
cleanup:
    fr_proc_destroy(fresh);
    return rc;
}
