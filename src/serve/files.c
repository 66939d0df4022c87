/*
 * files.c — files served read-only from a root directory: `/lake/<path>`
 * from <data>/lake/warehouse (the SQL explorer reads Parquet through HTTP
 * range requests) and the pages from the web root.
 *
 * Path rules (no escaping the root, whatever the request says):
 *   1. The raw request target is decoded here, segment by segment, so an
 *      encoded slash or backslash (%2F, %5C) or NUL (%00) is refused (400)
 *      instead of becoming a separator; so are malformed escapes.
 *   2. Segments "", ".", ".." and names starting with "." are refused
 *      (400): there is no relative step and no hidden file to reach.
 *   3. The file is opened one segment at a time with openat(O_NOFOLLOW)
 *      from a descriptor of the root, so a symbolic link anywhere below
 *      the root is never followed (404), and the last segment must be a
 *      regular file (404 otherwise).
 * Responses send the open descriptor (sendfile), so a file replaced while
 * it is being sent is sent whole as it was when opened.
 *
 * With the warehouse in a bucket (lake.warehouse = s3://...) `/lake/` is
 * lake_s3.c's, which decodes its path with the same rules
 * (serve_path_decode) and answers ranges as serve_range says.
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILES_MAX_SEGMENTS 32

struct files_type {
    const char *ext;
    const char *type;
};

static const struct files_type files_types[] = {
    {".parquet", "application/vnd.apache.parquet"},
    {".json", "application/json"},
    {".avro", "application/avro"},
    {".text", "text/plain; charset=utf-8"},
    {".txt", "text/plain; charset=utf-8"},
    {".html", "text/html; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".wasm", "application/wasm"},
    {".map", "application/json"},
    {".md", "text/markdown; charset=utf-8"},
};

const char *serve_content_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof files_types / sizeof *files_types; i++) {
        size_t e = strlen(files_types[i].ext);
        if (n > e && strcasecmp(name + n - e, files_types[i].ext) == 0) {
            return files_types[i].type;
        }
    }
    return "application/octet-stream";
}

static int files_hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decode one raw segment [s, e) into out (rules 1 and 2). */
static int files_decode_segment(const char *s, const char *e, char *out, size_t outcap)
{
    size_t n = 0;
    for (const char *p = s; p < e; p++) {
        char c = *p;
        if (c == '%') {
            if (e - p < 3 || files_hex(p[1]) < 0 || files_hex(p[2]) < 0) {
                return FR_EINVAL;
            }
            c = (char)(files_hex(p[1]) * 16 + files_hex(p[2]));
            p += 2;
            if (c == '/' || c == '\\' || (unsigned char)c < 0x20) {
                return FR_EINVAL;
            }
        } else if (c == '\\' || (unsigned char)c < 0x20) {
            return FR_EINVAL;
        }
        if (n + 1 >= outcap) {
            return FR_ETOOBIG;
        }
        out[n++] = c;
    }
    out[n] = 0;
    if (n == 0 || out[0] == '.') {
        return FR_EINVAL;
    }
    return FR_OK;
}

/* Open raw (a relative path, still percent-encoded, no query) under
 * root_fd. Returns the descriptor, FR_EINVAL for a refused path (400) or
 * FR_ENOTFOUND (404). */
static int files_open(int root_fd, const char *raw, struct stat *st)
{
    int dir = dup(root_fd);
    if (dir < 0) {
        return FR_EIO;
    }
    const char *p = raw;
    const char *end = raw + strlen(raw);
    int segments = 0;
    int rc = FR_ENOTFOUND;
    for (;;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *seg_end = slash ? slash : end;
        char name[256];
        if (++segments > FILES_MAX_SEGMENTS ||
            files_decode_segment(p, seg_end, name, sizeof name) < 0) {
            rc = FR_EINVAL;
            break;
        }
        int last = slash == NULL;
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
        if (fd < 0) {
            rc = FR_ENOTFOUND;
            break;
        }
        close(dir);
        dir = fd;
        if (last) {
            if (fstat(fd, st) == 0 && S_ISREG(st->st_mode)) {
                return fd;
            }
            rc = FR_ENOTFOUND;
            break;
        }
        p = slash + 1;
    }
    close(dir);
    return rc;
}

int serve_path_decode(const char *raw, char *out, size_t outcap)
{
    const char *p = raw;
    const char *end = raw + strlen(raw);
    size_t n = 0;
    int segments = 0;
    for (;;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *seg_end = slash ? slash : end;
        if (++segments > FILES_MAX_SEGMENTS || n + 1 >= outcap) {
            return FR_EINVAL;
        }
        if (n) {
            out[n++] = '/';
        }
        if (files_decode_segment(p, seg_end, out + n, outcap - n) < 0) {
            return FR_EINVAL;
        }
        n += strlen(out + n);
        if (!slash) {
            return FR_OK;
        }
        p = slash + 1;
    }
}

