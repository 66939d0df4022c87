/*
 * log_cmd.c — `freshet log list` and `freshet log dump` (formats in
 * log_cmd.h). Reads the log through the public interface only (fr_log_list,
 * fr_log_reader_*), so it works beside a running writer. One thread; each
 * record is formatted into a capped buffer and written with one fwrite.
 */
#include "log/log_cmd.h"

#include "log/log.h"
#include "log/log_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Worst case of one record: every payload byte escaped to \u00XX. */
#define OUT_CAP ((size_t)FR_LOG_MAX_FRAME * 6 + 65536)

static const char log_usage[] =
    "usage: freshet log list [--json]\n"
    "       freshet log dump --topic T [--partition P] [--from OFFSET] [--count N] [--follow]\n"
    "\n"
    "Inspect the embedded log under <data>/log.\n"
    "  list   one line per topic/partition: offsets, segments, bytes, append times\n"
    "  dump   records as NDJSON, one per line\n"
    "Run `freshet log list --help` or `freshet log dump --help` for details.\n";

static const char list_usage[] =
    "usage: freshet log list [--json]\n"
    "\n"
    "One line per topic/partition: earliest retained offset, durable end (the\n"
    "offset after the last acknowledged record), segment files, their bytes,\n"
    "and the append times of the oldest and newest records.\n"
    "  --json   a JSON array of objects instead of the table\n";

static const char dump_usage[] =
    "usage: freshet log dump --topic T [--partition P] [--from OFFSET] [--count N] [--follow]\n"
    "\n"
    "Print acknowledged records as NDJSON, one object per line:\n"
    "  {\"topic\",\"partition\",\"offset\",\"timestamp\",\"append_time\",\"key\",\"headers\","
    "\"payload\"}\n"
    "Bytes that are not UTF-8 are written as {\"base64\":\"...\"}; a payload that is a\n"
    "JSON object is embedded as is.\n"
    "  --topic T        topic to read (required)\n"
    "  --partition P    partition (default 0)\n"
    "  --from OFFSET    first offset, or `earliest` (default) or `end`\n"
    "  --count N        stop after N records\n"
    "  --follow         keep waiting for new records instead of stopping at the end\n";

/* ---- JSON output of bytes -------------------------------------------------------- */

static int put_base64(struct fr_buf *out, const uint8_t *s, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rc = fr_buf_puts(out, "{\"base64\":\"");
    if (rc == FR_OK) {
        rc = fr_buf_reserve(out, (len + 2) / 3 * 4 + 2);
    }
    if (rc != FR_OK) {
        return rc;
    }
    uint8_t *o = out->data + out->len;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *o++ = (uint8_t)tab[v >> 18];
        *o++ = (uint8_t)tab[(v >> 12) & 63];
        *o++ = (uint8_t)tab[(v >> 6) & 63];
        *o++ = (uint8_t)tab[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *o++ = (uint8_t)tab[v >> 18];
        *o++ = (uint8_t)tab[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        *o++ = (uint8_t)tab[v >> 18];
        *o++ = (uint8_t)tab[(v >> 12) & 63];
        *o++ = (uint8_t)tab[(v >> 6) & 63];
        *o++ = '=';
    }
    *o++ = '"';
    *o++ = '}';
    out->len = (size_t)(o - out->data);
    return FR_OK;
}

/* Is [p, end) one JSON object, other than the reserved {"base64": ...}? */
static int is_plain_object(const char *p, const char *end)
{
    struct fr_json_val v, key, val;
    p = fr_json_ws(p, end);
    const char *q = fr_json_value(p, end, &v);
    if (!q || v.type != FR_JSON_OBJECT || fr_json_ws(q, end) != end) {
        return 0;
    }
    /* Single member named "base64"? Then it would read as binary. */
    const char *k = fr_json_ws(v.start + 1, v.end);
    const char *after = k < v.end && *k == '"' ? fr_json_value(k, v.end, &key) : NULL;
    if (!after || !fr_json_str_eq(&key, "base64")) {
        return 1;
    }
    after = fr_json_ws(after, v.end);
    if (after >= v.end || *after != ':') {
        return 1;
    }
    after = fr_json_value(fr_json_ws(after + 1, v.end), v.end, &val);
    return !(after && *fr_json_ws(after, v.end) == '}');
}

/* A bytes value: JSON string if UTF-8, else {"base64":...}; with
 * raw_object, a JSON object payload is embedded as is. */
static int put_bytes(struct fr_buf *out, const void *data, size_t len, int raw_object)
{
    const char *s = data;
    if (!fr_log_utf8_valid(data, len)) {
        return put_base64(out, data, len);
    }
    if (raw_object && len && is_plain_object(s, s + len)) {
        size_t start = out->len;
        int rc = fr_buf_append(out, data, len);
        for (size_t i = start; rc == FR_OK && i < out->len; i++) {
            if (out->data[i] == '\n' || out->data[i] == '\r') {
                out->data[i] = ' '; /* whitespace outside strings: raw CR/LF cannot be in one */
            }
        }
        return rc;
    }
    return fr_buf_json_str(out, s, len);
}

static int format_record(struct fr_buf *out, const char *topic, int32_t partition,
                         const struct fr_log_rec *rec)
{
    int rc = fr_buf_puts(out, "{\"topic\":");
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, topic, strlen(topic));
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out,
                           ",\"partition\":%d,\"offset\":%" PRId64 ",\"timestamp\":%" PRId64
                           ",\"append_time\":%" PRId64 ",\"key\":",
                           (int)partition, rec->offset, rec->timestamp, rec->append_time);
    }
    if (rc == FR_OK) {
        rc = rec->key_len ? put_bytes(out, rec->key, rec->key_len, 0) : fr_buf_puts(out, "null");
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"headers\":{");
    }
    for (size_t i = 0; rc == FR_OK && i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        if (i) {
            rc = fr_buf_putc(out, ',');
        }
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, h->name, h->name_len); /* names are UTF-8 (append checks) */
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ':');
        }
        if (rc == FR_OK) {
            rc = put_bytes(out, h->value, h->value_len, 0);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "},\"payload\":");
    }
    if (rc == FR_OK) {
        rc = put_bytes(out, rec->payload, rec->payload_len, 1);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "}\n");
    }
    return rc;
}

