/*
 * pool.c — the writer's background compression threads
 * (opts.compress_workers = 1 or 2). Compression is about half of the
 * writer's time on real data, and bronze's (zstd over the raw JSON) was the
 * longest thread of a backfill (docs/BENCHMARKS.md): two workers split it.
 *
 * Workers and a ring of PQ_POOL_JOBS jobs. The writer's thread encodes a
 * page into a free job's body (pq_pool_acquire), queues it
 * (pq_pool_submit), and goes on encoding. A worker takes the oldest queued
 * job, compresses its body with its own codec into the job's out buffer
 * (page header + bytes), and marks it done; then, under the lock, whichever
 * worker finds the oldest jobs done appends their out buffers to their
 * destinations (the columns' chunk buffers) in submission order, so every
 * column's pages stay in order whatever the workers' timing. Before the
 * writer reads a chunk buffer (row-group flush) it drains the queue, which
 * also publishes the buffers to it (the mutex orders the workers' writes
 * before the writer's reads).
 *
 * Job states, all under mu (jobs [tail, head) are in flight, [take, head)
 * queued, the rest free):
 *
 *   free --acquire (writer fills body)--> filled --submit--> queued
 *   queued --a worker takes it at take, take++--> compressing
 *   compressing --out filled, done--> done
 *   done at tail --appended to dst, tail++--> free
 *
 * Invariants: tail <= take <= head <= tail + PQ_POOL_JOBS; the writer
 * touches only the job at head (not yet queued) and, after a drain, the
 * destinations; a worker touches only the job it took, its own codec and
 * scratch, and, under mu, the destinations of done jobs at tail. The first
 * error sticks in rc (with its message, since fr_pq_errmsg is per thread)
 * and is returned by every later acquire and drain; jobs after it are
 * skipped (not appended).
 */
#include "parquet/parquet_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct pq_job {
    struct fr_buf body;
    struct fr_buf out; /* header + compressed bytes, until appended */
    struct pq_page pg;
    struct fr_buf *dst;
    uint64_t *uncomp;
    uint64_t uncomp_add;
    size_t out_seen; /* out.alloc counted in out_alloc; under mu */
    bool done;
};

struct pq_worker {
    struct pq_pool *pool;
    pthread_t thread;
    bool started;
    struct pq_codec *codec;
    struct fr_buf comp;
    size_t comp_seen; /* comp.alloc, as of the last job; under mu */
};

struct pq_pool {
    struct pq_worker workers[PQ_POOL_MAX_WORKERS];
    unsigned nworkers;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* a job was queued, or stop */
    pthread_cond_t cv_done; /* a job was appended */
    struct pq_job jobs[PQ_POOL_JOBS];
    unsigned head, take, tail;
    bool stop;
    int rc;
    char msg[256];
    int codec_id;
    size_t out_alloc; /* the jobs' out buffers; under mu */
    atomic_size_t appended;
    atomic_size_t comp_alloc; /* the workers' scratch and out buffers, for pq_pool_mem */
};

/* Under mu: append the done jobs at tail, in order. */
static void pool_retire(struct pq_pool *p)
{
    while (p->tail != p->take && p->jobs[p->tail % PQ_POOL_JOBS].done) {
        struct pq_job *j = &p->jobs[p->tail % PQ_POOL_JOBS];
        if (!p->rc) {
            int rc = fr_buf_append(j->dst, j->out.data, j->out.len);
            if (rc < 0) {
                p->rc = rc;
                snprintf(p->msg, sizeof p->msg, "%s",
                         rc == FR_ETOOBIG ? "column buffer full" : fr_strerror(rc));
            } else {
                *j->uncomp += j->uncomp_add;
                atomic_fetch_add_explicit(&p->appended, j->out.len, memory_order_relaxed);
            }
        }
        j->done = false;
        p->tail++;
        pthread_cond_broadcast(&p->cv_done);
    }
}

