/*
 * segment.c — the embedded log's on-disk formats: segment header, record
 * frame, durable marker; and the segment scan that tells a torn tail from
 * corruption. Pure encoding plus read-only file access: no state, safe from
 * any thread. The writer (writer.c) and readers (reader.c, list.c) both
 * build on it. All integers are little-endian.
 *
 * ==== Segment file <base:020>.seg ==========================================
 *
 *   header (32 bytes), written and fsynced before any record:
 *     off len field
 *       0   4  magic "FRLS"
 *       4   1  format version = 1
 *       5   3  zero
 *       8   8  base_offset   int64, equals the file name
 *      16   8  created_ms    int64, wall clock at creation (informational)
 *      24   4  zero
 *      28   4  crc32c of bytes 0..27
 *   then frames, back to back, offsets base, base+1, ... with no gaps.
 *
 * ==== Record frame (48 bytes + variable part) ===============================
 *
 *     off len field
 *       0   4  crc32c of bytes 4 .. 8+len-1 (everything after this field)
 *       4   4  len: bytes after this field = 40 + key_len + headers_len + payload_len
 *       8   1  frame magic 0xF1 (doubles as the frame version)
 *       9   1  attributes = 0 (reserved)
 *      10   2  header_count (<= 64)
 *      12   4  key_len
 *      16   8  offset        int64, dense within the partition
 *      24   8  timestamp     int64 ms, the producer's create time
 *      32   8  append_time   int64 ms, set by the log, never decreasing
 *      40   4  headers_len   bytes of the header entries
 *      44   4  payload_len
 *      48      key[key_len]
 *              header entries: u16 name_len, u32 value_len, name, value
 *              payload[payload_len]
 *
 *   The CRC covers the len field, so a damaged length is caught too.
 *
 * ==== Durable marker file "durable" (two 64-byte slots) =====================
 *
 *     off len field (per slot; slot k at byte 64*k, written alternately)
 *       0   4  magic "FRD1" (version in the last byte)
 *       4   4  crc32c of bytes 8..63
 *       8   8  seq            uint64, the valid slot with the larger seq wins
 *      16   8  end_offset     offset after the last durable record
 *      24   8  seg_base       base of the active segment
 *      32   8  seg_bytes      durable bytes of the active segment
 *      40   8  last_seg       segment holding record end_offset-1 (-1: none)
 *      48   8  last_pos       its byte position (-1: none)
 *      56   8  last_append_ms its append time (-1: none)
 *
 *   A reader that races a slot write sees a bad CRC in that slot and uses
 *   the other, older one: never a value ahead of the data.
 *
 * ==== Torn tail versus corruption ===========================================
 *
 *   Only the last segment can hold unacknowledged bytes: a segment is
 *   fsynced whole before the next one is created. In the last segment, the
 *   first invalid frame starts a torn tail only if no valid frame follows
 *   it anywhere in the file (a crash leaves a prefix of the last write: a
 *   partial length, a partial body, zeros, garbage). A valid frame after an
 *   invalid one means acknowledged data was damaged: that is reported,
 *   never cut.
 */
#include "log/log_int.h"

#include "core/crc32c.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(FR_LOG_SEG_HDR == 32, "segment header is 32 bytes");
static_assert(FR_LOG_FRAME_HDR == 48, "frame header is 48 bytes");
static_assert(FR_LOG_FRAME_MIN == FR_LOG_FRAME_HDR - 8, "len counts the bytes after itself");
static_assert(FR_LOG_MARK_SLOT == 64 && FR_LOG_MARK_FILE == 2 * FR_LOG_MARK_SLOT,
              "marker is two 64-byte slots");
static_assert(FR_LOG_MAX_FRAME <= UINT32_MAX, "frame length fits its u32 field");
static_assert(FR_LOG_MAX_HEADERS <= UINT16_MAX, "header count fits its u16 field");

static const uint8_t seg_magic[4] = {'F', 'R', 'L', 'S'};
static const uint8_t mark_magic[4] = {'F', 'R', 'D', '1'};
#define SEG_VERSION 1

