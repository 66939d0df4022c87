/*
 * jobs.c — maintenance jobs started through the API (`POST /api/v1/compact`,
 * `POST /api/v1/dlq/replay`) and the bearer-token check that guards them.
 *
 * A job is the freshet binary run as a child (posix_spawn: safe in a
 * threaded process) with serve's global options, so it uses the same data
 * directory and configuration, and without FRESHET_SERVE_API_TOKEN in its
 * environment. At most one job of each command runs at a time (409
 * otherwise); the last SERVE_JOBS_KEPT are remembered for GET
 * /api/v1/jobs. The ticker reaps them (waitpid WNOHANG). Jobs under
 * srv->lock; spawning happens outside it.
 *
 *   POST ──► RUNNING ──exit──► EXITED (exit_code)
 *               └────signal──► KILLED (signal)
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

#define JOBS_MAX_ARGS 64
#define JOBS_MAX_ENV 512

int serve_bearer_ok(const char *header, const char *token)
{
    if (!header || !token || !token[0] || strncasecmp(header, "Bearer ", 7) != 0) {
        return 0;
    }
    const char *given = header + 7;
    while (*given == ' ') {
        given++;
    }
    size_t glen = strlen(given), tlen = strlen(token);
    while (glen && given[glen - 1] == ' ') {
        glen--;
    }
    /* Constant time in the token's length: every byte is compared. */
    unsigned diff = (unsigned)(glen ^ tlen);
    for (size_t i = 0; i < tlen; i++) {
        unsigned char g = i < glen ? (unsigned char)given[i] : 0;
        diff |= (unsigned)(g ^ (unsigned char)token[i]);
    }
    return diff == 0;
}

static const char *jobs_state_name(enum serve_job_state state)
{
    switch (state) {
    case SERVE_JOB_RUNNING:
        return "running";
    case SERVE_JOB_EXITED:
        return "exited";
    case SERVE_JOB_KILLED:
        return "killed";
    }
    return "?";
}

static int jobs_put(struct fr_buf *out, const struct serve_job *job)
{
    int rc = fr_buf_printf(out,
                           "{\"id\":%d,\"command\":\"%s\",\"pid\":%ld,\"state\":\"%s\","
                           "\"started_ms\":%lld,",
                           job->id, job->command, (long)job->pid, jobs_state_name(job->state),
                           (long long)job->started_ms);
    if (rc < 0) {
        return rc;
    }
    if (job->state == SERVE_JOB_RUNNING) {
        return fr_buf_puts(out, "\"ended_ms\":null,\"exit_code\":null}");
    }
    if (job->state == SERVE_JOB_KILLED) {
        return fr_buf_printf(out, "\"ended_ms\":%lld,\"exit_code\":null,\"signal\":%d}",
                             (long long)job->ended_ms, job->code);
    }
    return fr_buf_printf(out, "\"ended_ms\":%lld,\"exit_code\":%d}", (long long)job->ended_ms,
                         job->code);
}

/* The environment without the API token. Pointers into environ. */
static void jobs_env(char **env)
{
    int n = 0;
    for (char **e = environ; *e && n < JOBS_MAX_ENV - 1; e++) {
        if (strncmp(*e, "FRESHET_SERVE_API_TOKEN=", 24) != 0) {
            env[n++] = *e;
        }
    }
    env[n] = NULL;
}

