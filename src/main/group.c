/*
 * group.c — `freshet process --group`: one instance of the scale-out mode
 * (docs/SCALEOUT.md, ADR 0014). It joins the Kafka consumer group
 * kafka.group_id for freshet's topic and runs, as child processes of this
 * one, a shard (`freshet process --partition N`) for every partition the
 * group assigns it, and the finalizer (`freshet process --finalize`) while
 * it owns partition 0, so exactly one live instance finalizes.
 *
 * Per partition:
 *
 *   (not owned) ──assign──► RUNNING ──exit/kill──► WAITING ──backoff──► RUNNING
 *        ▲                     │
 *        └──── exited ◄─ STOPPING ◄──revoke (SIGTERM; SIGKILL after
 *                                   process.shard_stop_timeout_s)
 *
 * A revoke returns only once the partition's shard has exited, so the new
 * owner never starts a shard beside a live one (group.c in src/kafka).
 * Children get SIGKILL when this process dies (PR_SET_PDEATHSIG), so a
 * SIGKILLed instance leaves no orphan shard behind; a stalled one (SIGSTOP,
 * a long GC-like pause) is fenced by the epoch markers instead.
 * SIGTERM/SIGINT: leave the group (which stops every child), exit 0.
 *
 * Each child is started with --instance <hostname>:<pid of this instance>,
 * so the stats file every shard and the finalizer write (ADR 0042) says
 * which instance runs it (the `instance` label of /metrics).
 */
#include "main/cmd.h"

#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "kafka/kafka.h"
#include "pipeline/pipeline.h"
#include "stats/stats.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define GRP_MAX_ARGS 48
#define GRP_FINAL FR_KAFKA_GROUP_MAX /* the finalizer's slot */

struct grp_child {
    int owned;  /* the group assigned it (the finalizer: partition 0 is owned) */
    pid_t pid;  /* 0: not running */
    int64_t next_start_ms;
    int64_t backoff_ms;
    int64_t started_ms;
};

struct grp {
    struct fr_conf *conf;
    char instance[FR_STATS_INSTANCE_MAX]; /* hostname:pid of this instance */
    struct grp_child child[GRP_FINAL + 1];
};

static volatile sig_atomic_t grp_stop;

static void grp_on_signal(int sig)
{
    (void)sig;
    grp_stop = 1;
}

static void grp_start(struct grp *g, int slot)
{
    struct grp_child *c = &g->child[slot];
    char part[16];
    char *argv[GRP_MAX_ARGS];
    int n = 0, gargc;
    char **gargv = fr_main_global_args(&gargc);
    argv[n++] = (char *)fr_main_self();
    for (int i = 0; i < gargc && n < GRP_MAX_ARGS - 6; i++) {
        argv[n++] = gargv[i];
    }
    argv[n++] = "process";
    if (slot == GRP_FINAL) {
        argv[n++] = "--finalize";
    } else {
        snprintf(part, sizeof part, "%d", slot);
        argv[n++] = "--partition";
        argv[n++] = part;
    }
    argv[n++] = "--instance";
    argv[n++] = g->instance;
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fr_error("group", "fork: %s", strerror(errno));
        c->next_start_ms = fr_mono_ms() + c->backoff_ms;
        return;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(1); /* the instance died before the prctl */
        }
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        setpgid(0, 0);
        execv(argv[0], argv);
        fprintf(stderr, "freshet process --group: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    c->pid = pid;
    c->started_ms = fr_mono_ms();
    if (slot == GRP_FINAL) {
        fr_info("group", "started the finalizer (pid %ld)", (long)pid);
    } else {
        fr_info("group", "started the shard of partition %d (pid %ld)", slot, (long)pid);
    }
}

/* Note a child's exit: restart it after a backoff while it is owned. */
static void grp_reaped(struct grp *g, pid_t pid, int wstatus)
{
    int64_t now = fr_mono_ms();
    for (int s = 0; s <= GRP_FINAL; s++) {
        struct grp_child *c = &g->child[s];
        if (c->pid != pid) {
            continue;
        }
        c->pid = 0;
        if (!c->owned) {
            return;
        }
        if (now - c->started_ms > 60000) {
            c->backoff_ms = g->conf->up_restart_min_ms;
        }
        fr_warn("group", "%s %d exited (%s %d); restarting in %lld ms",
                s == GRP_FINAL ? "finalizer" : "shard of partition", s == GRP_FINAL ? 0 : s,
                WIFSIGNALED(wstatus) ? "signal" : "status",
                WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus),
                (long long)c->backoff_ms);
        c->next_start_ms = now + c->backoff_ms;
        c->backoff_ms = c->backoff_ms * 2 > g->conf->up_restart_max_ms ? g->conf->up_restart_max_ms
                                                                        : c->backoff_ms * 2;
        return;
    }
}

