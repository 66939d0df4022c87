/*
 * supervise.c — `freshet up` and `freshet demo`: run the stages as child
 * processes of this one, restart any that dies with exponential backoff,
 * and on SIGTERM or SIGINT stop them in reverse start order, waiting for
 * each to finish its current unit of work (ingest flushes its log) before
 * exiting. Each child is this same binary re-executed with the same global
 * options, so a stage can also be run, and killed, on its own.
 *
 * State per child:
 *
 *      start ──► RUNNING ──exit/kill──► WAITING (backoff) ──timer──► RUNNING
 *                   │                                  
 *                   └──SIGTERM to supervisor──► STOPPING ──exit──► DONE
 *
 * `demo` starts its feed first and the other stages once the feed accepts
 * connections (at most 5 s), so ingest does not open with a failed
 * connection. A child that ran for more than 60 s before dying is restarted after the
 * minimum delay again (its backoff resets). A periodic job (table
 * maintenance) that exits 0 runs again after its period; if it fails it is
 * retried with the same backoff as a stage.
 *
 * The terminal (ADR 0055): at start the supervisor says where to look (the
 * dashboard's and explorer's URLs, the data directory, how to stop, when
 * the first gold windows settle), then prints one status line for the
 * whole pipeline every SUP_STATUS_MS (rates, freshness, watermark lag,
 * totals, data-quality outcomes counted) from the stats files, plus the
 * warnings and errors of every stage as they happen. The children run
 * with -q (warnings and errors only) and their stdout (the "listening"
 * lines meant for scripts) goes to /dev/null, unless the supervisor itself
 * runs with -v: then every per-stage and per-epoch line shows, as before.
 */
#include "main/cmd.h"
#include "main/terminal.h"

#include "core/clock.h"
#include "core/diag.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SUP_MAX_ARGS 32
#define SUP_MAX_CHILDREN 8
#define SUP_STATUS_MS 10000 /* one status line this often */

struct sup_child {
    const char *name;
    char *argv[SUP_MAX_ARGS];
    pid_t pid;
    int64_t started_ms;
    int64_t next_start_ms;
    int64_t backoff_ms;
    int restarts;
    int64_t period_ms; /* > 0: a periodic job; a clean exit waits this long, not a backoff */
    const char *ready; /* "host:port" the child listens on: the next ones start once it does */
};

static volatile sig_atomic_t sup_stop;

static void sup_on_signal(int sig)
{
    (void)sig;
    sup_stop = 1;
}

/* Build argv: self, the supervisor's own global options for this child
 * (pre, NULL-terminated, may be NULL), the user's global options, then the
 * stage's own words. The user's options come after pre, so a user's
 * `--set` overrides a default the supervisor sets (later flags win). */
static int sup_child_init_pre(struct sup_child *child, const char *name, char *const *pre,
                              char *const *words)
{
    memset(child, 0, sizeof *child);
    child->name = name;
    int n = 0;
    child->argv[n++] = (char *)fr_main_self();
    /* A calm terminal: the child's warnings and errors only, unless -v.
     * Before the user's own options, so a -v or -q of theirs wins. */
    if (fr_diag_get_level() < FR_DIAG_DEBUG) {
        child->argv[n++] = "-q";
    }
    for (int i = 0; pre && pre[i] && n < SUP_MAX_ARGS - 1; i++) {
        child->argv[n++] = pre[i];
    }
    int gargc;
    char **gargv = fr_main_global_args(&gargc);
    for (int i = 0; i < gargc && n < SUP_MAX_ARGS - 1; i++) {
        child->argv[n++] = gargv[i];
    }
    for (int i = 0; words[i] && n < SUP_MAX_ARGS - 1; i++) {
        child->argv[n++] = words[i];
    }
    child->argv[n] = NULL;
    return n < SUP_MAX_ARGS - 1 ? 0 : -1;
}

static int sup_child_init(struct sup_child *child, const char *name, char *const *words)
{
    return sup_child_init_pre(child, name, NULL, words);
}

static void sup_start(struct sup_child *child, int64_t now)
{
    pid_t pid = fork();
    if (pid < 0) {
        fr_error("up", "fork for %s: %s", child->name, strerror(errno));
        child->next_start_ms = now + child->backoff_ms;
        return;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        /* The terminal's Ctrl-C goes to the supervisor, which stops children in order. */
        setpgid(0, 0);
        if (fr_diag_get_level() < FR_DIAG_DEBUG) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) {
                dup2(null, STDOUT_FILENO);
                close(null);
            }
        }
        execv(child->argv[0], child->argv);
        fprintf(stderr, "freshet up: exec %s: %s\n", child->argv[0], strerror(errno));
        _exit(127);
    }
    child->pid = pid;
    child->started_ms = now;
    fr_debug("up", "started %s (pid %ld)", child->name, (long)pid);
}