static void *pool_main(void *arg)
{
    struct pq_worker *wk = arg;
    struct pq_pool *p = wk->pool;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->take == p->head && !p->stop) {
            pthread_cond_wait(&p->cv_work, &p->mu);
        }
        if (p->take == p->head) {
            break; /* stop, and nothing left */
        }
        struct pq_job *j = &p->jobs[p->take % PQ_POOL_JOBS];
        p->take++;
        int failed = p->rc;
        pthread_mutex_unlock(&p->mu);
        int rc = FR_OK;
        fr_buf_reset(&j->out);
        j->uncomp_add = 0;
        if (!failed) {
            rc = pq_emit_page(wk->codec, p->codec_id, &wk->comp, &j->pg,
                              j->body.data ? j->body.data : (const uint8_t *)"", j->body.len,
                              &j->out, &j->uncomp_add);
        }
        pthread_mutex_lock(&p->mu);
        wk->comp_seen = wk->comp.alloc;
        p->out_alloc += j->out.alloc - j->out_seen;
        j->out_seen = j->out.alloc;
        size_t mem = p->out_alloc;
        for (unsigned i = 0; i < p->nworkers; i++) {
            mem += p->workers[i].comp_seen;
        }
        atomic_store_explicit(&p->comp_alloc, mem, memory_order_relaxed);
        if (rc < 0 && !p->rc) {
            p->rc = rc;
            snprintf(p->msg, sizeof p->msg, "%s",
                     fr_pq_errmsg()[0] ? fr_pq_errmsg() : fr_strerror(rc));
        }
        j->done = true;
        pool_retire(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int pq_pool_new(struct pq_pool **pool, unsigned nworkers, int codec_id, int zstd_level,
                size_t body_cap, size_t comp_cap)
{
    if (nworkers < 1 || nworkers > PQ_POOL_MAX_WORKERS) {
        return pq_err(FR_EINVAL, "compress_workers must be 0 to %d", PQ_POOL_MAX_WORKERS);
    }
    struct pq_pool *p = calloc(1, sizeof *p);
    if (!p) {
        return FR_ENOMEM;
    }
    p->codec_id = codec_id;
    p->nworkers = nworkers;
    for (int i = 0; i < PQ_POOL_JOBS; i++) {
        fr_buf_init(&p->jobs[i].body, body_cap);
        /* a page: its header (a few dozen bytes) and its bytes, compressed
         * or (without a codec) not */
        fr_buf_init(&p->jobs[i].out, (body_cap > comp_cap ? body_cap : comp_cap) + 256);
    }
    atomic_init(&p->appended, 0);
    atomic_init(&p->comp_alloc, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    int rc = FR_OK;
    for (unsigned i = 0; i < nworkers && rc == FR_OK; i++) {
        struct pq_worker *wk = &p->workers[i];
        wk->pool = p;
        fr_buf_init(&wk->comp, comp_cap);
        rc = pq_codec_new(&wk->codec, zstd_level);
        if (rc == FR_OK && pthread_create(&wk->thread, NULL, pool_main, wk) != 0) {
            rc = pq_err(FR_EAGAIN, "cannot start a compression thread");
        }
        wk->started = rc == FR_OK;
    }
    if (rc < 0) {
        pq_pool_free(p);
        return rc;
    }
    *pool = p;
    return FR_OK;
}

void pq_pool_free(struct pq_pool *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (p->workers[i].started) {
            pthread_join(p->workers[i].thread, NULL);
        }
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    for (int i = 0; i < PQ_POOL_JOBS; i++) {
        fr_buf_free(&p->jobs[i].body);
        fr_buf_free(&p->jobs[i].out);
    }
    for (unsigned i = 0; i < p->nworkers; i++) {
        fr_buf_free(&p->workers[i].comp);
        pq_codec_free(p->workers[i].codec);
    }
    free(p);
}

int pq_pool_acquire(struct pq_pool *p, struct fr_buf **body)
{
    pthread_mutex_lock(&p->mu);
    while (p->head - p->tail == PQ_POOL_JOBS && !p->rc) {
        pthread_cond_wait(&p->cv_done, &p->mu);
    }
    int rc = p->rc;
    if (rc) {
        pq_err(rc, "%s", p->msg);
    }
    struct pq_job *j = &p->jobs[p->head % PQ_POOL_JOBS];
    pthread_mutex_unlock(&p->mu);
    fr_buf_reset(&j->body);
    *body = &j->body;
    return rc;
}

void pq_pool_submit(struct pq_pool *p, const struct pq_page *pg, struct fr_buf *dst,
                    uint64_t *uncomp)
{
    pthread_mutex_lock(&p->mu);
    struct pq_job *j = &p->jobs[p->head % PQ_POOL_JOBS];
    j->pg = *pg;
    j->dst = dst;
    j->uncomp = uncomp;
    p->head++;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

int pq_pool_drain(struct pq_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->tail != p->head) {
        pthread_cond_wait(&p->cv_done, &p->mu);
    }
    int rc = p->rc;
    if (rc) {
        pq_err(rc, "%s", p->msg);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

size_t pq_pool_appended(const struct pq_pool *p)
{
    return atomic_load_explicit(&((struct pq_pool *)p)->appended, memory_order_relaxed);
}

size_t pq_pool_mem(const struct pq_pool *p)
{
    size_t n = sizeof *p +
               atomic_load_explicit(&((struct pq_pool *)p)->comp_alloc, memory_order_relaxed);
    for (int i = 0; i < PQ_POOL_JOBS; i++) {
        n += p->jobs[i].body.alloc;
    }
    return n;
}