/* Stop the children of the given slots: SIGTERM (each finishes its epoch),
 * then wait, SIGKILL past the timeout. Returns once all have exited. */
static void grp_stop_slots(struct grp *g, const int *slots, int n)
{
    for (int i = 0; i < n; i++) {
        struct grp_child *c = &g->child[slots[i]];
        c->owned = 0;
        if (c->pid > 0) {
            kill(c->pid, SIGTERM);
        }
    }
    int64_t deadline = fr_mono_ms() + g->conf->process_shard_stop_timeout_s * 1000;
    int killed = 0;
    for (;;) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            struct grp_child *c = &g->child[slots[i]];
            if (c->pid <= 0) {
                continue;
            }
            int wstatus;
            pid_t r = waitpid(c->pid, &wstatus, WNOHANG);
            if (r == c->pid || (r < 0 && errno == ECHILD)) {
                c->pid = 0;
                continue;
            }
            left++;
            if (!killed && fr_mono_ms() >= deadline) {
                fr_warn("group", "slot %d did not stop in %lld s: SIGKILL", slots[i],
                        (long long)g->conf->process_shard_stop_timeout_s);
                kill(c->pid, SIGKILL);
            }
        }
        if (!left) {
            return;
        }
        killed = fr_mono_ms() >= deadline ? killed + 1 : killed;
        fr_sleep_ms(20);
    }
}

static void grp_on_assign(void *arg, const int32_t *ids, int n)
{
    struct grp *g = arg;
    int64_t now = fr_mono_ms();
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= FR_KAFKA_GROUP_MAX) {
            continue;
        }
        int slots[2] = {ids[i], GRP_FINAL};
        for (int k = 0; k < (ids[i] == 0 ? 2 : 1); k++) {
            struct grp_child *c = &g->child[slots[k]];
            c->owned = 1;
            c->backoff_ms = g->conf->up_restart_min_ms;
            c->next_start_ms = now;
        }
    }
}

static void grp_on_revoke(void *arg, const int32_t *ids, int n)
{
    struct grp *g = arg;
    int slots[FR_KAFKA_GROUP_MAX + 1], k = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= FR_KAFKA_GROUP_MAX) {
            continue;
        }
        slots[k++] = ids[i];
        if (ids[i] == 0) {
            slots[k++] = GRP_FINAL;
        }
    }
    grp_stop_slots(g, slots, k);
}

int fr_cmd_process_group(struct fr_conf *conf)
{
    if (strcmp(conf->log_backend, "kafka") != 0) {
        fr_error("group", "--group needs log.backend = kafka (the consumer group assigns the "
                          "partitions); with the embedded log run one `freshet process`, or "
                          "`--partition N` shards and a `--finalize` yourself");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = grp_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct fr_log_opts lopts;
    struct fr_kafka *kafka = NULL;
    struct fr_kafka_group *member = NULL;
    struct grp *g = calloc(1, sizeof *g);
    int status = 1;
    fr_log_opts_init(&lopts);
    if (!g || fr_kafka_backend_from_conf(conf, &lopts, &kafka) < 0) {
        goto cleanup;
    }
    g->conf = conf;
    fr_stats_default_instance(g->instance, sizeof g->instance);
    int rc = fr_kafka_group_join(kafka, conf->kafka_group_id, conf->kafka_session_timeout_ms,
                                 grp_on_assign, grp_on_revoke, g, &member);
    if (rc < 0) {
        fr_error("group", "cannot join group %s: %s", conf->kafka_group_id, fr_strerror(rc));
        goto cleanup;
    }
    while (!grp_stop) {
        rc = fr_kafka_group_poll(member, 100);
        if (rc < 0) {
            goto cleanup;
        }
        int wstatus;
        pid_t pid;
        while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
            grp_reaped(g, pid, wstatus);
        }
        int64_t now = fr_mono_ms();
        for (int s = 0; s <= GRP_FINAL; s++) {
            struct grp_child *c = &g->child[s];
            if (c->owned && c->pid == 0 && now >= c->next_start_ms) {
                grp_start(g, s);
            }
        }
    }
    status = 0;

cleanup:
    fr_kafka_group_close(member); /* stops every child through the revoke */
    if (g) {
        int all[GRP_FINAL + 1], k = 0;
        for (int s = 0; s <= GRP_FINAL; s++) {
            if (g->child[s].pid > 0) {
                all[k++] = s;
            }
        }
        grp_stop_slots(g, all, k);
    }
    fr_kafka_free(kafka);
    free(g);
    return status;
}

int fr_cmd_process_main(struct fr_conf *conf, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--group") == 0) {
            if (argc != 2) {
                fprintf(stderr, "freshet process: --group takes no other option\n");
                return 2;
            }
            return fr_cmd_process_group(conf);
        }
    }
    return fr_cmd_process(conf, argc, argv);
}