/* ---- list ------------------------------------------------------------------------ */

static void fmt_time(char out[32], int64_t ms)
{
    if (ms < 0) {
        snprintf(out, 32, "-");
    } else {
        fr_time_format_ms(ms * 1000, out);
    }
}

/* A backend other than the embedded log lists the partitions of its
 * `recentchange` topic through fr_log_stat_with. */
static int list_backend(const char *data_dir, const struct fr_log_opts *opts,
                        struct fr_log_info **out, size_t *count)
{
    enum { MAX_PARTS = 1024 };
    struct fr_log_info *infos = calloc(MAX_PARTS, sizeof *infos);
    if (!infos) {
        return FR_ENOMEM;
    }
    size_t n = 0;
    int rc = FR_OK;
    while (n < MAX_PARTS) {
        rc = fr_log_stat_with(data_dir, "recentchange", (int32_t)n, opts, &infos[n]);
        if (rc != FR_OK) {
            break;
        }
        n++;
    }
    if (rc == FR_ENOTFOUND) {
        rc = FR_OK;
    }
    if (rc < 0) {
        free(infos);
        return rc;
    }
    *out = infos;
    *count = n;
    return FR_OK;
}

static int cmd_list(const char *data_dir, const struct fr_log_opts *opts, int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(list_usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "freshet log list: unknown argument '%s'\n%s", argv[i], list_usage);
            return 2;
        }
    }
    struct fr_log_info *infos = NULL;
    size_t n = 0;
    struct fr_buf out;
    fr_buf_init(&out, 64u << 20);
    int status = 1;
    int rc = opts && opts->backend ? list_backend(data_dir, opts, &infos, &n)
                                   : fr_log_list(data_dir, &infos, &n);
    if (rc != FR_OK) {
        if (opts && opts->backend) {
            fprintf(stderr, "freshet log list: %s log: %s\n", opts->backend->name,
                    fr_strerror(rc));
        } else {
            fprintf(stderr, "freshet log list: %s/log: %s\n", data_dir, fr_strerror(rc));
        }
        goto cleanup;
    }
    if (!json) {
        rc = fr_buf_printf(&out, "%-24s %9s %12s %12s %8s %14s  %-24s  %s\n", "TOPIC", "PARTITION",
                           "EARLIEST", "END", "SEGMENTS", "BYTES", "OLDEST", "NEWEST");
    } else {
        rc = fr_buf_putc(&out, '[');
    }
    for (size_t i = 0; rc == FR_OK && i < n; i++) {
        const struct fr_log_info *f = &infos[i];
        char oldest[32], newest[32];
        fmt_time(oldest, f->oldest_append_ms);
        fmt_time(newest, f->newest_append_ms);
        if (!json) {
            rc = fr_buf_printf(&out,
                               "%-24s %9d %12" PRId64 " %12" PRId64 " %8" PRId64 " %14" PRId64
                               "  %-24s  %s\n",
                               f->topic, (int)f->partition, f->earliest_offset, f->end_offset,
                               f->segments, f->bytes, oldest, newest);
            continue;
        }
        rc = fr_buf_puts(&out, i ? ",{\"topic\":" : "{\"topic\":");
        if (rc == FR_OK) {
            rc = fr_buf_json_str(&out, f->topic, strlen(f->topic));
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(&out,
                               ",\"partition\":%d,\"earliest_offset\":%" PRId64
                               ",\"end_offset\":%" PRId64 ",\"segments\":%" PRId64
                               ",\"bytes\":%" PRId64 ",\"oldest_append_ms\":%" PRId64
                               ",\"newest_append_ms\":%" PRId64 "}",
                               (int)f->partition, f->earliest_offset, f->end_offset, f->segments,
                               f->bytes, f->oldest_append_ms, f->newest_append_ms);
        }
    }
    if (rc == FR_OK && json) {
        rc = fr_buf_puts(&out, "]\n");
    }
    if (rc != FR_OK) {
        fprintf(stderr, "freshet log list: %s\n", fr_strerror(rc));
        goto cleanup;
    }
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "freshet log list: writing stdout: %s\n", strerror(errno));
        goto cleanup;
    }
    status = 0;

