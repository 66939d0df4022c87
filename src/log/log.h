/*
 * log.h — the durable log: topics made of partitions, partitions made of
 * records with dense offsets. This is the interface every stage uses; the
 * embedded backend (segment files under <data_dir>/log/) and the Kafka
 * backend (src/kafka, librdkafka; selected through fr_log_opts.backend) sit
 * behind the same ops table. Design and on-disk format: docs/adr/0002;
 * Kafka: docs/adr/0013.
 *
 * Shape (after Kafka): a record has an offset (assigned by the log, dense
 * per partition, starting at 0), a producer timestamp, an append time (set
 * by the log, never decreasing within a partition), a key, headers
 * (name -> bytes, names are UTF-8, duplicates allowed) and a payload.
 *
 * Delivery contract:
 *   - fr_log_append buffers (full chunks may reach the kernel early, but no
 *     reader sees them). A record is ACKNOWLEDGED once fr_log_durable_end of
 *     its partition passes its offset; an fr_log_flush that returns FR_OK
 *     guarantees that for everything appended before it. It is then on
 *     stable storage and never changes.
 *   - Readers in any process see a record only once it is acknowledged.
 *   - A failed flush (FR_ENOSPC, FR_EIO) keeps the unflushed records
 *     buffered with their offsets; the next flush retries them, so an offset
 *     never names two different records. While the buffer is full and the
 *     disk still refuses, append fails with the flush's error and accepts
 *     nothing (backpressure). After a failure, automatic flushes (by
 *     maybe_flush, or by append on a full buffer) back off for
 *     max(fsync_interval_ms, 100 ms) instead of hammering a full disk;
 *     fr_log_flush always tries.
 *
 * Threads: a struct fr_log and a struct fr_log_reader each belong to one
 * thread at a time (no internal locking). Any number of readers, in any
 * number of processes, may follow a partition that one writer appends to;
 * a second writer on the same partition gets FR_ELOCKED.
 *
 * Ownership: callers own everything they pass in; the log copies what it
 * keeps. Records handed out (fr_log_reader_next, fr_log_last) point into
 * memory owned by the handle, valid until the next call on that handle.
 */
#ifndef FR_LOG_H
#define FR_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fr_log;        /* a writer: one topic, all its partitions (opaque) */
struct fr_log_reader; /* a reader: one partition, from one offset on (opaque) */

/* Hard limits of the embedded format. */
#define FR_LOG_MAX_HEADERS 64               /* headers per record */
#define FR_LOG_MAX_FRAME (64 * 1024 * 1024) /* bytes of one framed record */
#define FR_LOG_MAX_TOPIC 249                /* topic name length (Kafka's) */

/* Special start offsets for fr_log_reader_open (Kafka's values). */
#define FR_LOG_OFFSET_END (-1)      /* the durable end: only records appended later */
#define FR_LOG_OFFSET_EARLIEST (-2) /* the earliest retained record */

struct fr_log_header {
    const char *name; /* UTF-8, not NUL-terminated in records read back */
    size_t name_len;  /* 1..65535 */
    const void *value;
    size_t value_len;
};

struct fr_log_rec {
    int64_t offset;      /* set by the log; ignored by append */
    int64_t timestamp;   /* producer's create time, ms since the epoch, kept as given */
    int64_t append_time; /* set by the log (wall clock ms); ignored by append */
    const void *key;     /* key_len == 0: no key */
    size_t key_len;
    const struct fr_log_header *headers;
    size_t header_count; /* <= FR_LOG_MAX_HEADERS */
    const void *payload;
    size_t payload_len;
};

/*
 * File effects of the embedded writer, an ops table so tests can inject
 * faults (ENOSPC after N bytes, failing fsync) and control the clocks. The
 * functions follow POSIX conventions: -1 with errno set on failure; pwrite
 * may write less than asked. fr_log_io_posix is the real thing; copy it and
 * replace members to inject faults. All members must be set.
 */
struct fr_log_io {
    ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t len, off_t off);
    int (*sync)(void *ctx, int fd); /* fdatasync(fd) in the real table */
    int (*ftruncate)(void *ctx, int fd, off_t len);
    int64_t (*wall_ms)(void *ctx); /* append times, segment creation times */
    int64_t (*mono_ms)(void *ctx); /* group-commit timer; same clock as fr_mono_ms */
    /* Advisory: start writing back [off, off+len) now (sync_file_range
     * SYNC_FILE_RANGE_WRITE in the real table); its result is ignored. */
    void (*writeback)(void *ctx, int fd, off_t off, off_t len);
};
extern const struct fr_log_io fr_log_io_posix;

struct fr_log_ops;
struct fr_log_info;