int serve_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (strncmp(h, "bytes=", 6) != 0 || strchr(h, ',')) {
        return 0;
    }
    const char *p = h + 6;
    char *e;
    if (*p == '-') {
        errno = 0;
        unsigned long long n = strtoull(p + 1, &e, 10);
        if (e == p + 1 || *e || errno) {
            return 0;
        }
        if (n == 0 || size == 0) {
            return -1;
        }
        *len = n < size ? n : size;
        *off = size - *len;
        return 1;
    }
    errno = 0;
    unsigned long long a = strtoull(p, &e, 10);
    if (e == p || *e != '-' || errno) {
        return 0;
    }
    const char *q = e + 1;
    unsigned long long b = size ? size - 1 : 0;
    if (*q) {
        b = strtoull(q, &e, 10);
        if (e == q || *e || errno || b < a) {
            return 0;
        }
        if (b >= size) {
            b = size - 1;
        }
    }
    if (a >= size) {
        return -1;
    }
    *off = a;
    *len = b - a + 1;
    return 1;
}

static enum MHD_Result files_send(struct MHD_Connection *conn, int fd, const struct stat *st,
                                  const char *name)
{
    char etag[96], modified[64];
    snprintf(etag, sizeof etag, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"", (uint64_t)st->st_ino,
             (uint64_t)st->st_size,
             (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec);
    struct tm tm;
    gmtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(modified, sizeof modified, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    uint64_t size = (uint64_t)st->st_size, off = 0, len = size;
    unsigned status = MHD_HTTP_OK;
    const char *inm =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    const char *range = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
    struct MHD_Response *resp = NULL;
    if (inm && strcmp(inm, etag) == 0) {
        status = MHD_HTTP_NOT_MODIFIED;
        close(fd);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        int r = range ? serve_range(range, size, &off, &len) : 0;
        if (r < 0) {
            close(fd);
            return serve_range_unsatisfiable(conn, size);
        }
        if (r > 0) {
            status = MHD_HTTP_PARTIAL_CONTENT;
        }
        if (len == 0) {
            close(fd);
            resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        } else {
            resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
            if (!resp) {
                close(fd);
            }
        }
    }
    if (!resp) {
        return MHD_NO;
    }
    if (status == MHD_HTTP_PARTIAL_CONTENT) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1, size);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, serve_content_type(name));
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, modified);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Serve rel (raw, relative) from the directory root. */
static enum MHD_Result files_serve(struct MHD_Connection *conn, const char *root, const char *rel,
                                   const char *what)
{
    char path[4096];
    size_t n = strcspn(rel, "?#");
    if (n >= sizeof path) {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "path too long");
    }
    memcpy(path, rel, n);
    path[n] = 0;
    if (!root || !root[0]) {
        return serve_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no %s is configured", what);
    }
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        return serve_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "the %s does not exist yet",
                           what);
    }
    struct stat st;
    int fd = files_open(root_fd, path, &st);
    close(root_fd);
    if (fd == FR_EINVAL) {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
                           "refused path (.., dot-files, encoded separators and empty segments "
                           "are not served)");
    }
    if (fd < 0) {
        return serve_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such file in the %s", what);
    }
    const char *slash = strrchr(path, '/');
    return files_send(conn, fd, &st, slash ? slash + 1 : path);
}

enum MHD_Result serve_lake(struct fr_serve *srv, struct MHD_Connection *conn,
                           const struct serve_req *req, const char *method)
{
    const char *rel = strncmp(req->raw, "/lake/", 6) == 0 ? req->raw + 6 : "";
    if (srv->s3) {
        return serve_lake_s3(srv, conn, rel, method); /* lake_s3.c */
    }
    return files_serve(conn, srv->warehouse, rel, "lake warehouse");
}

enum MHD_Result serve_web(struct fr_serve *srv, struct MHD_Connection *conn,
                          const struct serve_req *req)
{
    const char *raw = req->raw;
    size_t n = strcspn(raw, "?#");
    const char *rel;
    if (n == 1 && raw[0] == '/') {
        rel = "index.html";
    } else if ((n == 9 && strncmp(raw, "/explorer", 9) == 0) ||
               (n == 10 && strncmp(raw, "/explorer/", 10) == 0)) {
        rel = "explorer.html";
    } else if (raw[0] == '/') {
        rel = raw + 1;
    } else {
        return serve_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "bad request target");
    }
    return files_serve(conn, srv->web_root, rel, "web root");
}

int serve_url_path(struct fr_buf *out, const char *rel)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = FR_OK;
    for (const unsigned char *p = (const unsigned char *)rel; *p && rc == FR_OK; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || c == '/' || c == '=') {
            rc = fr_buf_putc(out, c);
        } else {
            rc = fr_buf_putc(out, '%');
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, (uint8_t)hex[c >> 4]);
            }
            if (rc == FR_OK) {
                rc = fr_buf_putc(out, (uint8_t)hex[c & 15]);
            }
        }
    }
    return rc;
}