cleanup:
    free(infos);
    fr_buf_free(&out);
    return status;
}

/* ---- dump ------------------------------------------------------------------------ */

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0) {
        return FR_EINVAL;
    }
    *out = v;
    return FR_OK;
}

static int cmd_dump(const char *data_dir, const struct fr_log_opts *opts, int argc, char **argv)
{
    const char *topic = NULL;
    int64_t partition = 0, from = FR_LOG_OFFSET_EARLIEST, count = -1;
    int follow = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(dump_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--follow") == 0 || strcmp(a, "-f") == 0) {
            follow = 1;
            continue;
        }
        static const char *const names[] = {"--topic", "--partition", "--from", "--count"};
        int which = -1;
        for (int k = 0; k < 4; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(a, names[k], len) == 0 && (a[len] == 0 || a[len] == '=')) {
                which = k;
                val = a[len] == '=' ? a + len + 1 : (i + 1 < argc ? argv[++i] : NULL);
            }
        }
        int bad = which < 0 || !val;
        if (!bad && which == 0) {
            topic = val;
        } else if (!bad && which == 1) {
            bad = parse_i64(val, &partition) != FR_OK || partition > INT32_MAX;
        } else if (!bad && which == 2) {
            if (strcmp(val, "earliest") == 0) {
                from = FR_LOG_OFFSET_EARLIEST;
            } else if (strcmp(val, "end") == 0) {
                from = FR_LOG_OFFSET_END;
            } else {
                bad = parse_i64(val, &from) != FR_OK;
            }
        } else if (!bad && which == 3) {
            bad = parse_i64(val, &count) != FR_OK;
        }
        if (bad) {
            fprintf(stderr, "freshet log dump: bad argument '%s'\n%s", a, dump_usage);
            return 2;
        }
    }
    if (!topic) {
        fprintf(stderr, "freshet log dump: --topic is required\n%s", dump_usage);
        return 2;
    }

    struct fr_log_reader *reader = NULL;
    struct fr_buf out;
    fr_buf_init(&out, OUT_CAP);
    int status = 1;
    int rc = fr_log_reader_open(data_dir, topic, (int32_t)partition, from, opts, &reader);
    if (rc != FR_OK) {
        fprintf(stderr, "freshet log dump: %s partition %d: %s\n", topic, (int)partition,
                fr_strerror(rc));
        goto cleanup;
    }
    int64_t stop = fr_log_reader_end(reader); /* without --follow: the end when we started */
    int64_t done = 0;
    while (count < 0 || done < count) {
        struct fr_log_rec rec;
        rc = fr_log_reader_next(reader, &rec, follow ? 1000 : 0);
        if (rc == 0 && follow) {
            continue;
        }
        if (rc < 0) {
            fprintf(stderr, "freshet log dump: %s partition %d: %s\n", topic, (int)partition,
                    fr_strerror(rc));
            goto cleanup;
        }
        if (rc == 0 || (!follow && rec.offset >= stop)) {
            break;
        }
        done++;
        fr_buf_reset(&out);
        rc = format_record(&out, topic, (int32_t)partition, &rec);
        if (rc != FR_OK) {
            fprintf(stderr, "freshet log dump: offset %" PRId64 ": %s\n", rec.offset,
                    fr_strerror(rc));
            goto cleanup;
        }
        if (fwrite(out.data, 1, out.len, stdout) != out.len || (follow && fflush(stdout) != 0)) {
            fprintf(stderr, "freshet log dump: writing stdout: %s\n", strerror(errno));
            goto cleanup;
        }
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "freshet log dump: writing stdout: %s\n", strerror(errno));
        goto cleanup;
    }
    status = 0;

cleanup:
    fr_log_reader_close(reader);
    fr_buf_free(&out);
    return status;
}

int fr_cmd_log(const char *data_dir, int argc, char **argv)
{
    return fr_cmd_log_with(data_dir, NULL, argc, argv);
}

int fr_cmd_log_with(const char *data_dir, const struct fr_log_opts *opts, int argc, char **argv)
{
    if (argc < 2) {
        fputs(log_usage, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        fputs(log_usage, stdout);
        return 0;
    }
    if (strcmp(sub, "list") == 0) {
        return cmd_list(data_dir, opts, argc - 1, argv + 1);
    }
    if (strcmp(sub, "dump") == 0) {
        return cmd_dump(data_dir, opts, argc - 1, argv + 1);
    }
    fprintf(stderr, "freshet log: unknown subcommand '%s'\n%s", sub, log_usage);
    return 2;
}
