/*
 * syncset.c — a bounded set of files and directories to fsync together
 * (syncset.h). State: the held descriptors with their paths, the held
 * directory paths (no duplicates), counters; one mutex over all of it.
 */
#include "core/syncset.h"

#include "core/err.h"
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct held_file {
    int fd;
    char *path;
};

struct fr_syncset {
    pthread_mutex_t mu;
    struct held_file files[FR_SYNCSET_FILES];
    char *dirs[FR_SYNCSET_DIRS];
    uint32_t nfiles, ndirs;
    struct fr_syncset_stats st;
    char what[PATH_MAX + 32];
};

struct fr_syncset *fr_syncset_new(void)
{
    struct fr_syncset *s = calloc(1, sizeof *s);
    if (s && pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void fr_syncset_free(struct fr_syncset *s)
{
    if (!s) {
        return;
    }
    (void)fr_syncset_flush(s, NULL);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Hold dir unless held; with the directory part full, fsync it now.
 * Called with the mutex held. */
static int hold_dir(struct fr_syncset *s, const char *path)
{
    char dir[PATH_MAX];
    int rc = fr_fs_parent_dir(path, dir, sizeof dir);
    if (rc < 0) {
        return rc;
    }
    for (uint32_t i = 0; i < s->ndirs; i++) {
        if (strcmp(s->dirs[i], dir) == 0) {
            return FR_OK;
        }
    }
    if (s->ndirs < FR_SYNCSET_DIRS) {
        char *copy = strdup(dir);
        if (copy) {
            s->dirs[s->ndirs++] = copy;
            return FR_OK;
        }
    }
    s->st.immediate++;
    return fr_fs_fsync_dir(dir);
}

int fr_syncset_add_file(struct fr_syncset *s, int fd, const char *path)
{
    pthread_mutex_lock(&s->mu);
    int rc = FR_OK;
    char *copy = s->nfiles < FR_SYNCSET_FILES ? strdup(path) : NULL;
    if (copy) {
        s->files[s->nfiles++] = (struct held_file){fd, copy};
        /* Start the writeback now (advisory; errors are the fsync's): the
         * blocks are allocated in the journal's running transaction, so the
         * flush's first fsync commits them all and the later ones find
         * their data written and their inode committed (ADR 0029). */
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    } else {
        s->st.immediate++;
        rc = fsync(fd) < 0 ? fr_err_from_errno(errno) : FR_OK;
        close(fd);
    }
    if (rc == FR_OK) {
        rc = hold_dir(s, path);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fr_syncset_add_parent(struct fr_syncset *s, const char *path)
{
    pthread_mutex_lock(&s->mu);
    int rc = hold_dir(s, path);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Note the first error and what it concerned. */
static void first_error(struct fr_syncset *s, int *rc, int err, const char *path)
{
    if (*rc == FR_OK && err < 0) {
        *rc = err;
        snprintf(s->what, sizeof s->what, "%s", path);
    }
}

int fr_syncset_flush(struct fr_syncset *s, const char **what)
{
    pthread_mutex_lock(&s->mu);
    int rc = FR_OK;
    s->what[0] = 0;
    if (s->nfiles || s->ndirs) {
        s->st.flushes++;
    }
    /* Files, then directories: on ext4 a file's fsync commits the journal
     * transaction that also holds the new names, so the directories'
     * fsyncs that follow find little left to write. */
    for (uint32_t i = 0; i < s->nfiles; i++) {
        struct held_file *f = &s->files[i];
        if (rc == FR_OK) {
            first_error(s, &rc, fsync(f->fd) < 0 ? fr_err_from_errno(errno) : FR_OK, f->path);
            s->st.files++;
        }
        close(f->fd);
        free(f->path);
    }
    for (uint32_t i = 0; i < s->ndirs; i++) {
        if (rc == FR_OK) {
            first_error(s, &rc, fr_fs_fsync_dir(s->dirs[i]), s->dirs[i]);
            s->st.dirs++;
        }
        free(s->dirs[i]);
    }
    s->nfiles = s->ndirs = 0;
    if (what) {
        *what = s->what;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void fr_syncset_stats(struct fr_syncset *s, struct fr_syncset_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->pending = s->nfiles;
    out->pending_dirs = s->ndirs;
    pthread_mutex_unlock(&s->mu);
}