/* ---- Little-endian helpers ------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    /* two little-endian halves: GCC makes this one load (the loop it was
     * stayed eight, ~70 instructions a record in the reader) */
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- Segment header ---------------------------------------------------------- */

void fr_log_seghdr_encode(uint8_t out[FR_LOG_SEG_HDR], const struct fr_log_seghdr *hdr)
{
    memset(out, 0, FR_LOG_SEG_HDR);
    memcpy(out, seg_magic, 4);
    out[4] = SEG_VERSION;
    put64(out + 8, (uint64_t)hdr->base);
    put64(out + 16, (uint64_t)hdr->created_ms);
    put32(out + 28, fr_crc32c(0, out, 28));
}

int fr_log_seghdr_decode(const uint8_t *in, size_t len, struct fr_log_seghdr *out)
{
    if (len < FR_LOG_SEG_HDR) {
        return FR_ETRUNC;
    }
    if (memcmp(in, seg_magic, 4) != 0 || in[4] != SEG_VERSION ||
        get32(in + 28) != fr_crc32c(0, in, 28)) {
        return FR_ECORRUPT;
    }
    out->base = (int64_t)get64(in + 8);
    out->created_ms = (int64_t)get64(in + 16);
    return out->base < 0 ? FR_ECORRUPT : FR_OK;
}

/* ---- Record frame ------------------------------------------------------------ */

size_t fr_log_frame_size(const struct fr_log_rec *rec)
{
    uint64_t total = FR_LOG_FRAME_HDR;
    total += rec->key_len;
    total += rec->payload_len;
    for (size_t i = 0; i < rec->header_count; i++) {
        total += FR_LOG_HDR_ENTRY + rec->headers[i].name_len + rec->headers[i].value_len;
    }
    if (rec->key_len > UINT32_MAX || rec->payload_len > UINT32_MAX || total > FR_LOG_MAX_FRAME) {
        return 0;
    }
    return (size_t)total;
}

void fr_log_frame_encode(uint8_t *out, const struct fr_log_rec *rec, int64_t offset,
                         int64_t append_time)
{
    uint8_t *p = out + FR_LOG_FRAME_HDR;
    if (rec->key_len) {
        memcpy(p, rec->key, rec->key_len);
        p += rec->key_len;
    }
    uint8_t *hstart = p;
    for (size_t i = 0; i < rec->header_count; i++) {
        const struct fr_log_header *h = &rec->headers[i];
        put16(p, (uint16_t)h->name_len);
        put32(p + 2, (uint32_t)h->value_len);
        p += FR_LOG_HDR_ENTRY;
        memcpy(p, h->name, h->name_len);
        p += h->name_len;
        if (h->value_len) {
            memcpy(p, h->value, h->value_len);
            p += h->value_len;
        }
    }
    size_t headers_len = (size_t)(p - hstart);
    if (rec->payload_len) {
        memcpy(p, rec->payload, rec->payload_len);
        p += rec->payload_len;
    }
    size_t total = (size_t)(p - out);
    put32(out + 4, (uint32_t)(total - 8));
    out[8] = FR_LOG_FRAME_MAGIC;
    out[9] = 0;
    put16(out + 10, (uint16_t)rec->header_count);
    put32(out + 12, (uint32_t)rec->key_len);
    put64(out + 16, (uint64_t)offset);
    put64(out + 24, (uint64_t)rec->timestamp);
    put64(out + 32, (uint64_t)append_time);
    put32(out + 40, (uint32_t)headers_len);
    put32(out + 44, (uint32_t)rec->payload_len);
    put32(out, fr_crc32c(0, out + 4, total - 4));
}

int fr_log_frame_total(const uint8_t *p, size_t avail, size_t *total)
{
    if (avail < 8) {
        return FR_ETRUNC;
    }
    uint32_t len = get32(p + 4);
    if (len < FR_LOG_FRAME_MIN || len > FR_LOG_MAX_FRAME - 8) {
        return FR_ECORRUPT;
    }
    *total = (size_t)len + 8;
    return FR_OK;
}

