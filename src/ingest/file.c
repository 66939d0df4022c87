/*
 * file.c — `freshet ingest --file PATH...`: recorded NDJSON into the log.
 *
 * One thread. Each listed input (decomp.h: plain, .gz, .zst, "-" for
 * standard input) is split into lines (lines.c) and each line becomes one
 * record of topic `recentchange`, with the SSE path's rules: canaries are
 * dropped and counted, lines longer than ingest.max_event_bytes are refused
 * and counted, anything else (malformed JSON included) is stored for the
 * processor's quality gate. Empty (or blank) lines are skipped and counted.
 * A raw EventStreams capture (SSE frames) is read too: `data:` lines are
 * the events, the framing lines (event:, id:, retry:, comments) are skipped
 * and counted.
 * Records are keyed and partitioned like ingest.c's (wiki and title:
 * fr_ingest_partition, with the same log options, fr_ingest_log_opts).
 *
 * Position: every record carries the header `file_pos` (file.h): identity
 * of its file and the line's byte offset. Resume, at start (docs/adr/0047):
 *
 *   for each partition p: last durable record -> file_pos ->
 *       (index i of the listed file with that identity, offset)  = pos[p]
 *       no file_pos, or a file not listed                        = before all
 *       a listed file with the same name but another identity    = REFUSE
 *   read from min over p of pos[p]; a line at (i, off) whose partition p
 *   has pos[p] >= (i, off) is already durable there: skip it.
 *
 * Partitions are acknowledged independently (Kafka's delivery reports, the
 * embedded log's per-partition writes), and each partition's durable
 * records are a prefix of what was appended to it; lines are appended in
 * file order, so the rule above appends every line exactly once over any
 * sequence of kills. Inputs are checked again when they are opened for
 * reading: one that changed since the start is refused too.
 *
 * Durability: the log's group commit with its own policy
 * (ingest.file_fsync_bytes, ingest.file_fsync_interval_ms: coarser than a
 * live stream's), and a flush at the end; exit 0 only after it. SIGINT /
 * SIGTERM: flush what was appended and exit 1 (the next run continues).
 */
#include "ingest/file.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/progress.h"
#include "ingest/decomp.h"
#include "ingest/ingest.h"
#include "kafka/kafka.h"
#include "log/log.h"
#include "stats/stats.h"

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_TOPIC "recentchange"
#define FILE_CHUNK (1024 * 1024) /* decompressed bytes read at once */
#define FILE_STATS_EVERY 4096    /* lines between two updates of the shared stats */

struct file_in {
    const char *path;
    const char *name; /* base name, "-" for standard input */
    struct fr_ingest_ident ident;
    struct fr_ingest_src *src; /* kept open from the start only for standard input */
};

/* A position in the listed inputs; file -1: before all of them. */
struct file_at {
    int file;
    int64_t offset;
};

struct file_counts {
    uint64_t lines, appended, already, canaries, oversize, empty, framing, bytes;
};

struct file_run {
    struct fr_conf *conf;
    struct fr_log *log;
    struct fr_stats *stats;
    struct file_in *in;
    int nin;
    struct file_at *pos; /* per partition: the last durable position */
    int32_t npos;
    struct file_counts n, published;
    int64_t last_event_ms;
    int quiet;
};

static volatile sig_atomic_t file_stop;

static void file_on_signal(int sig)
{
    (void)sig;
    file_stop = 1;
}

static int file_at_le(struct file_at a, struct file_at b)
{
    return a.file < b.file || (a.file == b.file && a.offset <= b.offset);
}

