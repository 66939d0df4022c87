/*
 * fuzz_gate.c — libFuzzer target for src/process (the gate first, fr_proc
 * behind it).
 *
 * Byte 0 picks the mode; the rest is the input.
 *
 *   even: one record through fr_gate_decode, from a private heap copy of
 *         exactly its length (so ASan sees any read past it), and:
 *           1. src/core/json.c agrees on the grammar: fr_json_validate
 *              fails exactly when the verdict is not_json (the size cap is
 *              above the fuzzer's max_len, so oversize cannot happen);
 *           2. decoding twice gives the same verdict, detail and row, and
 *              so does a gate that never takes the indexed walk
 *              (tests/gate_same.h);
 *           3. an accepted row's strings are valid UTF-8, outlive the input
 *              (the copy is freed before they are read), and equal what
 *              fr_json_member + fr_json_unescape find for the same members
 *              (when written without escapes in the name); its integers
 *              equal fr_json_int64's.
 *   odd:  the input split on '\n' into records for one fr_proc (partition
 *         from the record's first byte), then fr_proc_save, fr_proc_load into
 *         a fresh processor, and a re-save that must be byte-identical;
 *         both processors then take the same records again and must
 *         produce the same results and gold rows.
 *
 * Any difference aborts. Built with clang -fsanitize=fuzzer,address,
 * undefined by tests/fuzz/gate.cmake; the ctest test fuzz_gate runs it for
 * 10 s on tests/fuzz/corpus/gate.
 */
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "core/utf8.h"
#include "process/process.h"

#include "../gate_same.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX 8192

static void fz_fail(const char *what)
{
    fprintf(stderr, "fuzz_gate: %s\n", what);
    abort();
}

static void fz_str(const struct fr_json_val *obj, const char *key, int has, struct fr_proc_str got)
{
    struct fr_json_val v;
    static char tmp[FZ_MAX];
    if (fr_json_member(obj, key, &v) != 1 || v.type != FR_JSON_STRING) {
        return;
    }
    int n = fr_json_unescape(&v, tmp, sizeof tmp);
    if (!has || n < 0 || (uint32_t)n != got.len || memcmp(tmp, got.s, got.len) != 0) {
        fprintf(stderr, "member %s differs\n", key);
        fz_fail("string differs from json.c");
    }
}

static void fz_int(const struct fr_json_val *obj, const char *key, int has, int64_t got)
{
    struct fr_json_val v;
    int64_t want;
    if (fr_json_member(obj, key, &v) == 1 && v.type == FR_JSON_NUMBER) {
        if (fr_json_int64(&v, &want) != FR_OK || !has || want != got) {
            fprintf(stderr, "member %s differs\n", key);
            fz_fail("integer differs from json.c");
        }
    }
}

static void fz_gate(const uint8_t *in, size_t len)
{
    static struct fr_gate *gate, *scan_gate;
    if (!gate) {
        struct fr_gate_opts o = {FZ_MAX * 2, 600000};
        if (fr_gate_create(&o, &gate) != FR_OK || fr_gate_create(&o, &scan_gate) != FR_OK) {
            fz_fail("create");
        }
        fr_gate_set_indexed(scan_gate, 0);
    }
    char *copy = malloc(len ? len : 1);
    memcpy(copy, in, len);
    struct fr_proc_pos pos = {1, 2, INT64_C(1783699200000)};
    struct fr_row row, again;
    char detail[FR_GATE_DETAIL_MAX], detail2[FR_GATE_DETAIL_MAX];
    int indexed;
    const char *diff = gate_same(gate, scan_gate, &pos, copy, len, &indexed);
    if (diff) {
        fprintf(stderr, "walks differ: %s\n", diff);
        fz_fail("indexed and byte-by-byte walks differ");
    }
    enum fr_gate_reason r2 = fr_gate_decode(gate, &pos, copy, len, &again, detail2);
    enum fr_gate_reason r = fr_gate_decode(gate, &pos, copy, len, &row, detail);
    int valid = fr_json_validate(copy, copy + len) == FR_OK;
    if (valid != (r != FR_GATE_NOT_JSON)) {
        fprintf(stderr, "json.c %s, gate %s (%s)\n", valid ? "valid" : "invalid",
                fr_gate_reason_name(r), detail);
        fz_fail("grammar differs from json.c");
    }
    if (r != r2 || strcmp(detail, detail2) != 0 || row.has != again.has ||
        row.event_us != again.event_us) {
        fz_fail("not deterministic");
    }
    if (strlen(detail) >= FR_GATE_DETAIL_MAX || (r != FR_GATE_OK && !detail[0])) {
        fz_fail("detail");
    }
    if (r != FR_GATE_OK) {
        free(copy);
        return;
    }
    struct fr_json_val top, meta, sub;
    fr_json_value(copy, copy + len, &top);
    if (fr_json_member(&top, "meta", &meta) == 1) {
        fz_str(&meta, "id", 1, row.meta_id);
    }
    fz_str(&top, "wiki", 1, row.wiki);
    fz_str(&top, "title", row.has & FR_ROW_TITLE, row.title);
    fz_str(&top, "user", row.has & FR_ROW_USER, row.user);
    fz_str(&top, "comment", row.has & FR_ROW_COMMENT, row.comment);
    fz_str(&top, "server_name", row.has & FR_ROW_SERVER_NAME, row.server_name);
    fz_str(&top, "log_type", row.has & FR_ROW_LOG_TYPE, row.log_type);
    fz_str(&top, "log_action", row.has & FR_ROW_LOG_ACTION, row.log_action);
    fz_int(&top, "id", row.has & FR_ROW_RC_ID, row.rc_id);
    fz_int(&top, "namespace", row.has & FR_ROW_NAMESPACE, row.ns);
    fz_int(&top, "log_id", row.has & FR_ROW_LOG_ID, row.log_id);
    if (fr_json_member(&top, "length", &sub) == 1) {
        fz_int(&sub, "old", row.has & FR_ROW_LENGTH_OLD, row.length_old);
        fz_int(&sub, "new", row.has & FR_ROW_LENGTH_NEW, row.length_new);
    }
    if (fr_json_member(&top, "revision", &sub) == 1) {
        fz_int(&sub, "old", row.has & FR_ROW_REVISION_OLD, row.revision_old);
        fz_int(&sub, "new", row.has & FR_ROW_REVISION_NEW, row.revision_new);
    }
    free(copy);
    /* The row must not point into the (now freed) input. */
    const struct fr_proc_str strs[] = {row.meta_id, row.wiki,        row.title,    row.user,
                                       row.comment, row.server_name, row.log_type, row.log_action};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (strs[i].len && !fr_utf8_valid((const unsigned char *)strs[i].s, strs[i].len)) {
            fz_fail("row string is not UTF-8");
        }
    }
    uint8_t key[16];
    if (row.wiki.len < 1 || row.wiki.len > FR_PROC_WIKI_MAX || row.type < FR_TYPE_EDIT ||
        row.type > FR_TYPE_EXTERNAL || fr_gate_uuid(row.meta_id.s, row.meta_id.len, key) != 0 ||
        memcmp(key, row.key, 16) != 0 || row.event_us > (pos.ingest_ms + 600000) * 1000) {
        fz_fail("accepted row breaks an invariant");
    }
}

