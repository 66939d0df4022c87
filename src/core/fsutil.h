/*
 * fsutil.h — the filesystem recipes every stage shares.
 *
 * fr_fs_write_atomic is the one durable-write recipe (after Redis's
 * rewriteAppendOnlyFile): write a temporary file beside the target, fsync
 * it, rename over the target, fsync the directory. A crash at any point
 * leaves either the old file or the new one, never a torn mix.
 */
#ifndef FR_FSUTIL_H
#define FR_FSUTIL_H

#include "core/buf.h"

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p. Existing directories are fine. */
int fr_fs_mkdirs(const char *path, mode_t mode);
/* fsync the directory itself so that creates and renames in it are durable. */
int fr_fs_fsync_dir(const char *dir);
/* The directory that contains path into dir: "." for a bare name, "/" for
 * "/name". FR_EINVAL when it does not fit in cap bytes. */
int fr_fs_parent_dir(const char *path, char *dir, size_t cap);
/* fsync the directory that contains path. */
int fr_fs_fsync_parent(const char *path);
/* Durably replace path with data (see above). */
int fr_fs_write_atomic(const char *path, const void *data, size_t len);
/* fr_fs_write_atomic with the contents written by fill(arg, fd) into the
 * temporary file's descriptor, so they need not be in memory at once: the
 * target is replaced only when fill returns FR_OK; on its error (returned)
 * the temporary is removed and the target unchanged. Same thread. */
int fr_fs_write_atomic_with(const char *path, int (*fill)(void *arg, int fd), void *arg);
/* Replace path with data atomically (temporary, rename) without the
 * fsyncs: for files that are views, not data (a crash may leave the old
 * version, never a torn one). */
int fr_fs_write_replace(const char *path, const void *data, size_t len);
/* Read a whole file into buf (appending); FR_ETOOBIG when it exceeds buf's cap. */
int fr_fs_read_file(const char *path, struct fr_buf *buf);
/* Write all of len bytes, retrying short writes and EINTR. */
int fr_fs_write_all(int fd, const void *data, size_t len);
/* pwrite all of len bytes at off, retrying short writes and EINTR. */
int fr_fs_pwrite_all(int fd, const void *data, size_t len, off_t off);
/* pread all of len bytes at off; FR_ETRUNC when the file ends first. */
int fr_fs_pread_all(int fd, void *data, size_t len, off_t off);

#endif
