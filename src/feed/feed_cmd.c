/*
 * feed_cmd.c — `freshet feed`: flags (one table drives getopt_long and
 * --help; docs/FEED.md lists the same flags and a test keeps them in step),
 * then the process lifecycle:
 *
 *   parse ──► open stream ──► [--dump: print payloads, exit]
 *         ──► block SIGTERM/SIGINT ──► start server, print "listening URL"
 *         ──► sigwait ──► stop server (connections end within ~100 ms)
 *         ──► write the final truth file ──► exit 0
 *
 * Runs on the caller's thread; the server and truth writer own theirs.
 */
#include "feed/feed_cmd.h"

#include "feed/feed.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cmd_flag {
    F_LISTEN = 256,
    F_FILE,
    F_SYNTHETIC,
    F_SEED,
    F_COUNT,
    F_START,
    F_RATE,
    F_EVENT_RATE,
    F_CANARY_RATE,
    F_OFFSET_BASE,
    F_DUP_RATE,
    F_DUP_WINDOW,
    F_MAL_RATE,
    F_MAL_KINDS,
    F_OVERSIZE,
    F_LATE_RATE,
    F_LATE_MS,
    F_LATE_RANDOM,
    F_OOO_RATE,
    F_OOO_MS,
    F_FUTURE_RATE,
    F_FUTURE_MS,
    F_DISCONNECT,
    F_STALL_EVERY,
    F_STALL_MS,
    F_OVERLAP,
    F_CLOSE_AT_END,
    F_START_LATEST,
    F_HISTORY_FROM,
    F_MAX_CONNS,
    F_TRUTH,
    F_API_LATENCY,
    F_API_ERROR_RATE,
    F_API_429_RATE,
    F_API_MAXLAG,
    F_API_RATE_LIMIT,
    F_DUMP,
    F_HELP
};

struct cmd_flag_doc {
    const char *name;
    int has_arg;
    int id;
    const char *arg;
    const char *help;
};

static const struct cmd_flag_doc cmd_flags[] = {
    {"listen", 1, F_LISTEN, "ADDR",
     "serve on HOST:PORT (port 0: any free port; default host 127.0.0.1)"},
    {"file", 1, F_FILE, "F...",
     "serve recorded NDJSON events, files in order (more files may follow)"},
    {"synthetic", 0, F_SYNTHETIC, NULL, "serve the calibrated synthetic generator"},
    {"seed", 1, F_SEED, "S", "seed for the generator and every fault (default 1)"},
    {"count", 1, F_COUNT, "N", "number of positions (synthetic default: endless; files: all)"},
    {"start", 1, F_START, "TIME",
     "synthetic event time of position 0, ISO-8601 or Unix ms (default now)"},
    {"rate", 1, F_RATE, "N", "events per second produced; 0 = everything at once (default 0)"},
    {"event-rate", 1, F_EVENT_RATE, "N",
     "synthetic events per second of event time (default: --rate, or 38)"},
    {"canary-rate", 1, F_CANARY_RATE, "P",
     "synthetic canary probability per position (default 0.0001)"},
    {"offset-base", 1, F_OFFSET_BASE, "N",
     "Kafka offset of position 0 (synthetic default 6320664795)"},
    {"dup-rate", 1, F_DUP_RATE, "P", "probability that a position repeats an earlier event"},
    {"dup-window", 1, F_DUP_WINDOW, "N",
     "a duplicate repeats one of the previous N positions (1000)"},
    {"malformed-rate", 1, F_MAL_RATE, "P", "probability that a position is malformed"},
    {"malformed-kinds", 1, F_MAL_KINDS, "LIST", "comma-separated kinds, or all (default all)"},
    {"oversize-bytes", 1, F_OVERSIZE, "N", "payload size of oversize events (default 1114112)"},
    {"late-rate", 1, F_LATE_RATE, "P", "probability that meta.dt is --late-ms behind the stream"},
    {"late-ms", 1, F_LATE_MS, "M", "lateness of late events in ms (default 300000)"},
    {"late-random", 0, F_LATE_RANDOM, NULL, "lateness uniform in [1, --late-ms] instead"},
    {"ooo-rate", 1, F_OOO_RATE, "P", "probability of a small out-of-order shift of meta.dt"},
    {"ooo-ms", 1, F_OOO_MS, "M", "largest out-of-order shift in ms (default 5000)"},
    {"future-rate", 1, F_FUTURE_RATE, "P", "probability that meta.dt is --future-ms ahead"},
    {"future-ms", 1, F_FUTURE_MS, "M", "lead of future events in ms (default 3600000)"},
    {"disconnect-every", 1, F_DISCONNECT, "N", "cut each connection after N events"},
    {"stall-every", 1, F_STALL_EVERY, "N", "pause each connection after every N events"},
    {"stall-ms", 1, F_STALL_MS, "M", "length of a pause in ms (default 1000)"},
    {"overlap", 1, F_OVERLAP, "N", "on resume, re-send N events before the requested position"},
    {"close-at-end", 0, F_CLOSE_AT_END, NULL, "end the response after the last position"},
    {"start-latest", 0, F_START_LATEST, NULL, "clients without a position start at the head"},
    {"history-from", 1, F_HISTORY_FROM, "TIME",
     "retention: positions before TIME are gone; every connection starts at or after it"},
    {"max-conns", 1, F_MAX_CONNS, "N", "concurrent connections (default 64)"},
    {"truth", 1, F_TRUTH, "FILE", "write the ground truth here on each close and at exit"},
    {"api-latency-ms", 1, F_API_LATENCY, "M",
     "API fixture: add M ms before every /api/<wiki>/w/api.php answer"},
    {"api-error-rate", 1, F_API_ERROR_RATE, "P", "API fixture: probability of a 503 answer"},
    {"api-429-rate", 1, F_API_429_RATE, "P",
     "API fixture: probability of a 429 answer with Retry-After"},
    {"api-maxlag", 1, F_API_MAXLAG, "P",
     "API fixture: probability of the maxlag error when the request sends maxlag"},
    {"api-rate-limit", 1, F_API_RATE_LIMIT, "N",
     "API fixture: requests/s allowed (all wikis), beyond: 429 (default 0: none)"},
    {"dump", 0, F_DUMP, NULL, "print the payloads as NDJSON on stdout and exit (needs a count)"},
    {"help", 0, F_HELP, NULL, "show this help"},
};