int fr_log_frame_decode(const uint8_t *p, size_t total, struct fr_log_rec *rec,
                        struct fr_log_header *hdrs)
{
    if (total < FR_LOG_FRAME_HDR || get32(p + 4) != total - 8) {
        return FR_ECORRUPT;
    }
    if (get32(p) != fr_crc32c(0, p + 4, total - 4)) {
        return FR_ECRC;
    }
    if (p[8] != FR_LOG_FRAME_MAGIC || p[9] != 0) {
        return FR_ECORRUPT;
    }
    size_t count = get16(p + 10);
    uint64_t key_len = get32(p + 12);
    uint64_t headers_len = get32(p + 40);
    uint64_t payload_len = get32(p + 44);
    if (count > FR_LOG_MAX_HEADERS ||
        FR_LOG_FRAME_HDR + key_len + headers_len + payload_len != total) {
        return FR_ECORRUPT;
    }
    const uint8_t *h = p + FR_LOG_FRAME_HDR + key_len;
    const uint8_t *hend = h + headers_len;
    for (size_t i = 0; i < count; i++) {
        if ((size_t)(hend - h) < FR_LOG_HDR_ENTRY) {
            return FR_ECORRUPT;
        }
        size_t name_len = get16(h);
        size_t value_len = get32(h + 2);
        h += FR_LOG_HDR_ENTRY;
        if (name_len == 0 || (size_t)(hend - h) < name_len ||
            (size_t)(hend - h) - name_len < value_len) {
            return FR_ECORRUPT;
        }
        hdrs[i].name = (const char *)h;
        hdrs[i].name_len = name_len;
        hdrs[i].value = h + name_len;
        hdrs[i].value_len = value_len;
        h += name_len + value_len;
    }
    if (h != hend) {
        return FR_ECORRUPT;
    }
    rec->offset = (int64_t)get64(p + 16);
    rec->timestamp = (int64_t)get64(p + 24);
    rec->append_time = (int64_t)get64(p + 32);
    rec->key = p + FR_LOG_FRAME_HDR;
    rec->key_len = (size_t)key_len;
    rec->headers = hdrs;
    rec->header_count = count;
    rec->payload = hend;
    rec->payload_len = (size_t)payload_len;
    return FR_OK;
}

/* ---- Durable marker ---------------------------------------------------------- */

void fr_log_mark_encode(uint8_t out[FR_LOG_MARK_SLOT], const struct fr_log_mark *mark)
{
    memcpy(out, mark_magic, 4);
    put64(out + 8, mark->seq);
    put64(out + 16, (uint64_t)mark->end_offset);
    put64(out + 24, (uint64_t)mark->seg_base);
    put64(out + 32, (uint64_t)mark->seg_bytes);
    put64(out + 40, (uint64_t)mark->last_seg);
    put64(out + 48, (uint64_t)mark->last_pos);
    put64(out + 56, (uint64_t)mark->last_append_ms);
    put32(out + 4, fr_crc32c(0, out + 8, FR_LOG_MARK_SLOT - 8));
}

static int mark_slot(const uint8_t *p, struct fr_log_mark *out)
{
    if (memcmp(p, mark_magic, 4) != 0 ||
        get32(p + 4) != fr_crc32c(0, p + 8, FR_LOG_MARK_SLOT - 8)) {
        return FR_ECORRUPT;
    }
    out->seq = get64(p + 8);
    out->end_offset = (int64_t)get64(p + 16);
    out->seg_base = (int64_t)get64(p + 24);
    out->seg_bytes = (int64_t)get64(p + 32);
    out->last_seg = (int64_t)get64(p + 40);
    out->last_pos = (int64_t)get64(p + 48);
    out->last_append_ms = (int64_t)get64(p + 56);
    if (out->end_offset < 0 || out->seg_base < 0 || out->seg_bytes < FR_LOG_SEG_HDR) {
        return FR_ECORRUPT;
    }
    return FR_OK;
}

