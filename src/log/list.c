/*
 * list.c — describe the topics and partitions of an embedded log directory
 * (`freshet log list`). Read-only and lock-free: it may run while a writer
 * appends and retention deletes, so a segment that vanishes between the
 * directory listing and its stat is simply not counted. A summary, not a
 * verifier: it reads segment names and sizes, the published durable
 * marker and the fixed header of the oldest record only.
 */
#include "log/log_int.h"

#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Append time of the first record of segment base, or -1 when it has none. */
static int64_t first_append(const char *dir, int64_t base)
{
    char path[PATH_MAX];
    uint8_t frame[FR_LOG_FRAME_HDR];
    if (fr_log_seg_path(path, dir, base) != FR_OK) {
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = fr_fs_pread_all(fd, frame, sizeof frame, FR_LOG_SEG_HDR);
    close(fd);
    if (rc != FR_OK || frame[8] != FR_LOG_FRAME_MAGIC) {
        return -1;
    }
    int64_t t = 0;
    for (int i = 7; i >= 0; i--) {
        t = t << 8 | frame[32 + i];
    }
    return t;
}

int fr_log_stat(const char *data_dir, const char *topic, int32_t partition, struct fr_log_info *out)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int64_t *bases = NULL;
    size_t n = 0;
    struct fr_log_mark mark = {0};
    int rc = fr_log_part_dir(dir, data_dir, topic, partition);
    if (rc != FR_OK) {
        goto cleanup;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->topic, sizeof out->topic, "%s", topic);
    out->partition = partition;
    rc = fr_log_seg_list(dir, &bases, &n);
    if (rc != FR_OK) {
        goto cleanup;
    }
    if (snprintf(path, sizeof path, "%s/" FR_LOG_MARK_NAME, dir) < (int)sizeof path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (fr_log_mark_load(fd, &mark) != FR_OK) {
                memset(&mark, 0, sizeof mark);
            }
            close(fd);
        }
    }
    out->end_offset = mark.end_offset;
    out->oldest_append_ms = out->newest_append_ms = -1;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (fr_log_seg_path(path, dir, bases[i]) == FR_OK && stat(path, &st) == 0) {
            out->segments++;
            out->bytes += (int64_t)st.st_size;
        }
    }
    out->earliest_offset = n ? bases[0] : mark.end_offset;
    if (out->earliest_offset > out->end_offset) {
        out->earliest_offset = out->end_offset; /* all retained records are unpublished */
    }
    if (out->end_offset > out->earliest_offset) {
        out->oldest_append_ms = first_append(dir, bases[0]);
        out->newest_append_ms = mark.last_append_ms;
    }

cleanup:
    free(bases);
    return rc;
}

static int cmp_info(const void *a, const void *b)
{
    const struct fr_log_info *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* Append the partitions of topic to *arr. */
static int list_topic(const char *data_dir, const char *topic, struct fr_log_info **arr, size_t *n,
                      size_t *cap)
{
    enum { MAX_ENTRIES = 1 << 20 };
    char path[PATH_MAX];
    int rc = FR_OK;
    if (snprintf(path, sizeof path, "%s/log/%s", data_dir, topic) >= (int)sizeof path) {
        return FR_EINVAL;
    }
    DIR *d = opendir(path);
    if (!d) {
        return FR_OK; /* not a directory, or removed meanwhile */
    }
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *s = ent->d_name;
        size_t len = strlen(s);
        if (len == 0 || len > 4 || strspn(s, "0123456789") != len || (len > 1 && s[0] == '0')) {
            continue;
        }
        if (*n == *cap) {
            if (*cap >= MAX_ENTRIES) {
                rc = FR_ETOOBIG;
                break;
            }
            size_t ncap = *cap ? *cap * 2 : 8;
            struct fr_log_info *narr = realloc(*arr, ncap * sizeof *narr);
            if (!narr) {
                rc = FR_ENOMEM;
                break;
            }
            *arr = narr;
            *cap = ncap;
        }
        int src = fr_log_stat(data_dir, topic, (int32_t)atoi(s), &(*arr)[*n]);
        if (src == FR_OK) {
            (*n)++;
        } else if (src != FR_ENOTFOUND) {
            rc = src;
            break;
        }
    }
    closedir(d);
    return rc;
}

int fr_log_list(const char *data_dir, struct fr_log_info **out, size_t *count)
{
    char path[PATH_MAX];
    struct fr_log_info *arr = NULL;
    size_t n = 0, cap = 0;
    int rc = FR_OK;
    DIR *d = NULL;
    if (snprintf(path, sizeof path, "%s/log", data_dir) >= (int)sizeof path) {
        rc = FR_EINVAL;
        goto cleanup;
    }
    d = opendir(path);
    if (!d) {
        rc = errno == ENOENT ? FR_OK : fr_err_from_errno(errno);
        goto cleanup;
    }
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (!fr_log_topic_valid(ent->d_name)) {
            continue;
        }
        rc = list_topic(data_dir, ent->d_name, &arr, &n, &cap);
        if (rc != FR_OK) {
            goto cleanup;
        }
    }
    if (n > 1) {
        qsort(arr, n, sizeof *arr, cmp_info);
    }

cleanup:
    if (d) {
        closedir(d);
    }
    if (rc != FR_OK) {
        free(arr);
        arr = NULL;
        n = 0;
    }
    *out = arr;
    *count = n;
    return rc;
}
