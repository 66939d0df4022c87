/*
 * bgsync.c — the background fdatasync thread (bgsync.h).
 *
 * State, all under mu: a ring of up to FR_BGSYNC_QUEUE descriptors waiting
 * (head, n), whether the thread has started, how many requests are queued
 * or running (outstanding: a drain waits for zero), and the counters. The
 * thread takes a descriptor, drops the lock for the fdatasync and the
 * close, and signals idle when nothing is outstanding. It is detached and
 * lives as long as the process; it holds no memory of its own.
 */
#include "core/bgsync.h"

#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static int ring[FR_BGSYNC_QUEUE];
static uint32_t head, n, outstanding;
static int started;
static struct fr_bgsync_stats st;

static void *bgsync_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (n == 0) {
            pthread_cond_wait(&work, &mu);
        }
        int fd = ring[head];
        head = (head + 1) % FR_BGSYNC_QUEUE;
        n--;
        pthread_mutex_unlock(&mu);
        int failed = fdatasync(fd) < 0;
        close(fd);
        pthread_mutex_lock(&mu);
        st.done++;
        st.failed += (uint64_t)failed;
        if (--outstanding == 0) {
            pthread_cond_broadcast(&idle);
        }
    }
    return NULL;
}

/* Called with mu held. */
static int bgsync_start(void)
{
    if (started) {
        return FR_OK;
    }
    pthread_attr_t attr;
    pthread_t tid;
    if (pthread_attr_init(&attr) != 0) {
        return FR_ENOMEM;
    }
    /* The default stack: only the pages it touches are resident, and a
     * small one would not hold the process's thread-local storage. */
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&tid, &attr, bgsync_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        return fr_err_from_errno(rc);
    }
    started = 1;
    return FR_OK;
}

int fr_bgsync_file(const char *path)
{
    pthread_mutex_lock(&mu);
    int rc = n == FR_BGSYNC_QUEUE ? FR_EAGAIN : bgsync_start();
    int fd = -1;
    if (rc == FR_OK) {
        /* Opened under the lock so the ring has room for it; an open of a
         * file just written is a lookup in the dentry cache. */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        rc = fd < 0 ? fr_err_from_errno(errno) : FR_OK;
    }
    if (rc == FR_OK) {
        ring[(head + n) % FR_BGSYNC_QUEUE] = fd;
        n++;
        outstanding++;
        st.requested++;
        pthread_cond_signal(&work);
    } else {
        st.dropped++;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

void fr_bgsync_drain(void)
{
    pthread_mutex_lock(&mu);
    while (outstanding > 0) {
        pthread_cond_wait(&idle, &mu);
    }
    pthread_mutex_unlock(&mu);
}

void fr_bgsync_stats(struct fr_bgsync_stats *out)
{
    pthread_mutex_lock(&mu);
    *out = st;
    pthread_mutex_unlock(&mu);
}
