/*
 * log_int.h — private to src/log: the handle bases every backend embeds,
 * the embedded backend's on-disk formats (segment.c), its writer
 * (writer.c), reader (reader.c) and listing (list.c). Nothing here is part
 * of the interface; other stages include only log.h.
 *
 * Files of one partition, under <data_dir>/log/<topic>/<partition>/:
 *   00000000000000000000.seg  segments, named by base offset (20 digits)
 *   durable                   the published durable end (two 64-byte slots)
 *   lock                      flock'd by the one writer; holds its pid
 */
#ifndef FR_LOG_INT_H
#define FR_LOG_INT_H

#include "log/log.h"

#include <limits.h>
#include <stdint.h>

/* Every handle starts with its backend's ops, so fr_log_* can dispatch. */
struct fr_log {
    const struct fr_log_ops *ops;
};
struct fr_log_reader {
    const struct fr_log_ops *ops;
};

/* ---- On-disk format (byte tables in segment.c) --------------------------- */

#define FR_LOG_SEG_HDR 32   /* segment file header */
#define FR_LOG_FRAME_HDR 48 /* fixed part of a record frame */
#define FR_LOG_FRAME_MIN 40 /* smallest value of a frame's len field */
#define FR_LOG_FRAME_MAGIC 0xF1
#define FR_LOG_HDR_ENTRY 6   /* u16 name_len + u32 value_len before each header */
#define FR_LOG_MARK_SLOT 64  /* one slot of the durable marker */
#define FR_LOG_MARK_FILE 128 /* two slots */
#define FR_LOG_SEG_SUFFIX ".seg"
#define FR_LOG_MARK_NAME "durable"
#define FR_LOG_LOCK_NAME "lock"

struct fr_log_seghdr {
    int64_t base;       /* offset of the segment's first record */
    int64_t created_ms; /* wall clock at creation (informational) */
};

/* The durable end as published by the writer after each fsync. */
struct fr_log_mark {
    uint64_t seq;           /* the valid slot with the larger seq wins */
    int64_t end_offset;     /* offset after the last durable record */
    int64_t seg_base;       /* base of the active segment */
    int64_t seg_bytes;      /* durable bytes of the active segment */
    int64_t last_seg;       /* base of the segment holding end_offset - 1; -1 none */
    int64_t last_pos;       /* byte position of that record; -1 none */
    int64_t last_append_ms; /* its append time; -1 none */
};

void fr_log_seghdr_encode(uint8_t out[FR_LOG_SEG_HDR], const struct fr_log_seghdr *hdr);
/* FR_ETRUNC when len is short, FR_ECORRUPT on a bad magic, version or CRC. */
int fr_log_seghdr_decode(const uint8_t *in, size_t len, struct fr_log_seghdr *out);

/* Bytes of rec framed (header entries included); 0 when a field is too big. */
size_t fr_log_frame_size(const struct fr_log_rec *rec);
/* Frame rec at out (fr_log_frame_size bytes) with the given offset and time. */
void fr_log_frame_encode(uint8_t *out, const struct fr_log_rec *rec, int64_t offset,
                         int64_t append_time);
/* Total bytes of the frame starting at p (8 + len), after checking the len
 * field: FR_ETRUNC when fewer than 8 bytes are available, FR_ECORRUPT when
 * len is out of range. */
int fr_log_frame_total(const uint8_t *p, size_t avail, size_t *total);
/* Decode and verify the complete frame p[0..total): FR_ECRC on a checksum
 * mismatch, FR_ECORRUPT on inconsistent fields. rec's pointers point into
 * p; hdrs receives up to FR_LOG_MAX_HEADERS headers. */
int fr_log_frame_decode(const uint8_t *p, size_t total, struct fr_log_rec *rec,
                        struct fr_log_header *hdrs);

void fr_log_mark_encode(uint8_t out[FR_LOG_MARK_SLOT], const struct fr_log_mark *mark);
/* The better of the two slots in file[0..len): FR_OK, or FR_ENOTFOUND
 * when neither slot is valid. */