int fr_log_mark_decode(const uint8_t *file, size_t len, struct fr_log_mark *out)
{
    struct fr_log_mark slots[2];
    int ok[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        if (len >= (size_t)(i + 1) * FR_LOG_MARK_SLOT) {
            ok[i] = mark_slot(file + i * FR_LOG_MARK_SLOT, &slots[i]) == FR_OK;
        }
    }
    if (!ok[0] && !ok[1]) {
        return FR_ENOTFOUND;
    }
    int best = !ok[0] ? 1 : !ok[1] ? 0 : slots[1].seq > slots[0].seq ? 1 : 0;
    *out = slots[best];
    return FR_OK;
}

int fr_log_mark_load(int fd, struct fr_log_mark *out)
{
    uint8_t file[FR_LOG_MARK_FILE];
    ssize_t n;
    do {
        n = pread(fd, file, sizeof file, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return fr_err_from_errno(errno);
    }
    return fr_log_mark_decode(file, (size_t)n, out);
}

/* ---- Segment scan ------------------------------------------------------------ */

/* Is there a complete frame with a valid CRC starting anywhere in
 * m[from, size)? Returns its position or -1. The magic byte and the length
 * range filter candidates, so garbage and zeros cost one compare a byte. */
static int64_t scan_find_valid(const uint8_t *m, size_t size, size_t from)
{
    for (size_t q = from; q + FR_LOG_FRAME_HDR <= size; q++) {
        if (m[q + 8] != FR_LOG_FRAME_MAGIC) {
            continue;
        }
        size_t total;
        if (fr_log_frame_total(m + q, size - q, &total) != FR_OK || total > size - q) {
            continue;
        }
        if (get32(m + q) == fr_crc32c(0, m + q + 4, total - 4)) {
            return (int64_t)q;
        }
    }
    return -1;
}

static const char *scan_what(int rc)
{
    switch (rc) {
    case FR_ECRC:
        return "checksum mismatch";
    case FR_ETRUNC:
        return "record cut short";
    default:
        return "malformed record";
    }
}

int fr_log_seg_scan(int fd, const char *path, int64_t base, int strict, struct fr_log_scan *out)
{
    struct fr_log_header hdrs[FR_LOG_MAX_HEADERS];
    uint8_t *m = NULL;
    size_t size = 0;
    int rc = FR_OK;
    memset(out, 0, sizeof *out);
    out->base = base;
    out->end_offset = base;
    out->first_append_ms = out->last_append_ms = out->last_pos = -1;

    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    size = (size_t)st.st_size;
    out->file_bytes = (int64_t)size;
    if (size > 0) {
        m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            m = NULL;
            rc = fr_err_from_errno(errno);
            goto cleanup;
        }
        madvise(m, size, MADV_SEQUENTIAL);
    }

    struct fr_log_seghdr hdr;
    int hrc = fr_log_seghdr_decode(m, size, &hdr);
    if (hrc == FR_OK && hdr.base != base) {
        fr_error("log", "%s: header names base offset %lld, the file name %lld", path,
                 (long long)hdr.base, (long long)base);
        rc = FR_ECORRUPT;
        goto cleanup;
    }
    if (hrc != FR_OK) {
        /* A header is fsynced before any record is written, so a bad one
         * is a torn creation, unless records follow it. */
        if (strict || scan_find_valid(m, size, 0) >= 0) {
            fr_error("log", "%s: bad segment header (%s)", path, fr_strerror(hrc));
            rc = FR_ECORRUPT;
        }
        goto cleanup;
    }
    out->header_ok = 1;

    size_t pos = FR_LOG_SEG_HDR;
    while (pos < size) {
        size_t total = 0;
        struct fr_log_rec rec;
        int frc = fr_log_frame_total(m + pos, size - pos, &total);
        if (frc == FR_OK && total > size - pos) {
            frc = FR_ETRUNC;
        }
        if (frc == FR_OK) {
            frc = fr_log_frame_decode(m + pos, total, &rec, hdrs);
        }
        if (frc == FR_OK && rec.offset != out->end_offset) {
            /* A checksummed frame in the wrong place is never a torn write. */
            fr_error("log", "%s: record at byte %zu has offset %lld, expected %lld", path, pos,
                     (long long)rec.offset, (long long)out->end_offset);
            rc = FR_ECORRUPT;
            goto cleanup;
        }
        if (frc != FR_OK) {
            int64_t next = strict ? (int64_t)pos : scan_find_valid(m, size, pos + 1);
            if (next >= 0) {
                fr_error("log",
                         "%s: %s at byte %zu (record offset %lld) inside sealed data%s; not a "
                         "torn tail, refusing to cut it. To discard from there (losing every "
                         "record from offset %lld on) truncate the file to %zu bytes",
                         path, scan_what(frc), pos, (long long)out->end_offset,
                         strict ? "" : ", valid records follow", (long long)out->end_offset, pos);
                rc = frc == FR_ECRC ? FR_ECRC : FR_ECORRUPT;
            }
            break;
        }
        if (out->first_append_ms < 0) {
            out->first_append_ms = rec.append_time;
        }
        out->last_append_ms = rec.append_time;
        out->last_pos = (int64_t)pos;
        out->records++;
        out->end_offset++;
        pos += total;
    }
    out->valid_bytes = (int64_t)pos;

cleanup:
    if (m) {
        munmap(m, size);
    }
    return rc;
}