enum MHD_Result serve_job_start(struct fr_serve *srv, struct MHD_Connection *conn,
                                enum serve_route route)
{
    const char *command = route == SERVE_R_COMPACT ? "compact" : "dlq replay";
    char *words[3] = {route == SERVE_R_COMPACT ? "compact" : "dlq",
                      route == SERVE_R_COMPACT ? NULL : "replay", NULL};
    if (!srv->self[0]) {
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "this server cannot start jobs (no freshet binary known)");
    }
    pthread_mutex_lock(&srv->lock);
    for (int i = 0; i < srv->njobs; i++) {
        const struct serve_job *job = &srv->jobs[i];
        if (job->state == SERVE_JOB_RUNNING && strcmp(job->command, command) == 0) {
            int id = job->id;
            long pid = (long)job->pid;
            pthread_mutex_unlock(&srv->lock);
            return serve_error(conn, MHD_HTTP_CONFLICT, "conflict",
                               "job %d (%s, pid %ld) is still running", id, command, pid);
        }
    }
    pthread_mutex_unlock(&srv->lock);

    char *argv[JOBS_MAX_ARGS];
    int n = 0;
    argv[n++] = srv->self;
    for (int i = 0; i < srv->opts.nglobal && n < JOBS_MAX_ARGS - 3; i++) {
        argv[n++] = srv->opts.global_args[i];
    }
    for (int i = 0; words[i]; i++) {
        argv[n++] = words[i];
    }
    argv[n] = NULL;
    char **env = calloc(JOBS_MAX_ENV, sizeof *env);
    if (!env) {
        return MHD_NO;
    }
    jobs_env(env);
    pid_t pid;
    int err = posix_spawn(&pid, srv->self, NULL, NULL, argv, env);
    free(env);
    if (err != 0) {
        return serve_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           "cannot start freshet %s: %s", command, strerror(err));
    }
    fr_stats_add(srv->own, FR_STATS_SERVE_JOBS, 0, 1);
    fr_info("serve", "started job: freshet %s (pid %ld)", command, (long)pid);
    struct serve_job job = {.pid = pid, .state = SERVE_JOB_RUNNING, .started_ms = fr_wall_ms()};
    snprintf(job.command, sizeof job.command, "%s", command);
    pthread_mutex_lock(&srv->lock);
    job.id = ++srv->job_seq;
    /* Keep running jobs: overwrite the oldest finished one. */
    int slot = srv->njobs < SERVE_JOBS_KEPT ? srv->njobs : -1;
    if (slot < 0) {
        int64_t oldest = INT64_MAX;
        for (int i = 0; i < SERVE_JOBS_KEPT; i++) {
            if (srv->jobs[i].state != SERVE_JOB_RUNNING && srv->jobs[i].id < oldest) {
                oldest = srv->jobs[i].id;
                slot = i;
            }
        }
    }
    if (slot >= 0) {
        srv->jobs[slot] = job;
        if (slot == srv->njobs) {
            srv->njobs++;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    struct fr_buf body;
    fr_buf_init(&body, 4096);
    if (fr_buf_puts(&body, "{\"job\":") < 0 || jobs_put(&body, &job) < 0 ||
        fr_buf_puts(&body, "}\n") < 0) {
        fr_buf_free(&body);
        return MHD_NO;
    }
    return serve_send_json(conn, MHD_HTTP_ACCEPTED, &body);
}

static int jobs_newest_first(const void *a, const void *b)
{
    const struct serve_job *x = a, *y = b;
    return (x->id < y->id) - (x->id > y->id);
}

enum MHD_Result serve_jobs(struct fr_serve *srv, struct MHD_Connection *conn)
{
    struct serve_job jobs[SERVE_JOBS_KEPT];
    pthread_mutex_lock(&srv->lock);
    int n = srv->njobs;
    memcpy(jobs, srv->jobs, sizeof jobs);
    pthread_mutex_unlock(&srv->lock);
    qsort(jobs, (size_t)n, sizeof *jobs, jobs_newest_first);
    struct fr_buf body;
    fr_buf_init(&body, 64 * 1024);
    int rc = fr_buf_puts(&body, "{\"jobs\":[");
    for (int i = 0; rc == FR_OK && i < n; i++) {
        if (i) {
            rc = fr_buf_putc(&body, ',');
        }
        if (rc == FR_OK) {
            rc = jobs_put(&body, &jobs[i]);
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "]}\n");
    }
    if (rc < 0) {
        fr_buf_free(&body);
        return MHD_NO;
    }
    return serve_send_json(conn, MHD_HTTP_OK, &body);
}

void serve_jobs_reap(struct fr_serve *srv)
{
    pthread_mutex_lock(&srv->lock);
    for (int i = 0; i < srv->njobs; i++) {
        struct serve_job *job = &srv->jobs[i];
        int wstatus;
        if (job->state != SERVE_JOB_RUNNING || waitpid(job->pid, &wstatus, WNOHANG) != job->pid) {
            continue;
        }
        job->ended_ms = fr_wall_ms();
        if (WIFSIGNALED(wstatus)) {
            job->state = SERVE_JOB_KILLED;
            job->code = WTERMSIG(wstatus);
        } else {
            job->state = SERVE_JOB_EXITED;
            job->code = WEXITSTATUS(wstatus);
        }
        fr_info("serve", "job %d (freshet %s) ended: %s %d", job->id, job->command,
                jobs_state_name(job->state), job->code);
    }
    pthread_mutex_unlock(&srv->lock);
}