static const char *file_base(const char *path)
{
    if (strcmp(path, "-") == 0) {
        return "-";
    }
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* The last durable position of every partition, or a refusal. */
static int file_load_positions(struct file_run *run)
{
    for (int32_t p = 0; p < run->npos; p++) {
        run->pos[p] = (struct file_at){-1, 0};
        struct fr_log_rec last;
        int rc = fr_log_last(run->log, p, &last);
        if (rc < 0) {
            fr_error("ingest", "cannot read the log tail of partition %d: %s", (int)p,
                     fr_strerror(rc));
            return rc;
        }
        const void *v;
        size_t vlen;
        if (rc == 0 || fr_log_rec_header(&last, FR_INGEST_FPOS_HEADER, &v, &vlen) != 1) {
            continue;
        }
        struct fr_ingest_fpos fp;
        if (fr_ingest_fpos_parse(v, vlen, &fp) < 0) {
            fr_error("ingest",
                     "partition %d: the last record's %s header is not one we wrote: "
                     "%.*s",
                     (int)p, FR_INGEST_FPOS_HEADER, (int)(vlen < 200 ? vlen : 200),
                     (const char *)v);
            return FR_ECORRUPT;
        }
        for (int i = 0; i < run->nin; i++) {
            if (run->in[i].ident.size == fp.size && run->in[i].ident.head == fp.head) {
                run->pos[p] = (struct file_at){i, fp.offset};
                break;
            }
        }
        if (run->pos[p].file >= 0) {
            continue;
        }
        for (int i = 0; i < run->nin; i++) {
            if (strcmp(run->in[i].name, "-") != 0 && strcmp(run->in[i].name, fp.name) == 0) {
                fr_error("ingest",
                         "%s changed since it was imported: the log's records from %s stop at "
                         "byte %lld of a file of %lld bytes (head hash %016llx), but %s now has "
                         "%lld bytes (head hash %016llx). Refusing, so that no line is skipped or "
                         "stored twice. Restore the file, give the new one another name, or "
                         "start from an empty log.",
                         run->in[i].path, fp.name, (long long)fp.offset, (long long)fp.size,
                         (unsigned long long)fp.head, run->in[i].path,
                         (long long)run->in[i].ident.size,
                         (unsigned long long)run->in[i].ident.head);
                return FR_ECONFLICT;
            }
        }
    }
    return FR_OK;
}

static void file_publish(struct file_run *run)
{
    struct file_counts *n = &run->n, *o = &run->published;
    fr_stats_add(run->stats, FR_STATS_INGEST_EVENTS, 0,
                 (n->lines - n->empty - n->framing) - (o->lines - o->empty - o->framing));
    fr_stats_add(run->stats, FR_STATS_INGEST_CANARIES, 0, n->canaries - o->canaries);
    fr_stats_add(run->stats, FR_STATS_INGEST_OVERSIZE, 0, n->oversize - o->oversize);
    fr_stats_add(run->stats, FR_STATS_INGEST_LOG_RECORDS, 0, n->appended - o->appended);
    fr_stats_add(run->stats, FR_STATS_INGEST_LOG_BYTES, 0, n->bytes - o->bytes);
    if (run->last_event_ms >= 0) {
        fr_stats_set(run->stats, FR_STATS_INGEST_LAST_EVENT, 0, (double)run->last_event_ms / 1e3);
    }
    fr_stats_set(run->stats, FR_STATS_INGEST_LAST_APPEND, 0, (double)fr_wall_ms() / 1e3);
    fr_stats_publish(run->stats);
    *o = *n;
}

static int file_flush(struct file_run *run, int force)
{
    int64_t t0 = fr_mono_ns();
    int rc = force ? fr_log_flush(run->log) : fr_log_maybe_flush(run->log, fr_mono_ms());
    if (rc == 1 || (force && rc == FR_OK)) {
        fr_stats_observe(run->stats, FR_STATS_INGEST_FSYNC, (double)(fr_mono_ns() - t0) / 1e9);
    }
    return rc < 0 ? rc : FR_OK;
}

static int file_line(struct file_run *run, int file, const struct fr_ingest_line *line)
{
    run->n.lines++;
    if (line->oversize) {
        if (run->n.oversize++ >= 10) {
            return FR_OK; /* counted; the first ten are named */
        }
        fr_warn("ingest",
                "%s: line at byte %llu has %zu bytes, more than ingest.max_event_bytes "
                "(%lld): refused",
                run->in[file].path, (unsigned long long)line->offset, line->len,
                (long long)run->conf->ingest_max_event_bytes);
        return FR_OK;
    }
    size_t i = 0;
    while (i < line->len && (line->data[i] == ' ' || line->data[i] == '\t')) {
        i++;
    }
    if (i == line->len) {
        run->n.empty++;
        return FR_OK;
    }
    /* A raw EventStreams capture (curl of the SSE stream): its events are
     * the `data:` lines; `event:`, `id:`, `retry:` and comments frame them. */
    const uint8_t *data = line->data;
    size_t len = line->len;
    if (len >= 5 && memcmp(data, "data:", 5) == 0) {
        data += 5, len -= 5;
        if (len > 0 && *data == ' ') {
            data++, len--;
        }
        if (len == 0) {
            run->n.empty++;
            return FR_OK;
        }
    } else if (data[0] == ':' || (len >= 6 && memcmp(data, "event:", 6) == 0) ||
               (len >= 3 && memcmp(data, "id:", 3) == 0) ||
               (len >= 6 && memcmp(data, "retry:", 6) == 0)) {
        run->n.framing++;
        return FR_OK;
    }
    struct fr_ingest_meta meta;
    fr_ingest_extract((const char *)data, len, &meta);
    if (meta.canary) {
        run->n.canaries++;
        return FR_OK;
    }
    int32_t partition = fr_ingest_partition(run->conf, &meta);
    struct file_at at = {file, (int64_t)line->offset};
    if (partition < run->npos && file_at_le(at, run->pos[partition])) {
        run->n.already++;
        return FR_OK;
    }
    struct fr_ingest_fpos fp = {.size = run->in[file].ident.size,
                                .head = run->in[file].ident.head,
                                .offset = (int64_t)line->offset};
    snprintf(fp.name, sizeof fp.name, "%s", run->in[file].name);
    char value[FR_INGEST_FPOS_NAME + 80];
    int vlen = fr_ingest_fpos_format(&fp, value, sizeof value);
    if (vlen < 0) {
        return vlen;
    }
    struct fr_log_header hdr = {.name = FR_INGEST_FPOS_HEADER,
                                .name_len = sizeof FR_INGEST_FPOS_HEADER - 1,
                                .value = value,
                                .value_len = (size_t)vlen};
    struct fr_log_rec rec = {
        .timestamp = meta.event_ms >= 0 ? meta.event_ms : fr_wall_ms(),
        .key = meta.key,
        .key_len = meta.key_len,
        .headers = &hdr,
        .header_count = 1,
        .payload = data,
        .payload_len = len,
    };
    int rc = fr_log_append(run->log, partition, &rec, NULL);
    if (rc == FR_OK) {
        rc = file_flush(run, 0);
    }
    if (rc < 0) {
        fr_error("ingest", "log append failed: %s (%s); stopping", fr_strerror(rc),
                 fr_err_name(rc));
        return rc;
    }
    run->n.appended++;
    run->n.bytes += len + meta.key_len + (size_t)vlen;
    if (meta.event_ms >= 0) {
        run->last_event_ms = meta.event_ms;
    }
    return FR_OK;
}

static void file_status(struct file_run *run, const char *what)
{
    if (run->quiet) {
        return;
    }
    fr_info("ingest",
            "%s: %llu lines read, %llu appended, %llu already in the log, %llu canaries dropped, "
            "%llu oversize refused, %llu empty, %llu SSE framing",
            what, (unsigned long long)run->n.lines, (unsigned long long)run->n.appended,
            (unsigned long long)run->n.already, (unsigned long long)run->n.canaries,
            (unsigned long long)run->n.oversize, (unsigned long long)run->n.empty,
            (unsigned long long)run->n.framing);
}

/* Read input i from offset `from` (the start of a line) to its end. */
static int file_read_one(struct file_run *run, int i, int64_t from, struct fr_ingest_lines *lines)
{
    struct file_in *in = &run->in[i];
    struct fr_ingest_src *src = in->src;
    struct fr_progress pg;
    memset(&pg, 0, sizeof pg); /* ended at cleanup, started below */
    int rc;
    if (!src) {
        rc = fr_ingest_src_open(in->path, &src);
        if (rc < 0) {
            return rc;
        }
        const struct fr_ingest_ident *now = fr_ingest_src_ident(src);
        if (now->size != in->ident.size || now->head != in->ident.head) {
            fr_error("ingest", "%s changed while the import ran; refusing", in->path);
            rc = FR_ECONFLICT;
            goto cleanup;
        }
    }
    in->src = NULL;
    if (from > 0) {
        rc = fr_ingest_src_skip(src, (uint64_t)from);
        if (rc < 0) {
            goto cleanup;
        }
    }
    lines->len = lines->start = lines->scan = 0;
    lines->discarding = 0;
    lines->base = (uint64_t)from;
    int64_t next_status = fr_mono_ms() + run->conf->ingest_status_interval_s * 1000;
    /* progress in bytes of the file: of its size for a plain file; a
     * compressed file or a pipe shows the bytes read, without a total */
    size_t pl = strlen(in->path);
    bool plain = in->ident.size >= 0 && !(pl > 3 && strcmp(in->path + pl - 3, ".gz") == 0) &&
                 !(pl > 4 && strcmp(in->path + pl - 4, ".zst") == 0);
    fr_progress_start(&pg, "ingest", "bytes", plain ? (uint64_t)in->ident.size : 0);
    uint64_t pos = (uint64_t)from;
    int eof = 0;
    while (!eof) {
        if (file_stop) {
            rc = FR_EABORTED;
            goto cleanup;
        }
        uint8_t *at;
        size_t room, got;
        fr_ingest_lines_space(lines, &at, &room);
        rc = fr_ingest_src_read(src, at, room < FILE_CHUNK ? room : FILE_CHUNK, &got);
        if (rc < 0) {
            goto cleanup;
        }
        fr_ingest_lines_added(lines, got);
        eof = got == 0;
        pos += got;
        fr_progress_tick(&pg, pos);
        struct fr_ingest_line line;
        while (fr_ingest_lines_next(lines, eof, &line) == 1) {
            rc = file_line(run, i, &line);
            if (rc < 0) {
                goto cleanup;
            }
            if (run->n.lines % FILE_STATS_EVERY == 0) {
                file_publish(run);
            }
        }
        int64_t now = fr_mono_ms();
        if (now >= next_status) {
            file_status(run, in->path);
            next_status = now + run->conf->ingest_status_interval_s * 1000;
        }
    }
    rc = FR_OK;

cleanup:
    fr_progress_end(&pg);
    fr_ingest_src_close(src);
    return rc;
}

int fr_ingest_file_run(struct fr_conf *conf, char *const *paths, int npaths, int quiet,
                       void (*on_open)(void *arg), void *arg)
{
    struct file_run run;
    memset(&run, 0, sizeof run);
    run.conf = conf;
    run.quiet = quiet;
    run.last_event_ms = -1;
    struct fr_kafka *kafka = NULL;
    struct fr_ingest_lines lines = {0};
    int status = 1, rc, stdin_seen = 0;
    file_stop = 0;

    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = file_on_signal;
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);

    run.in = calloc((size_t)npaths, sizeof *run.in);
    if (!run.in) {
        goto cleanup;
    }
    for (int i = 0; i < npaths; i++) {
        struct file_in *in = &run.in[i];
        in->path = paths[i];
        in->name = file_base(paths[i]);
        if (strcmp(paths[i], "-") == 0 && stdin_seen++) {
            fr_error("ingest", "standard input (-) can be listed only once");
            goto cleanup;
        }
        struct fr_ingest_src *src;
        if (fr_ingest_src_open(paths[i], &src) < 0) {
            goto cleanup;
        }
        run.nin = i + 1;
        in->ident = *fr_ingest_src_ident(src);
        if (strcmp(paths[i], "-") == 0) {
            in->src = src; /* a pipe can be read only once */
        } else {
            fr_ingest_src_close(src);
        }
    }

    /* Its own group commit (ingest.file_fsync_*): the unflushed bytes stay
     * in each partition's buffer until the fsync, so the buffer must hold a
     * whole commit; over all partitions, at most fsync_bytes are pending. */
    struct fr_log_opts lopts;
    fr_ingest_log_opts(conf, conf->ingest_file_fsync_interval_ms, conf->ingest_file_fsync_bytes,
                       &lopts);
    if (lopts.write_buffer_bytes < lopts.fsync_bytes + lopts.max_record_bytes) {
        lopts.write_buffer_bytes = lopts.fsync_bytes + lopts.max_record_bytes;
    }
    if (fr_kafka_backend_from_conf(conf, &lopts, &kafka) < 0) {
        goto cleanup;
    }
    rc = fr_log_open(conf->general_data_dir, FILE_TOPIC, &lopts, &run.log);
    if (rc < 0) {
        fr_error("ingest", "cannot open the log in %s: %s (%s)", conf->general_data_dir,
                 fr_strerror(rc), fr_err_name(rc));
        goto cleanup;
    }
    fr_stats_open(conf->general_data_dir, FR_STATS_INGEST, &run.stats);
    run.npos = fr_log_partitions(run.log);
    run.pos = calloc((size_t)run.npos, sizeof *run.pos);
    if (!run.pos || file_load_positions(&run) < 0) {
        goto cleanup;
    }
    struct file_at start = {run.nin, 0};
    for (int32_t p = 0; p < run.npos; p++) {
        if (file_at_le(run.pos[p], start)) {
            start = run.pos[p];
        }
    }
    if (start.file < 0) {
        start = (struct file_at){0, 0};
    } else if (!quiet) {
        fr_info("ingest", "resuming: %s from byte %lld (records up to there are in the log)",
                run.in[start.file].path, (long long)start.offset);
    }
    if (fr_ingest_lines_init(&lines, (size_t)conf->ingest_max_event_bytes, FILE_CHUNK) < 0) {
        goto cleanup;
    }
    if (on_open) {
        on_open(arg);
    }
    for (int i = start.file; i < run.nin; i++) {
        rc = file_read_one(&run, i, i == start.file ? start.offset : 0, &lines);
        if (rc < 0) {
            break;
        }
    }
    int frc = file_flush(&run, 1);
    file_publish(&run);
    if (rc == FR_EABORTED) {
        file_status(&run, frc == FR_OK ? "stopped by a signal; run the same command to continue"
                                       : "stopped by a signal");
        goto cleanup;
    }
    if (rc < 0 || frc < 0) {
        int err = rc < 0 ? rc : frc;
        fr_error("ingest", "import stopped: %s (%s); run the same command to continue",
                 fr_strerror(err), fr_err_name(err));
        goto cleanup;
    }
    file_status(&run, "end of input");
    status = 0;

cleanup:
    for (int i = 0; i < run.nin; i++) {
        fr_ingest_src_close(run.in[i].src);
    }
    free(run.in);
    free(run.pos);
    fr_ingest_lines_free(&lines);
    fr_stats_close(run.stats);
    fr_log_close(run.log);
    fr_kafka_free(kafka);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    return status;
}

