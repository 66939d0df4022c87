/*
 * pool.c — the writer's background compression thread (opts.compress_workers
 * = 1). Compression is about half of the writer's time on real data (zstd
 * level 3 on the silver table), so a second core halves the wall time.
 *
 * One worker and a ring of PQ_POOL_JOBS jobs. The writer's thread encodes a
 * page into a free job's body (pq_pool_acquire), queues it
 * (pq_pool_submit), and goes on encoding; the worker compresses the body and
 * appends header + bytes to the job's destination (the column's chunk
 * buffer). One worker taking jobs first-in first-out keeps every column's
 * pages in order. Before the writer reads a chunk buffer (row-group flush)
 * it drains the queue, which also publishes the buffers to it (the mutex
 * orders the worker's writes before the writer's reads).
 *
 * Job states, all under mu (jobs [tail, head) are queued, the rest free):
 *
 *   free --acquire (writer fills body)--> filled --submit--> queued
 *   queued --worker takes it at tail--> compressing --done, tail++--> free
 *
 * Invariants: head - tail <= PQ_POOL_JOBS; the writer touches only the job
 * at head (not yet queued) and, after a drain, the destinations; the worker
 * touches only the job at tail. The first error sticks in rc (with its
 * message, since fr_pq_errmsg is per thread) and is returned by every later
 * acquire and drain; queued jobs after it are skipped.
 */
#include "parquet/parquet_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct pq_job {
    struct fr_buf body;
    const uint8_t *src; /* NULL: compress body; else src_len bytes the writer keeps */
    size_t src_len;
    struct pq_page pg;
    enum pq_comp_mode mode;
    struct fr_buf *dst;
    uint64_t *uncomp;
};

struct pq_pool {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* a job was queued, or stop */
    pthread_cond_t cv_done; /* a job finished */
    struct pq_job jobs[PQ_POOL_JOBS];
    unsigned head, tail;
    bool stop;
    int rc;
    char msg[256];
    int codec_id;
    struct pq_codec *codec;
    struct fr_buf comp;
    atomic_size_t appended;
    atomic_size_t comp_alloc; /* the worker's scratch, for pq_pool_mem */
};

static void *pool_main(void *arg)
{
    struct pq_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->tail == p->head && !p->stop) {
            pthread_cond_wait(&p->cv_work, &p->mu);
        }
        if (p->tail == p->head) {
            break; /* stop, and nothing left */
        }
        struct pq_job *j = &p->jobs[p->tail % PQ_POOL_JOBS];
        int failed = p->rc;
        pthread_mutex_unlock(&p->mu);
        int rc = FR_OK;
        if (!failed) {
            size_t before = j->dst->len;
            const uint8_t *src = j->src ? j->src : j->body.data;
            size_t len = j->src ? j->src_len : j->body.len;
            rc = pq_emit_page(p->codec, p->codec_id, j->mode, &p->comp, &j->pg,
                              src ? src : (const uint8_t *)"", len, j->dst, j->uncomp);
            if (rc == FR_OK) {
                atomic_fetch_add_explicit(&p->appended, j->dst->len - before,
                                          memory_order_relaxed);
            }
            atomic_store_explicit(&p->comp_alloc, p->comp.alloc, memory_order_relaxed);
        }
        pthread_mutex_lock(&p->mu);
        if (rc < 0 && !p->rc) {
            p->rc = rc;
            snprintf(p->msg, sizeof p->msg, "%s", fr_pq_errmsg()[0] ? fr_pq_errmsg() : fr_strerror(rc));
        }
        p->tail++;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int pq_pool_new(struct pq_pool **pool, int codec_id, int zstd_level, size_t body_cap,
                size_t comp_cap)
{
    struct pq_pool *p = calloc(1, sizeof *p);
    if (!p) {
        return FR_ENOMEM;
    }
    p->codec_id = codec_id;
    for (int i = 0; i < PQ_POOL_JOBS; i++) {
        fr_buf_init(&p->jobs[i].body, body_cap);
    }
    fr_buf_init(&p->comp, comp_cap);
    atomic_init(&p->appended, 0);
    atomic_init(&p->comp_alloc, 0);
    int rc = pq_codec_new(&p->codec, zstd_level);
    if (rc < 0) {
        free(p);
        return rc;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    if (pthread_create(&p->thread, NULL, pool_main, p) != 0) {
        pq_pool_free(p);
        return pq_err(FR_EAGAIN, "cannot start the compression thread");
    }
    p->started = true;
    *pool = p;
    return FR_OK;
}

void pq_pool_free(struct pq_pool *p)
{
    if (!p) {
        return;
    }
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_signal(&p->cv_work);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    for (int i = 0; i < PQ_POOL_JOBS; i++) {
        fr_buf_free(&p->jobs[i].body);
    }
    fr_buf_free(&p->comp);
    pq_codec_free(p->codec);
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

static void submit(struct pq_pool *p, enum pq_comp_mode mode, const struct pq_page *pg,
                   const uint8_t *src, size_t len, struct fr_buf *dst, uint64_t *uncomp)
{
    pthread_mutex_lock(&p->mu);
    struct pq_job *j = &p->jobs[p->head % PQ_POOL_JOBS];
    j->src = src;
    j->src_len = len;
    j->pg = *pg;
    j->mode = mode;
    j->dst = dst;
    j->uncomp = uncomp;
    p->head++;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

void pq_pool_submit(struct pq_pool *p, enum pq_comp_mode mode, const struct pq_page *pg,
                    struct fr_buf *dst, uint64_t *uncomp)
{
    submit(p, mode, pg, NULL, 0, dst, uncomp);
}

void pq_pool_submit_src(struct pq_pool *p, const struct pq_page *pg, const uint8_t *src, size_t len,
                        struct fr_buf *dst, uint64_t *uncomp)
{
    submit(p, PQ_COMP_DEFAULT, pg, src, len, dst, uncomp);
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