#define CMD_NFLAGS (sizeof cmd_flags / sizeof cmd_flags[0])

static void cmd_usage(FILE *out)
{
    fprintf(out, "usage: freshet feed --listen ADDR (--file NDJSON... | --synthetic) [--rate N]\n"
                 "                    [--seed S] [fault flags] [--truth FILE]\n"
                 "       freshet feed --dump (--file NDJSON... | --synthetic --count N) [flags]\n\n"
                 "Serve a Wikimedia-compatible recentchange SSE stream at " FR_FEED_PATH ",\n"
                 "with resume (Last-Event-ID, ?since=) and deterministic fault injection,\n"
                 "and a MediaWiki-API pageprops fixture at " FR_FEED_API_PATH ".\n\n");
    for (size_t i = 0; i < CMD_NFLAGS; i++) {
        char left[48];
        snprintf(left, sizeof left, "--%s%s%s", cmd_flags[i].name, cmd_flags[i].arg ? " " : "",
                 cmd_flags[i].arg ? cmd_flags[i].arg : "");
        fprintf(out, "  %-24s %s\n", left, cmd_flags[i].help);
    }
    fprintf(out, "\nmalformed kinds:");
    for (int k = 1; k < FR_FEED_MAL_COUNT; k++) {
        fprintf(out, "%s %s", k > 1 ? "," : "", fr_feed_malformed_name((enum fr_feed_malformed)k));
    }
    fprintf(out, "\nexit status: 0 ok, 1 error, 2 usage\n");
}

static const char *cmd_flag_name(int id)
{
    for (size_t i = 0; i < CMD_NFLAGS; i++) {
        if (cmd_flags[i].id == id) {
            return cmd_flags[i].name;
        }
    }
    return "?";
}

static int cmd_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno) {
        return -1;
    }
    *out = v;
    return 0;
}

static int cmd_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Print every payload, one per line. */
static int cmd_dump(const struct fr_feed_stream *stream)
{
    int64_t count = fr_feed_stream_count(stream);
    if (count == FR_FEED_UNBOUNDED) {
        fprintf(stderr, "freshet feed: --dump needs --count with --synthetic\n");
        return 2;
    }
    struct fr_feed_cursor *cur;
    if (fr_feed_cursor_new(stream, &cur) < 0) {
        return 1;
    }
    struct fr_buf buf;
    fr_buf_init(&buf, (size_t)80 << 20);
    int status = 0;
    for (int64_t pos = 0; pos < count; pos++) {
        fr_buf_reset(&buf);
        int rc = fr_feed_stream_render(cur, pos, &buf, NULL);
        if (rc == FR_OK) {
            rc = fr_buf_putc(&buf, '\n');
        }
        if (rc < 0 || fwrite(buf.data, 1, buf.len, stdout) != buf.len) {
            fprintf(stderr, "freshet feed: dump failed at position %lld\n", (long long)pos);
            status = 1;
            break;
        }
    }
    if (fflush(stdout) != 0) {
        status = 1;
    }
    fr_buf_free(&buf);
    fr_feed_cursor_free(cur);
    return status;
}