int fr_ingest_file_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--file") == 0 || strncmp(argv[i], "--file=", 7) == 0) {
            return 1;
        }
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
    }
    return 0;
}

static void file_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet ingest --file PATH [PATH...] [-q]\n\n"
            "Append recorded NDJSON, one event per line, straight into the log topic\n"
            "`recentchange`: `freshet feed --dump` output, EventStreams captures. PATH `-` is\n"
            "standard input; names ending in .gz or .zst are decompressed (standard input:\n"
            "detected from its first bytes). The SSE path's rules hold: canaries are\n"
            "dropped and counted, lines longer than ingest.max_event_bytes are refused and\n"
            "counted, malformed lines are stored for the processor's quality gate.\n"
            "Exits 0 at the end of input, once every record is durable.\n\n"
            "Exactly resumable: each record keeps its file's identity (size, hash of its\n"
            "head) and its line's byte offset; running the same command again after a kill\n"
            "continues after the last durable record, with no gap and no duplicate. A file\n"
            "that changed since (same name, other size or head) is refused.\n");
}

int fr_cmd_ingest_file(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {{"file", required_argument, 0, 'f'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    char **paths = calloc((size_t)argc, sizeof *paths);
    int npaths = 0, quiet = 0, c, status = 2;
    if (!paths) {
        return 1;
    }
    optind = 0;
    /* "-" is an operand for getopt, so `--file - more.gz` lists both. */
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            paths[npaths++] = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            file_usage(stdout);
            status = 0;
            goto cleanup;
        default:
            file_usage(stderr);
            goto cleanup;
        }
    }
    while (optind < argc) {
        paths[npaths++] = argv[optind++];
    }
    if (npaths == 0) {
        file_usage(stderr);
        goto cleanup;
    }
    status = fr_ingest_file_run(conf, paths, npaths, quiet, NULL, NULL);

cleanup:
    free(paths);
    return status;
}