/* Wait (at most ms) until something accepts connections at "host:port"
 * ("[v6]:port" too), so the stage that reads from it does not start with
 * a failed connection and a warning. */
static void sup_wait_listen(const char *hostport, int64_t ms)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host) {
        return;
    }
    const char *h = hostport;
    size_t hl = (size_t)(colon - hostport);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++, hl -= 2;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai) {
        return;
    }
    int64_t deadline = fr_mono_ms() + ms;
    while (!sup_stop && fr_mono_ms() < deadline) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int up = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        if (fd >= 0) {
            close(fd);
        }
        if (up) {
            break;
        }
        fr_sleep_ms(50);
    }
    freeaddrinfo(ai);
}

static int sup_run(struct fr_conf *conf, const char *cmd, struct sup_child *children,
                   int nchildren)
{
    struct fr_term term = {.cmd = cmd};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sup_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int64_t now = fr_mono_ms();
    for (int i = 0; i < nchildren; i++) {
        children[i].backoff_ms = conf->up_restart_min_ms;
        if (children[i].period_ms > 0) {
            children[i].next_start_ms = now + children[i].period_ms;
        } else {
            sup_start(&children[i], now);
            if (children[i].ready && children[i].pid) {
                sup_wait_listen(children[i].ready, 5000);
                now = fr_mono_ms();
            }
        }
    }
    fr_term_banner(conf, cmd);
    fr_term_status(&term, conf); /* the first look: the rates start here */
    int64_t next_status = now + SUP_STATUS_MS;
    while (!sup_stop) {
        int wstatus;
        pid_t pid = waitpid(-1, &wstatus, WNOHANG);
        now = fr_mono_ms();
        for (int i = 0; pid > 0 && i < nchildren; i++) {
            struct sup_child *child = &children[i];
            if (child->pid != pid) {
                continue;
            }
            child->pid = 0;
            if (child->period_ms > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
                child->next_start_ms = now + child->period_ms;
                continue;
            }
            if (now - child->started_ms > 60000) {
                child->backoff_ms = conf->up_restart_min_ms;
            }
            if (WIFSIGNALED(wstatus)) {
                fr_warn("up", "%s died of signal %d; restarting in %lld ms", child->name,
                        WTERMSIG(wstatus), (long long)child->backoff_ms);
            } else {
                fr_warn("up", "%s exited with status %d; restarting in %lld ms", child->name,
                        WEXITSTATUS(wstatus), (long long)child->backoff_ms);
            }
            child->next_start_ms = now + child->backoff_ms;
            child->backoff_ms *= 2;
            if (child->backoff_ms > conf->up_restart_max_ms) {
                child->backoff_ms = conf->up_restart_max_ms;
            }
            child->restarts++;
        }
        for (int i = 0; i < nchildren; i++) {
            if (children[i].pid == 0 && now >= children[i].next_start_ms) {
                sup_start(&children[i], now);
            }
        }
        if (now >= next_status) {
            fr_term_status(&term, conf);
            next_status = now + SUP_STATUS_MS;
        }
        if (pid <= 0) {
            fr_sleep_ms(100);
        }
    }
    fr_term_free(&term);

    fr_info(cmd, "stopping every stage");
    int status = 0;
    for (int i = nchildren - 1; i >= 0; i--) {
        struct sup_child *child = &children[i];
        if (child->pid == 0) {
            continue;
        }
        kill(child->pid, SIGTERM);
        int64_t deadline = fr_mono_ms() + 15000;
        int wstatus;
        pid_t got;
        while ((got = waitpid(child->pid, &wstatus, WNOHANG)) == 0 && fr_mono_ms() < deadline) {
            fr_sleep_ms(20);
        }
        if (got == 0) {
            fr_warn("up", "%s did not stop within 15 s; killing it", child->name);
            kill(child->pid, SIGKILL);
            waitpid(child->pid, &wstatus, 0);
            status = 1;
        }
        fr_debug("up", "%s stopped", child->name);
    }
    fr_info(cmd, status ? "stopped (a stage had to be killed)" : "stopped");
    return status;
}

/* Table maintenance as a periodic child: `freshet compact` with the
 * [maintenance] settings, so expiry and compaction never stall the stream. */
struct sup_maint_args {
    char expire[32], retain[32], orphans[32], target[32];
};

