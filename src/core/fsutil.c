/*
 * fsutil.c — durable filesystem helpers. Errors map through
 * fr_err_from_errno so ENOSPC surfaces as FR_ENOSPC everywhere.
 */
#include "core/fsutil.h"

#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fr_fs_mkdirs(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) {
        return FR_EINVAL;
    }
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }
        *p = 0;
        if (mkdir(tmp, mode) < 0 && errno != EEXIST) {
            return fr_err_from_errno(errno);
        }
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST) {
        return fr_err_from_errno(errno);
    }
    return FR_OK;
}

int fr_fs_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    int rc = fsync(fd) < 0 ? fr_err_from_errno(errno) : FR_OK;
    close(fd);
    return rc;
}

int fr_fs_parent_dir(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *from = slash ? path : ".";
    size_t len = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path); /* "/name": "/" */
    if (len >= cap) {
        return FR_EINVAL;
    }
    memcpy(dir, from, len);
    dir[len] = 0;
    return FR_OK;
}

int fr_fs_fsync_parent(const char *path)
{
    char dir[PATH_MAX];
    int rc = fr_fs_parent_dir(path, dir, sizeof dir);
    return rc < 0 ? rc : fr_fs_fsync_dir(dir);
}

int fr_fs_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return fr_err_from_errno(errno);
        }
        p += n;
        len -= (size_t)n;
    }
    return FR_OK;
}

int fr_fs_pwrite_all(int fd, const void *data, size_t len, off_t off)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return fr_err_from_errno(errno);
        }
        if (n == 0) {
            return FR_EIO;
        }
        p += n;
        off += n;
        len -= (size_t)n;
    }
    return FR_OK;
}

int fr_fs_pread_all(int fd, void *data, size_t len, off_t off)
{
    char *p = data;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return fr_err_from_errno(errno);
        }
        if (n == 0) {
            return FR_ETRUNC;
        }
        p += n;
        off += n;
        len -= (size_t)n;
    }
    return FR_OK;
}

/* The recipe, with the fsyncs (durable) or without (a view file that a
 * crash may leave old but never torn); fill writes the new contents. */
static int replace_with(const char *path, int (*fill)(void *arg, int fd), void *arg, int durable)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        return FR_EINVAL;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    int rc = fill(arg, fd);
    if (rc == FR_OK && durable && fsync(fd) < 0) {
        rc = fr_err_from_errno(errno);
    }
    if (close(fd) < 0 && rc == FR_OK) {
        rc = fr_err_from_errno(errno);
    }
    if (rc == FR_OK && rename(tmp, path) < 0) {
        rc = fr_err_from_errno(errno);
    }
    if (rc != FR_OK) {
        unlink(tmp);
        return rc;
    }
    return durable ? fr_fs_fsync_parent(path) : FR_OK;
}

struct fill_bytes {
    const void *data;
    size_t len;
};

static int fill_bytes(void *arg, int fd)
{
    const struct fill_bytes *fb = arg;
    return fr_fs_write_all(fd, fb->data, fb->len);
}

static int write_replace(const char *path, const void *data, size_t len, int durable)
{
    struct fill_bytes fb = {data, len};
    return replace_with(path, fill_bytes, &fb, durable);
}

int fr_fs_write_atomic_with(const char *path, int (*fill)(void *arg, int fd), void *arg)
{
    return replace_with(path, fill, arg, 1);
}

int fr_fs_write_atomic(const char *path, const void *data, size_t len)
{
    return write_replace(path, data, len, 1);
}

int fr_fs_write_replace(const char *path, const void *data, size_t len)
{
    return write_replace(path, data, len, 0);
}

int fr_fs_read_file(const char *path, struct fr_buf *buf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fr_err_from_errno(errno);
    }
    int rc = FR_OK;
    for (;;) {
        rc = fr_buf_reserve(buf, 65536 < buf->cap - buf->len ? 65536 : buf->cap - buf->len);
        if (rc < 0) {
            break;
        }
        size_t room = buf->alloc - buf->len - 1;
        if (room == 0) {
            /* At the cap: one more byte means the file is too large. */
            char probe;
            ssize_t n = read(fd, &probe, 1);
            rc = n > 0 ? FR_ETOOBIG : FR_OK;
            break;
        }
        ssize_t n = read(fd, buf->data + buf->len, room);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rc = fr_err_from_errno(errno);
            break;
        }
        if (n == 0) {
            break;
        }
        buf->len += (size_t)n;
    }
    close(fd);
    return rc;
}