int fr_log_mark_decode(const uint8_t *file, size_t len, struct fr_log_mark *out);

/* What a scan of one segment file found. */
struct fr_log_scan {
    int header_ok; /* 0: no valid header (the whole file is a torn tail) */
    int64_t base;
    int64_t records;     /* valid records */
    int64_t end_offset;  /* base + records */
    int64_t valid_bytes; /* header + valid frames (0 without a header) */
    int64_t file_bytes;
    int64_t first_append_ms; /* -1 when empty */
    int64_t last_append_ms;  /* -1 when empty */
    int64_t last_pos;        /* position of the last valid frame, -1 when empty */
};
/*
 * Verify the segment fd (named path, base offset base) frame by frame.
 * strict (sealed data): any invalid byte is an error. Otherwise (the last
 * segment) a final invalid suffix with no valid frame after it is a torn
 * tail: FR_OK with valid_bytes < file_bytes. An invalid frame followed by a
 * valid one is corruption of sealed data: FR_ECRC or FR_ECORRUPT, with an
 * fr_error naming the file and the byte position.
 */
int fr_log_seg_scan(int fd, const char *path, int64_t base, int strict, struct fr_log_scan *out);

/* ---- Names and paths ------------------------------------------------------ */

int fr_log_topic_valid(const char *topic);
/* <data_dir>/log/<topic>/<partition> into out (PATH_MAX). */
int fr_log_part_dir(char out[PATH_MAX], const char *data_dir, const char *topic, int32_t partition);
/* <dir>/<20-digit base>.seg into out (PATH_MAX). */
int fr_log_seg_path(char out[PATH_MAX], const char *dir, int64_t base);
/* The base offsets of the segments in dir, ascending, in a malloc'd array
 * (*bases NULL when *count is 0). FR_ENOTFOUND when dir does not exist. */
int fr_log_seg_list(const char *dir, int64_t **bases, size_t *count);
/* Read the marker file at path: FR_OK, FR_ENOTFOUND (absent or no valid slot). */
int fr_log_mark_load(int fd, struct fr_log_mark *out);

/* UTF-8 well-formedness (no overlongs, surrogates or code points past U+10FFFF). */
int fr_log_utf8_valid(const void *data, size_t len);

/* ---- Embedded backend entry points (writer.c, reader.c) -------------------- */

int fr_log_emb_open(const char *data_dir, const char *topic, const struct fr_log_opts *opts,
                    struct fr_log **out);
int fr_log_emb_append(struct fr_log *log, int32_t partition, const struct fr_log_rec *rec,
                      int64_t *out_offset);
int fr_log_emb_flush(struct fr_log *log);
int fr_log_emb_maybe_flush(struct fr_log *log, int64_t now_ms);
int64_t fr_log_emb_next_flush_in(struct fr_log *log, int64_t now_ms);
int64_t fr_log_emb_durable_end(struct fr_log *log, int32_t partition);
int32_t fr_log_emb_partitions(struct fr_log *log);
int fr_log_emb_last(struct fr_log *log, int32_t partition, struct fr_log_rec *rec);
int fr_log_emb_recovery(struct fr_log *log, int32_t partition, struct fr_log_recovery *out);
int fr_log_emb_retention_run(struct fr_log *log, int64_t now_ms);
void fr_log_emb_close(struct fr_log *log);

int fr_log_emb_reader_open(const char *data_dir, const char *topic, int32_t partition,
                           int64_t from_offset, const struct fr_log_opts *opts,
                           struct fr_log_reader **out);
int fr_log_emb_reader_next(struct fr_log_reader *reader, struct fr_log_rec *out, int timeout_ms);
int64_t fr_log_emb_reader_end(struct fr_log_reader *reader);
void fr_log_emb_reader_close(struct fr_log_reader *reader);

#endif