static int cmd_serve(const struct fr_feed_stream *stream, const char *listen,
                     const char *truth_path)
{
    int status = 1;
    struct fr_feed_truth *truth = NULL;
    struct fr_feed_server *server = NULL;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    /* Block before any thread starts, so only sigwait below sees them. */
    pthread_sigmask(SIG_BLOCK, &set, &old);
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);

    if (fr_feed_truth_new(stream, truth_path, &truth) < 0) {
        fprintf(stderr, "freshet feed: out of memory\n");
        goto cleanup;
    }
    char url[256], err[512];
    if (fr_feed_server_start(stream, truth, listen, &server, url, sizeof url, err, sizeof err) <
        0) {
        fprintf(stderr, "freshet feed: %s\n", err);
        goto cleanup;
    }
    if (truth_path && fr_feed_truth_write(truth, 0) < 0) {
        goto cleanup;
    }
    if (fr_feed_truth_start(truth) < 0) {
        fprintf(stderr, "freshet feed: cannot start the truth writer\n");
        goto cleanup;
    }
    printf("listening %s\n", url);
    fflush(stdout);
    int64_t count = fr_feed_stream_count(stream);
    if (count == FR_FEED_UNBOUNDED) {
        fr_info("feed", "serving %s (endless)", url);
    } else {
        fr_info("feed", "serving %s (%lld positions)", url, (long long)count);
    }
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    fr_info("feed", "signal %d: stopping", sig);
    struct fr_buf counters;
    fr_buf_init(&counters, 4096);
    if (fr_feed_api_counters_json(fr_feed_server_api(server), &counters) == FR_OK &&
        fr_feed_api_counter(fr_feed_server_api(server), FR_FEED_API_REQUESTS) > 0) {
        fr_info("feed", "api fixture served %s", fr_buf_cstr(&counters));
    }
    fr_buf_free(&counters);
    status = 0;
cleanup:
    fr_feed_server_stop(server);
    if (truth && fr_feed_truth_finish(truth) < 0) {
        status = 1;
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return status;
}