/* ---- Names and paths --------------------------------------------------------- */

int fr_log_topic_valid(const char *topic)
{
    size_t len = topic ? strlen(topic) : 0;
    if (len == 0 || len > FR_LOG_MAX_TOPIC || strcmp(topic, ".") == 0 || strcmp(topic, "..") == 0) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = topic[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

int fr_log_part_dir(char out[PATH_MAX], const char *data_dir, const char *topic, int32_t partition)
{
    if (!fr_log_topic_valid(topic) || partition < 0) {
        return FR_EINVAL;
    }
    int n = snprintf(out, PATH_MAX, "%s/log/%s/%d", data_dir, topic, (int)partition);
    return n < 0 || n >= PATH_MAX ? FR_EINVAL : FR_OK;
}

int fr_log_seg_path(char out[PATH_MAX], const char *dir, int64_t base)
{
    int n = snprintf(out, PATH_MAX, "%s/%020lld" FR_LOG_SEG_SUFFIX, dir, (long long)base);
    return n < 0 || n >= PATH_MAX ? FR_EINVAL : FR_OK;
}

static int seg_parse_name(const char *name, int64_t *base)
{
    size_t len = strlen(name);
    if (len != 20 + strlen(FR_LOG_SEG_SUFFIX) || strcmp(name + 20, FR_LOG_SEG_SUFFIX) != 0) {
        return 0;
    }
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10) {
            return 0;
        }
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int fr_log_seg_list(const char *dir, int64_t **bases, size_t *count)
{
    /* Retention keeps the count small; the cap bounds memory on a bad dir. */
    enum { MAX_SEGMENTS = 1 << 22 };
    int64_t *arr = NULL;
    size_t n = 0, cap = 0;
    int rc = FR_OK;
    DIR *d = opendir(dir);
    if (!d) {
        rc = fr_err_from_errno(errno);
        goto cleanup;
    }
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        int64_t base;
        if (!seg_parse_name(ent->d_name, &base)) {
            continue;
        }
        if (n == cap) {
            if (cap >= MAX_SEGMENTS) {
                rc = FR_ETOOBIG;
                goto cleanup;
            }
            size_t ncap = cap ? cap * 2 : 16;
            int64_t *narr = realloc(arr, ncap * sizeof *narr);
            if (!narr) {
                rc = FR_ENOMEM;
                goto cleanup;
            }
            arr = narr;
            cap = ncap;
        }
        arr[n++] = base;
    }
    if (n > 1) {
        qsort(arr, n, sizeof *arr, cmp_i64);
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
    *bases = arr;
    *count = n;
    return rc;
}

/* ---- UTF-8 ---------------------------------------------------------------- */

int fr_log_utf8_valid(const void *data, size_t len)
{
    const uint8_t *s = data;
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (len - i < n) {
            return 0;
        }
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return 0;
        }
        i += n;
    }
    return 1;
}