/* Writer options. Initialise with fr_log_opts_init, then override. */
struct fr_log_opts {
    /* NULL: the embedded segment log. */
    const struct fr_log_ops *backend;
    /* Passed to the backend's open, reader_open and stat (the Kafka
     * backend's client settings, src/kafka/kafka.h); owned by the caller,
     * must outlive every handle opened with these options. NULL for the
     * embedded log. */
    void *backend_ctx;
    /* Open at least this many partitions (1..1024); default 1. */
    int32_t partitions;
    /* Roll the active segment when the next record would pass this; 128 MiB. */
    int64_t segment_bytes;
    /* Group commit (fr_log_maybe_flush): flush once the oldest pending
     * record waited fsync_interval_ms (default 50; 0: at every call), or
     * once fsync_bytes are pending over all partitions (default 4 MiB). */
    int64_t fsync_interval_ms;
    int64_t fsync_bytes;
    /* Per partition cap on unflushed bytes; a full buffer flushes; 8 MiB. */
    int64_t write_buffer_bytes;
    /* Hand unflushed frames to the kernel in chunks of this size before the
     * flush is due and start their writeback, so that writeback overlaps
     * appending (never visible to readers before the flush); 0: write only
     * at flush; default 1 MiB. */
    int64_t write_chunk_bytes;
    /* Largest framed record accepted (<= FR_LOG_MAX_FRAME); 8 MiB. */
    int64_t max_record_bytes;
    /* Retention (fr_log_retention_run); <= 0 disables. 7 days; no size limit. */
    int64_t retention_ms;
    int64_t retention_bytes;
    /* File effects; NULL: fr_log_io_posix. io_ctx is passed to each call. */
    const struct fr_log_io *io;
    void *io_ctx;
};
void fr_log_opts_init(struct fr_log_opts *opts);

/* What opening a partition cut from a torn tail (crash mid-append). */
struct fr_log_recovery {
    int64_t bytes_cut;        /* bytes truncated from the end of the last segment */
    int64_t records_cut;      /* partial records discarded: 1 when a tail was cut, else 0 */
    int64_t segments_removed; /* last segments that never got a complete header */
    int64_t end_offset;       /* durable end after recovery */
};

/*
 * The backend ops table. The fr_log_* functions below dispatch through it;
 * a backend fills every member. Semantics are those of the functions.
 */
struct fr_log_ops {
    const char *name;
    int (*open)(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                struct fr_log **out);
    int (*append)(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                  int64_t *out_offset);
    int (*flush)(struct fr_log *log);
    int (*maybe_flush)(struct fr_log *log, int64_t now_ms);
    int64_t (*next_flush_in)(struct fr_log *log, int64_t now_ms);
    int64_t (*durable_end)(struct fr_log *log, int32_t partition);
    int32_t (*partitions)(struct fr_log *log);
    int (*last)(struct fr_log *log, int32_t partition, struct fr_log_rec *rec);
    int (*recovery)(struct fr_log *log, int32_t partition, struct fr_log_recovery *out);
    int (*retention_run)(struct fr_log *log, int64_t now_ms);
    void (*close)(struct fr_log *log);
    int (*reader_open)(const char *data_dir, const char *topic, int32_t partition,
                       int64_t from_offset, const struct fr_log_opts *opts,
                       struct fr_log_reader **out);
    int (*reader_next)(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms);
    int64_t (*reader_end)(struct fr_log_reader *reader);
    void (*reader_close)(struct fr_log_reader *reader);
    int (*stat)(const char *data_dir, const char *topic, int32_t partition,
                const struct fr_log_opts *opts, struct fr_log_info *out);
};
extern const struct fr_log_ops fr_log_embedded;

/* ---- Writer ------------------------------------------------------------ */

/*
 * Open topic for writing, creating it if absent; opts NULL means defaults.
 * Takes an exclusive lock on every partition (FR_ELOCKED, with a message
 * naming the holder's pid, when another writer has one) and recovers each:
 * a torn tail of the last segment is truncated (see fr_log_recovery and the
 * warning on stderr); corruption inside sealed data fails with FR_ECRC or
 * FR_ECORRUPT and a message naming the file and byte position. Partitions
 * already on disk beyond opts->partitions are opened too (never removed).
 * Topic names: 1..249 of [A-Za-z0-9._-], not "." or "..". Free with
 * fr_log_close.
 */
int fr_log_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                struct fr_log **out);
/*
 * Buffer rec for partition and assign its offset (*out_offset, may be NULL).
 * Not yet acknowledged (see the contract above). May flush this partition
 * itself, when its buffer is full or the active segment must roll; such a
 * flush's error is returned and the record is then not appended.
 * FR_ETOOBIG: larger than max_record_bytes; FR_EINVAL: bad partition or
 * header; FR_EUTF8: a header name that is not UTF-8.
 */
int fr_log_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                  int64_t *out_offset);
/* Write every buffered record, fdatasync, publish the new durable ends to
 * readers. FR_OK acknowledges everything appended before the call. */