struct fz_out {
    struct fr_buf buf;
};

static int fz_minute(void *arg, const struct fr_win_row *row)
{
    struct fz_out *out = arg;
    return fr_buf_printf(&out->buf, "m%lld %.*s %llu %llu %llu\n", (long long)row->window_start_us,
                         (int)row->wiki.len, row->wiki.s, (unsigned long long)row->counts.events,
                         (unsigned long long)row->counts.distinct_users,
                         (unsigned long long)row->counts.bytes_added) < 0;
}

static int fz_top(void *arg, const struct fr_top_row *row)
{
    struct fz_out *out = arg;
    return fr_buf_printf(&out->buf, "t%lld %u %.*s %.*s %llu\n", (long long)row->window_start_us,
                         row->rank, (int)row->wiki.len, row->wiki.s, (int)row->title.len,
                         row->title.s, (unsigned long long)row->count) < 0;
}

static void fz_feed(struct fr_proc *proc, const uint8_t *in, size_t len, struct fz_out *out)
{
    static const struct fr_proc_sink sink = {fz_minute, fz_top};
    size_t at = 0;
    while (at <= len) {
        const uint8_t *nl = memchr(in + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - in - at) : len - at;
        struct fr_proc_pos pos = {n ? in[at] % 3 : 0, (int64_t)at, INT64_C(1783702800000)};
        struct fr_proc_result res;
        if (fr_proc_record(proc, &pos, (const char *)in + at, n, &sink, out, &res) != FR_OK) {
            fz_fail("fr_proc_record");
        }
        fr_buf_printf(&out->buf, "r%d %d %lld\n", (int)res.outcome, (int)res.reason,
                      (long long)res.lateness_us);
        at += n + 1;
    }
}

static void fz_proc(const uint8_t *in, size_t len)
{
    struct fr_proc_opts opts;
    fr_proc_opts_default(&opts);
    opts.gate.max_event_bytes = FZ_MAX;
    opts.max_partitions = 3;
    opts.dedup.max_keys = 64; /* small caps, so the fuzzer reaches them */
    opts.win.max_groups = 16;
    opts.win.max_users = 16;
    opts.win.max_text_bytes = 1024;
    opts.top.max_entries = 16;
    opts.top.max_text_bytes = 1024;
    struct fr_proc *a = NULL, *b = NULL;
    if (fr_proc_create(&opts, &a) != FR_OK || fr_proc_create(&opts, &b) != FR_OK) {
        fz_fail("create");
    }
    struct fz_out oa, ob;
    fr_buf_init(&oa.buf, 1 << 22);
    fr_buf_init(&ob.buf, 1 << 22);
    struct fr_buf s1, s2;
    fr_buf_init(&s1, 1 << 24);
    fr_buf_init(&s2, 1 << 24);
    fz_feed(a, in, len, &oa);
    if (fr_proc_save(a, &s1) != FR_OK || fr_proc_load(b, s1.data, s1.len) != FR_OK ||
        fr_proc_save(b, &s2) != FR_OK) {
        fz_fail("save/load");
    }
    if (s1.len != s2.len || memcmp(s1.data, s2.data, s1.len) != 0) {
        fz_fail("re-save differs");
    }
    fr_buf_reset(&oa.buf);
    fz_feed(a, in, len, &oa);
    fz_feed(b, in, len, &ob);
    if (oa.buf.len != ob.buf.len || memcmp(oa.buf.data, ob.buf.data, oa.buf.len) != 0) {
        fz_fail("output differs after save/load");
    }
    static struct fr_proc_view view;
    fr_proc_view(a, &view);
    fr_buf_free(&oa.buf);
    fr_buf_free(&ob.buf);
    fr_buf_free(&s1);
    fr_buf_free(&s2);
    fr_proc_destroy(a);
    fr_proc_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_MAX) {
        return 0;
    }
    if (data[0] & 1) {
        fz_proc(data + 1, size - 1);
    } else {
        fz_gate(data + 1, size - 1);
    }
    return 0;
}