static void sup_maint_init(struct fr_conf *conf, struct sup_child *child,
                           struct sup_maint_args *a)
{
    snprintf(a->expire, sizeof a->expire, "%lld", (long long)conf->maintenance_expire_after_s);
    snprintf(a->retain, sizeof a->retain, "%lld", (long long)conf->maintenance_retain_last);
    snprintf(a->orphans, sizeof a->orphans, "%lld", (long long)conf->maintenance_orphans_after_s);
    snprintf(a->target, sizeof a->target, "%lld", (long long)conf->maintenance_target_file_bytes);
    char *words[] = {"compact", "--expire-older-than", a->expire, "--retain-last", a->retain,
                     "--orphans-older-than", a->orphans, "--target-bytes", a->target, NULL};
    sup_child_init(child, "maintenance", words);
    child->period_ms = conf->maintenance_interval_s * 1000;
}

static int sup_help(const char *cmd, int argc, char **argv, const char *text)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: freshet %s\n\n%s", cmd, text);
            return 0;
        }
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "freshet %s: unexpected argument \"%s\"\n", cmd, argv[optind]);
        return 2;
    }
    return -1;
}

int fr_cmd_up(struct fr_conf *conf, int argc, char **argv)
{
    int rc = sup_help("up", argc, argv,
                      "Run the pipeline on the live Wikimedia stream (ingest.source_url): ingest\n"
                      "and process as supervised child processes, and serve (metrics, dashboard and\n"
                      "explorer at serve.listen, default http://127.0.0.1:8787/); restart any that dies;\n"
                      "SIGTERM stops them cleanly. Prints where to look, then one status line every\n"
                      "10 s and any warning or error (-v: every stage's own lines too).\n");
    if (rc >= 0) {
        return rc;
    }
    struct sup_child children[SUP_MAX_CHILDREN];
    char *ingest[] = {"ingest", NULL};
    char *process[] = {"process", NULL};
    sup_child_init(&children[0], "ingest", ingest);
    sup_child_init(&children[1], "process", process);
    struct sup_maint_args margs;
    sup_maint_init(conf, &children[2], &margs);
    char *serve[] = {"serve", NULL};
    sup_child_init(&children[3], "serve", serve);
    return sup_run(conf, "up", children, 4);
}

int fr_cmd_demo(struct fr_conf *conf, int argc, char **argv)
{
    int rc = sup_help("demo", argc, argv,
                      "Run the same pipeline as `up`, with a built-in synthetic feed\n"
                      "(demo.feed_listen, demo.rate) as the source, so it works offline. The\n"
                      "processor resolves pages to Wikidata items against the feed's API fixture\n"
                      "(enrichment on; --set enrich.enabled=0 turns it off). The dashboard\n"
                      "is at serve.listen (default http://127.0.0.1:8787/). Prints where to look,\n"
                      "then one status line every 10 s and any warning or error (-v: every\n"
                      "stage's own lines too).\n");
    if (rc >= 0) {
        return rc;
    }
    char rate[32], source[300], api[320];
    snprintf(rate, sizeof rate, "%lld", (long long)conf->demo_rate);
    snprintf(source, sizeof source, "http://%s/v2/stream/recentchange", conf->demo_feed_listen);
    /* Settings reach a child the way the user's do: as global --set flags
     * (the stage has no flag of its own for them), placed before the
     * user's so that theirs win. */
    snprintf(api, sizeof api, "enrich.api_url=http://%s/api/{wiki}/w/api.php",
             conf->demo_feed_listen);
    struct sup_child children[SUP_MAX_CHILDREN];
    /* A realistic stream with a little of everything, so every table fills:
     * duplicates, late events (5 minutes behind), malformed records. */
    char *feed[] = {"feed", "--listen", conf->demo_feed_listen, "--synthetic", "--rate", rate,
                    "--seed", "1", "--dup-rate", "0.01", "--late-rate", "0.005",
                    "--late-ms", "300000", "--malformed-rate", "0.003", "--ooo-rate", "0.02",
                    NULL};
    char *ingest[] = {"ingest", "--source", source, NULL};
    char *process[] = {"process", NULL};
    char *enrich[] = {"--set", "enrich.enabled=1", "--set", api, NULL};
    sup_child_init(&children[0], "feed", feed);
    children[0].ready = conf->demo_feed_listen; /* ingest starts once the feed listens */
    sup_child_init(&children[1], "ingest", ingest);
    sup_child_init_pre(&children[2], "process", enrich, process);
    struct sup_maint_args margs;
    sup_maint_init(conf, &children[3], &margs);
    char *serve[] = {"serve", NULL};
    sup_child_init(&children[4], "serve", serve);
    return sup_run(conf, "demo", children, 5);
}