int fr_cmd_feed(const char *data_dir, int argc, char **argv)
{
    (void)data_dir;
    struct fr_feed_opts opts;
    fr_feed_opts_init(&opts);
    struct option longopts[CMD_NFLAGS + 1];
    for (size_t i = 0; i < CMD_NFLAGS; i++) {
        longopts[i] = (struct option){cmd_flags[i].name,
                                      cmd_flags[i].has_arg ? required_argument : no_argument, NULL,
                                      cmd_flags[i].id};
    }
    longopts[CMD_NFLAGS] = (struct option){0, 0, 0, 0};
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!files) {
        fprintf(stderr, "freshet feed: out of memory\n");
        return 1;
    }
    size_t nfiles = 0;
    const char *listen = NULL, *truth = NULL;
    int dump = 0, status = 2, c;
    char err[512];
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        int bad = 0;
        const char *a = optarg;
        switch (c) {
        case F_LISTEN:
            listen = a;
            break;
        case F_FILE:
            files[nfiles++] = a;
            break;
        case F_SYNTHETIC:
            opts.synthetic = 1;
            break;
        case F_SEED: {
            int64_t v = 0;
            bad = cmd_i64(a, &v) || v < 0;
            opts.seed = (uint64_t)v;
            break;
        }
        case F_COUNT:
            bad = cmd_i64(a, &opts.count);
            break;
        case F_START:
            bad = fr_feed_since_parse(a, &opts.start_ms) < 0;
            break;
        case F_HISTORY_FROM:
            bad = fr_feed_since_parse(a, &opts.history_from_ms) < 0;
            break;
        case F_RATE:
            bad = cmd_double(a, &opts.rate);
            break;
        case F_EVENT_RATE:
            bad = cmd_double(a, &opts.event_rate);
            break;
        case F_CANARY_RATE:
            bad = cmd_double(a, &opts.canary_rate);
            break;
        case F_OFFSET_BASE:
            bad = cmd_i64(a, &opts.offset_base) || opts.offset_base < 0;
            break;
        case F_DUP_RATE:
            bad = cmd_double(a, &opts.dup_rate);
            break;
        case F_DUP_WINDOW:
            bad = cmd_i64(a, &opts.dup_window);
            break;
        case F_MAL_RATE:
            bad = cmd_double(a, &opts.malformed_rate);
            break;
        case F_MAL_KINDS:
            if (fr_feed_malformed_parse(a, &opts.malformed_kinds, err, sizeof err) < 0) {
                fprintf(stderr, "freshet feed: %s\n", err);
                goto cleanup;
            }
            break;
        case F_OVERSIZE:
            bad = cmd_i64(a, &opts.oversize_bytes);
            break;
        case F_LATE_RATE:
            bad = cmd_double(a, &opts.late_rate);
            break;
        case F_LATE_MS:
            bad = cmd_i64(a, &opts.late_ms);
            break;
        case F_LATE_RANDOM:
            opts.late_random = 1;
            break;
        case F_OOO_RATE:
            bad = cmd_double(a, &opts.ooo_rate);
            break;
        case F_OOO_MS:
            bad = cmd_i64(a, &opts.ooo_ms);
            break;
        case F_FUTURE_RATE:
            bad = cmd_double(a, &opts.future_rate);
            break;
        case F_FUTURE_MS:
            bad = cmd_i64(a, &opts.future_ms);
            break;
        case F_DISCONNECT:
            bad = cmd_i64(a, &opts.disconnect_every);
            break;
        case F_STALL_EVERY:
            bad = cmd_i64(a, &opts.stall_every);
            break;
        case F_STALL_MS:
            bad = cmd_i64(a, &opts.stall_ms);
            break;
        case F_OVERLAP:
            bad = cmd_i64(a, &opts.overlap);
            break;
        case F_CLOSE_AT_END:
            opts.close_at_end = 1;
            break;
        case F_START_LATEST:
            opts.start_latest = 1;
            break;
        case F_MAX_CONNS: {
            int64_t v = 0;
            bad = cmd_i64(a, &v) || v < 1 || v > 10000;
            opts.max_conns = (int)v;
            break;
        }
        case F_TRUTH:
            truth = a;
            break;
        case F_API_LATENCY:
            bad = cmd_i64(a, &opts.api_latency_ms);
            break;
        case F_API_ERROR_RATE:
            bad = cmd_double(a, &opts.api_error_rate);
            break;
        case F_API_429_RATE:
            bad = cmd_double(a, &opts.api_429_rate);
            break;
        case F_API_MAXLAG:
            bad = cmd_double(a, &opts.api_maxlag_rate);
            break;
        case F_API_RATE_LIMIT:
            bad = cmd_double(a, &opts.api_rate_limit);
            break;
        case F_DUMP:
            dump = 1;
            break;
        case F_HELP:
            cmd_usage(stdout);
            status = 0;
            goto cleanup;
        default:
            fprintf(stderr, "freshet feed: see --help\n");
            goto cleanup;
        }
        if (bad) {
            fprintf(stderr, "freshet feed: bad value \"%s\" for --%s\n", a, cmd_flag_name(c));
            goto cleanup;
        }
    }
    /* `--file a b c`: the words after the options are more files. */
    for (int i = optind; i < argc; i++) {
        if (!nfiles) {
            fprintf(stderr, "freshet feed: unexpected argument \"%s\"\n", argv[i]);
            goto cleanup;
        }
        files[nfiles++] = argv[i];
    }
    if (!dump && !listen) {
        fprintf(stderr, "freshet feed: --listen is required (see --help)\n");
        goto cleanup;
    }
    opts.files = files;
    opts.nfiles = nfiles;
    if (!opts.synthetic && !nfiles) {
        fprintf(stderr, "freshet feed: give --file or --synthetic (see --help)\n");
        goto cleanup;
    }
    struct fr_feed_stream *stream;
    int rc = fr_feed_stream_open(&opts, &stream, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "freshet feed: %s\n", err);
        status = rc == FR_ECONFIG && !strstr(err, "no events") ? 2 : 1;
        goto cleanup;
    }
    status = dump ? cmd_dump(stream) : cmd_serve(stream, listen, truth);
    fr_feed_stream_close(stream);
cleanup:
    free(files);
    return status;
}
