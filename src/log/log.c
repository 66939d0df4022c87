/*
 * log.c — the public fr_log_* functions: option defaults, the real file
 * effects (fr_log_io_posix), the embedded backend's ops table, and the thin
 * dispatch through each handle's ops so a second backend (librdkafka) can
 * be added without touching callers. Stateless: thread-safety is that of
 * the handle passed in.
 */
#include "log/log_int.h"

#include "core/clock.h"
#include "core/err.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static ssize_t posix_pwrite(void *ctx, int fd, const void *buf, size_t len, off_t off)
{
    (void)ctx;
    return pwrite(fd, buf, len, off);
}

static int posix_sync(void *ctx, int fd)
{
    (void)ctx;
    return fdatasync(fd);
}

static int posix_ftruncate(void *ctx, int fd, off_t len)
{
    (void)ctx;
    return ftruncate(fd, len);
}

static int64_t posix_wall_ms(void *ctx)
{
    (void)ctx;
    return fr_wall_ms();
}

static int64_t posix_mono_ms(void *ctx)
{
    (void)ctx;
    return fr_mono_ms();
}

static void posix_writeback(void *ctx, int fd, off_t off, off_t len)
{
    (void)ctx;
    sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE);
}

const struct fr_log_io fr_log_io_posix = {
    .pwrite = posix_pwrite,
    .sync = posix_sync,
    .ftruncate = posix_ftruncate,
    .wall_ms = posix_wall_ms,
    .mono_ms = posix_mono_ms,
    .writeback = posix_writeback,
};

static int emb_stat(const char *data_dir, const char *topic, int32_t partition,
                    const struct fr_log_opts *opts, struct fr_log_info *out)
{
    (void)opts;
    return fr_log_stat(data_dir, topic, partition, out);
}

const struct fr_log_ops fr_log_embedded = {
    .name = "embedded",
    .open = fr_log_emb_open,
    .append = fr_log_emb_append,
    .flush = fr_log_emb_flush,
    .maybe_flush = fr_log_emb_maybe_flush,
    .next_flush_in = fr_log_emb_next_flush_in,
    .durable_end = fr_log_emb_durable_end,
    .partitions = fr_log_emb_partitions,
    .last = fr_log_emb_last,
    .recovery = fr_log_emb_recovery,
    .retention_run = fr_log_emb_retention_run,
    .close = fr_log_emb_close,
    .reader_open = fr_log_emb_reader_open,
    .reader_next = fr_log_emb_reader_next,
    .reader_end = fr_log_emb_reader_end,
    .reader_close = fr_log_emb_reader_close,
    .stat = emb_stat,
};

void fr_log_opts_init(struct fr_log_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->partitions = 1;
    opts->segment_bytes = 128LL * 1024 * 1024;
    opts->fsync_interval_ms = 50;
    opts->fsync_bytes = 4LL * 1024 * 1024;
    opts->write_buffer_bytes = 8LL * 1024 * 1024;
    opts->write_chunk_bytes = 1024 * 1024;
    opts->max_record_bytes = 8LL * 1024 * 1024;
    opts->retention_ms = 7LL * 24 * 3600 * 1000;
    opts->retention_bytes = 0;
}

int fr_log_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                struct fr_log **out)
{
    struct fr_log_opts defaults;
    if (!out) {
        return FR_EINVAL;
    }
    if (!opts) {
        fr_log_opts_init(&defaults);
        opts = &defaults;
    }
    const struct fr_log_ops *ops = opts->backend ? opts->backend : &fr_log_embedded;
    return ops->open(data_dir, topic, opts, out);
}

int fr_log_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                  int64_t *out_offset)
{
    return log->ops->append(log, partition, rec, out_offset);
}

int fr_log_flush(struct fr_log *log)
{
    return log->ops->flush(log);
}

int fr_log_maybe_flush(struct fr_log *log, int64_t now_ms)
{
    return log->ops->maybe_flush(log, now_ms);
}

int64_t fr_log_next_flush_in(struct fr_log *log, int64_t now_ms)
{
    return log->ops->next_flush_in(log, now_ms);
}

int64_t fr_log_durable_end(struct fr_log *log, int32_t partition)
{
    return log->ops->durable_end(log, partition);
}

int32_t fr_log_partitions(struct fr_log *log)
{
    return log->ops->partitions(log);
}

int fr_log_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec)
{
    return log->ops->last(log, partition, rec);
}

int fr_log_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out)
{
    return log->ops->recovery(log, partition, out);
}

int fr_log_retention_run(struct fr_log *log, int64_t now_ms)
{
    return log->ops->retention_run(log, now_ms);
}

void fr_log_close(struct fr_log *log)
{
    if (log) {
        log->ops->close(log);
    }
}

int fr_log_reader_open(const char *data_dir, const char *topic, int32_t partition,
                       int64_t from_offset, const struct fr_log_opts *opts,
                       struct fr_log_reader **out)
{
    if (!out) {
        return FR_EINVAL;
    }
    const struct fr_log_ops *ops = opts && opts->backend ? opts->backend : &fr_log_embedded;
    return ops->reader_open(data_dir, topic, partition, from_offset, opts, out);
}

int fr_log_stat_with(const char *data_dir, const char *topic, int32_t partition,
                     const struct fr_log_opts *opts, struct fr_log_info *out)
{
    const struct fr_log_ops *ops = opts && opts->backend ? opts->backend : &fr_log_embedded;
    return ops->stat(data_dir, topic, partition, opts, out);
}

int fr_log_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms)
{
    return reader->ops->reader_next(reader, out, timeout_ms);
}

int64_t fr_log_reader_end(struct fr_log_reader *reader)
{
    return reader->ops->reader_end(reader);
}

void fr_log_reader_close(struct fr_log_reader *reader)
{
    if (reader) {
        reader->ops->reader_close(reader);
    }
}

int fr_log_rec_header(const struct fr_log_rec *rec, const char *name, const void **value,
                      size_t *len)
{
    size_t name_len = strlen(name);
    for (size_t i = 0; i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        if (h->name_len == name_len && memcmp(h->name, name, name_len) == 0) {
            *value = h->value;
            *len = h->value_len;
            return 1;
        }
    }
    return 0;
}

int fr_log_partition_count(const char *data_dir, const char *topic,
                           const struct fr_log_opts *opts, int max)
{
    int n = 0;
    struct fr_log_info info;
    while (n < max && fr_log_stat_with(data_dir, topic, n, opts, &info) == FR_OK) {
        n++;
    }
    return n;
}
