/*
 * file.h — `freshet ingest --file PATH...`: recorded NDJSON straight into
 * the log (file.c), and its pure parts (lines.c): the line splitter and the
 * position every record carries.
 *
 * Contract (docs/adr/0047): one event per line, appended with the same rules
 * as the SSE path (canaries dropped and counted, lines longer than
 * ingest.max_event_bytes refused and counted, malformed lines stored for the
 * processor's quality gate). Each record carries its position in the header
 * `file_pos`: the file's identity (stored size and a hash of its head,
 * decomp.h), the byte offset of the line in the decompressed stream, and
 * the file's base name. A re-run resumes after the last durable record of
 * each partition: no gap, no duplicate; a listed file whose name matches the
 * stored one but whose identity does not is refused.
 */
#ifndef FR_INGEST_FILE_H
#define FR_INGEST_FILE_H

#include "conf/conf.h"

#include <stddef.h>
#include <stdint.h>

#define FR_INGEST_FPOS_HEADER "file_pos"
#define FR_INGEST_FPOS_NAME 256

/* The value of the `file_pos` header, as text (log dump shows it as is):
 *   "<size> <head, 16 hex digits> <offset> <name>"
 * size is -1 for a pipe; name is the file's base name ("-" for standard
 * input) and may hold spaces (it is the rest of the value). */
struct fr_ingest_fpos {
    int64_t size;
    uint64_t head;
    int64_t offset;
    char name[FR_INGEST_FPOS_NAME];
};
/* Format into out (cap bytes, NUL-terminated); returns the length, or
 * FR_ETOOBIG when it does not fit. */
int fr_ingest_fpos_format(const struct fr_ingest_fpos *pos, char *out, size_t cap);
/* Parse a header value; FR_ECORRUPT when it is not one. */
int fr_ingest_fpos_parse(const void *value, size_t len, struct fr_ingest_fpos *pos);

/*
 * The line splitter. It owns one buffer of max_line + chunk + 2 bytes; the
 * caller reads input into the space it offers and takes lines out. A line
 * ends at '\n' (not part of it); a '\r' before it is dropped (CRLF); the
 * last line needs no '\n'. A line longer than max_line (after dropping
 * '\r') is reported with oversize set and data NULL, however long it is:
 * its bytes are dropped as they arrive, so memory stays bounded.
 */
struct fr_ingest_lines {
    uint8_t *buf;
    size_t cap, len;
    size_t start;  /* first byte of the current line */
    size_t scan;   /* where the search for '\n' continues */
    uint64_t base; /* stream offset of buf[0] */
    size_t max_line;
    int discarding; /* inside an oversize line */
    uint64_t discard_off, discard_len;
    int discard_cr; /* the last byte dropped was '\r' */
};
struct fr_ingest_line {
    const uint8_t *data; /* NULL when oversize; valid until the next call */
    size_t len;          /* bytes, without '\n' or the '\r' before it */
    uint64_t offset;     /* stream offset of the line's first byte */
    int oversize;
};
int fr_ingest_lines_init(struct fr_ingest_lines *lines, size_t max_line, size_t chunk);
void fr_ingest_lines_free(struct fr_ingest_lines *lines);
/* Where to put more input: *room >= chunk bytes at *at. */
void fr_ingest_lines_space(struct fr_ingest_lines *lines, uint8_t **at, size_t *room);
void fr_ingest_lines_added(struct fr_ingest_lines *lines, size_t n);
/* The stream offset the next byte added will have. Before any input, set
 * base to start mid-stream (a resume). */
static inline uint64_t fr_ingest_lines_offset(const struct fr_ingest_lines *lines)
{
    return lines->base + lines->len;
}
/* 1: *line is the next line; 0: more input needed (eof 0) or the end (eof 1). */
int fr_ingest_lines_next(struct fr_ingest_lines *lines, int eof, struct fr_ingest_line *line);

/* 1 when argv asks for `ingest --file` (ingest.c hands the command over). */
int fr_ingest_file_wanted(int argc, char **argv);
int fr_cmd_ingest_file(struct fr_conf *conf, int argc, char **argv);

/* The import itself, for `freshet backfill`: paths as given; quiet drops the
 * progress lines. on_open (may be NULL) is called once the log is open and
 * the resume positions are read, before the first append (backfill starts
 * its processor then). Returns 0 when every line was read, 1 on a failure
 * or a refusal (with a message), as the command's status. */
int fr_ingest_file_run(struct fr_conf *conf, char *const *paths, int npaths, int quiet,
                       void (*on_open)(void *arg), void *arg);

#endif