int fr_log_flush(struct fr_log *log);
/* Apply the group-commit policy: flush when fsync_bytes are pending or the
 * oldest pending record waited fsync_interval_ms. now_ms is fr_mono_ms().
 * Returns 1 when it flushed, 0 when not due, < 0 on a flush error. */
int fr_log_maybe_flush(struct fr_log *log, int64_t now_ms);
/* Milliseconds until maybe_flush will be due (0: now), -1 when nothing is
 * pending: a poll timeout for the caller's loop. */
int64_t fr_log_next_flush_in(struct fr_log *log, int64_t now_ms);
/* The offset after the last acknowledged record of partition (0 when
 * empty), or FR_EINVAL for a bad partition. */
int64_t fr_log_durable_end(struct fr_log *log, int32_t partition);
int32_t fr_log_partitions(struct fr_log *log);
/* The last acknowledged record of partition into rec: 1 found, 0 empty,
 * < 0 error. Ingest reads its `sse_id` header to resume. */
int fr_log_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec);
/* What open cut from partition's torn tail. */
int fr_log_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out);
/*
 * Delete whole sealed segments of every partition, oldest first: by size
 * (Kafka's rule: while the partition would still hold retention_bytes
 * without the segment) and by age (while every record of the segment has an
 * append time older than now_ms - retention_ms; now_ms is wall-clock ms).
 * Never deletes the active segment, nor the one holding the last record.
 * Returns the number of segments deleted, or < 0.
 */
int fr_log_retention_run(struct fr_log *log, int64_t now_ms);
/* Flush what is buffered (a failure is reported on stderr: those records
 * were never acknowledged), release the locks, free. Accepts NULL. */
void fr_log_close(struct fr_log *log);

/* ---- Reader ------------------------------------------------------------ */

/*
 * Follow one partition from from_offset (or FR_LOG_OFFSET_EARLIEST /
 * FR_LOG_OFFSET_END). Needs no lock and works while a writer appends in
 * another process. FR_ENOTFOUND: no such topic/partition; FR_ERANGE: the
 * offset is below the earliest retained one (use FR_LOG_OFFSET_EARLIEST to
 * start there) or beyond the durable end. opts may be NULL (defaults); it
 * selects the backend. Free with fr_log_reader_close.
 */
int fr_log_reader_open(const char *data_dir, const char *topic, int32_t partition,
                       int64_t from_offset, const struct fr_log_opts *opts,
                       struct fr_log_reader **out);
/*
 * The next acknowledged record: 1 with *out filled (pointers valid until the
 * next call or close), 0 when none arrived within timeout_ms (0: do not
 * wait, < 0: wait forever). Waiting sleeps on inotify, never spins.
 * FR_ECRC / FR_ECORRUPT (with a message naming file and position) on bad
 * data; FR_ERANGE when retention deleted the segment the reader needs next.
 */
int fr_log_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms);
/* The durable end the reader last saw (refreshed by reader_next). */
int64_t fr_log_reader_end(struct fr_log_reader *reader);
/* Accepts NULL. */
void fr_log_reader_close(struct fr_log_reader *reader);

/* Find header name in rec: 1 and *value / *len set, 0 when absent. */
int fr_log_rec_header(const struct fr_log_rec *rec, const char *name, const void **value,
                      size_t *len);

/* ---- Listing ----------------------------------------------------------- */

struct fr_log_info {
    char topic[FR_LOG_MAX_TOPIC + 1];
    int32_t partition;
    int64_t earliest_offset; /* base offset of the oldest segment */
    int64_t end_offset;      /* durable end (as published to readers) */
    int64_t segments;
    int64_t bytes;            /* total size of the segment files */
    int64_t oldest_append_ms; /* -1 when empty */
    int64_t newest_append_ms; /* -1 when empty */
};

/*
 * Describe every topic/partition under <data_dir>/log (no lock; a summary
 * from segment names, sizes and the published durable end, not a verifier).
 * *out is an array of *count entries sorted by topic then partition, freed
 * with free(). An absent log directory gives zero entries.
 */
int fr_log_list(const char *data_dir, struct fr_log_info **out, size_t *count);
/* The same for one partition; FR_ENOTFOUND when it does not exist. */
int fr_log_stat(const char *data_dir, const char *topic, int32_t partition,
                struct fr_log_info *out);
/* fr_log_stat through the backend opts selects (NULL: embedded). For Kafka:
 * FR_ENOTFOUND beyond the topic's partitions; earliest/end offsets are the
 * watermarks; sizes and times are -1 (unknown). */
int fr_log_stat_with(const char *data_dir, const char *topic, int32_t partition,
                     const struct fr_log_opts *opts, struct fr_log_info *out);
/* How many partitions topic has (0, 1, ... up to max: the first that
 * fr_log_stat_with does not find ends the count). */
int fr_log_partition_count(const char *data_dir, const char *topic,
                           const struct fr_log_opts *opts, int max);

#endif
