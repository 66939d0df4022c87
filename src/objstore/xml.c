/*
 * xml.c — the XML subset S3 answers use, and the parsers of those answers
 * (objstore_int.h).
 *
 * S3 speaks small, flat, machine-written XML: a declaration, one root, no
 * DTD, no CDATA in practice (rejected here), attributes only as xmlns. The
 * reader checks well-formedness of what it reads (tags nest and match,
 * entities are the five predefined ones or numeric character references,
 * nothing but whitespace outside the root) because a truncated or garbled
 * answer must become FR_EPROTO, never a half-read listing that looks
 * complete. Depth, names and text are capped (S3_XML_MAX_*). Pure; any
 * thread.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "objstore/objstore_int.h"

/* ------------------------------------------------------------- reader -- */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':';
}

/* Append code point cp as UTF-8 to text. */
static int put_utf8(char *text, size_t *tl, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return FR_EPROTO;
    }
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*tl + n >= S3_XML_MAX_TEXT) {
        return FR_EPROTO;
    }
    memcpy(text + *tl, u, n);
    *tl += n;
    return FR_OK;
}

/* Decode the entity starting at doc[*i] == '&'. */
static int entity(const char *doc, size_t len, size_t *i, char *text, size_t *tl)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    size_t j = *i + 1;
    size_t end = j;
    while (end < len && end - j < 12 && doc[end] != ';') {
        end++;
    }
    if (end >= len || doc[end] != ';' || end == j) {
        return FR_EPROTO;
    }
    size_t n = end - j;
    *i = end + 1;
    if (doc[j] == '#') {
        uint32_t cp = 0;
        bool hex = n > 1 && (doc[j + 1] == 'x' || doc[j + 1] == 'X');
        size_t k = j + (hex ? 2 : 1);
        if (k >= end) {
            return FR_EPROTO;
        }
        for (; k < end; k++) {
            char c = doc[k];
            uint32_t d;
            if (c >= '0' && c <= '9') {
                d = (uint32_t)(c - '0');
            } else if (hex && c >= 'a' && c <= 'f') {
                d = (uint32_t)(c - 'a' + 10);
            } else if (hex && c >= 'A' && c <= 'F') {
                d = (uint32_t)(c - 'A' + 10);
            } else {
                return FR_EPROTO;
            }
            cp = cp * (hex ? 16 : 10) + d;
            if (cp > 0x10FFFF) {
                return FR_EPROTO;
            }
        }
        return put_utf8(text, tl, cp);
    }
    for (size_t e = 0; e < sizeof named / sizeof named[0]; e++) {
        if (strlen(named[e].name) == n && memcmp(doc + j, named[e].name, n) == 0) {
            return put_utf8(text, tl, (uint32_t)(unsigned char)named[e].c);
        }
    }
    return FR_EPROTO;
}

int s3_xml_parse(const char *doc, size_t len, s3_xml_fn fn, void *arg)
{
    char names[S3_XML_MAX_DEPTH][S3_XML_MAX_NAME];
    char *text = malloc(S3_XML_MAX_TEXT);
    size_t tl = 0, i = 0;
    int depth = 0, rc = FR_OK;
    bool root_done = false;
    if (!text) {
        return FR_ENOMEM;
    }
    while (i < len) {
        char c = doc[i];
        if (c != '<') {
            if (depth == 0) {
                if (!is_space(c)) {
                    rc = FR_EPROTO; /* text outside the root */
                    goto cleanup;
                }
                i++;
            } else if (c == '&') {
                rc = entity(doc, len, &i, text, &tl);
                if (rc < 0) {
                    goto cleanup;
                }
            } else {
                if (tl + 1 >= S3_XML_MAX_TEXT || c == 0) {
                    rc = FR_EPROTO;
                    goto cleanup;
                }
                text[tl++] = c;
                i++;
            }
            continue;
        }
        /* markup */
        if (i + 1 >= len) {
            rc = FR_EPROTO;
            goto cleanup;
        }
        if (doc[i + 1] == '?') { /* declaration or processing instruction */
            const char *e = memmem(doc + i, len - i, "?>", 2);
            if (!e || depth > 0 || root_done) {
                rc = FR_EPROTO;
                goto cleanup;
            }
            i = (size_t)(e - doc) + 2;
            continue;
        }
        if (doc[i + 1] == '!') { /* only comments are accepted */
            if (len - i < 4 || memcmp(doc + i, "<!--", 4) != 0) {
                rc = FR_EPROTO;
                goto cleanup;
            }
            const char *e = memmem(doc + i + 4, len - i - 4, "-->", 3);
            if (!e) {
                rc = FR_EPROTO;
                goto cleanup;
            }
            i = (size_t)(e - doc) + 3;
            continue;
        }
        bool closing = doc[i + 1] == '/';
        size_t j = i + (closing ? 2 : 1), ns = j;
        while (j < len && is_name_char(doc[j])) {
            j++;
        }
        size_t nl = j - ns;
        if (nl == 0 || nl >= S3_XML_MAX_NAME) {
            rc = FR_EPROTO;
            goto cleanup;
        }
        /* skip attributes (quoted values may hold '>') */
        bool empty = false;
        while (j < len && doc[j] != '>') {
            if (doc[j] == '"' || doc[j] == '\'') {
                const char *q = memchr(doc + j + 1, doc[j], len - j - 1);
                if (!q || closing) {
                    rc = FR_EPROTO;
                    goto cleanup;
                }
                j = (size_t)(q - doc) + 1;
                continue;
            }
            if (doc[j] == '/' && j + 1 < len && doc[j + 1] == '>' && !closing) {
                empty = true;
                j++;
                continue;
            }
            if (doc[j] == '<') {
                rc = FR_EPROTO;
                goto cleanup;
            }
            j++;
        }
        if (j >= len) {
            rc = FR_EPROTO;
            goto cleanup;
        }
        i = j + 1;
        if (closing) {
            if (depth == 0 || strlen(names[depth - 1]) != nl ||
                memcmp(names[depth - 1], doc + ns, nl) != 0) {
                rc = FR_EPROTO;
                goto cleanup;
            }
            text[tl] = 0;
            rc = fn(arg, depth, names, text, tl);
            if (rc < 0) {
                goto cleanup;
            }
            tl = 0;
            depth--;
            if (depth == 0) {
                root_done = true;
            }
            continue;
        }
        if (root_done || depth >= S3_XML_MAX_DEPTH) {
            rc = FR_EPROTO;
            goto cleanup;
        }
        memcpy(names[depth], doc + ns, nl);
        names[depth][nl] = 0;
        depth++;
        tl = 0; /* text before a child element is layout, not a value */
        if (empty) {
            text[0] = 0;
            rc = fn(arg, depth, names, text, 0);
            if (rc < 0) {
                goto cleanup;
            }
            depth--;
            if (depth == 0) {
                root_done = true;
            }
        }
    }
    if (depth != 0 || !root_done) {
        rc = FR_EPROTO;
    }
cleanup:
    free(text);
    return rc;
}

/* ------------------------------------------------------------ answers -- */

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (!*s) {
        return false;
    }
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0) {
        return false;
    }
    *out = v;
    return true;
}

int64_t s3_parse_time(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    int ms = 0;
    if (end) {
        if (*end == '.') {
            end++;
            int digits = 0;
            while (*end >= '0' && *end <= '9') {
                if (digits < 3) {
                    ms = ms * 10 + (*end - '0');
                }
                digits++;
                end++;
            }
            while (digits > 0 && digits < 3) {
                ms *= 10;
                digits++;
            }
        }
        if (*end != 'Z') {
            return -1;
        }
    } else {
        memset(&tm, 0, sizeof tm);
        end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        if (!end || *end) {
            return -1;
        }
    }
    time_t t = timegm(&tm);
    if (t == (time_t)-1) {
        return -1;
    }
    return (int64_t)t * 1000 + ms;
}

struct list_state {
    int (*fn)(void *arg, const struct fr_s3_object *o);
    void *arg;
    struct fr_s3_object obj;
    bool have_key, have_size, is_list;
    int *truncated;
    char *token;
    size_t cap;
};

static int list_cb(void *arg, int depth, char names[][S3_XML_MAX_NAME], const char *text,
                   size_t len)
{
    struct list_state *st = arg;
    (void)len;
    if (depth == 1) {
        st->is_list = strcmp(names[0], "ListBucketResult") == 0;
        return st->is_list ? FR_OK : FR_EPROTO;
    }
    if (depth == 2) {
        if (strcmp(names[1], "IsTruncated") == 0) {
            if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0) {
                return FR_EPROTO;
            }
            *st->truncated = strcmp(text, "true") == 0;
        } else if (strcmp(names[1], "NextContinuationToken") == 0) {
            if (strlen(text) >= st->cap) {
                return FR_EPROTO;
            }
            copy_text(st->token, st->cap, text);
        } else if (strcmp(names[1], "Contents") == 0) {
            if (!st->have_key || !st->have_size) {
                return FR_EPROTO;
            }
            int rc = st->fn(st->arg, &st->obj);
            memset(&st->obj, 0, sizeof st->obj);
            st->obj.mtime_ms = -1;
            st->have_key = st->have_size = false;
            return rc;
        }
        return FR_OK;
    }
    if (depth == 3 && strcmp(names[1], "Contents") == 0) {
        if (strcmp(names[2], "Key") == 0) {
            if (len == 0 || len >= sizeof st->obj.key) {
                return FR_EPROTO;
            }
            copy_text(st->obj.key, sizeof st->obj.key, text);
            st->have_key = true;
        } else if (strcmp(names[2], "Size") == 0) {
            if (!parse_i64(text, &st->obj.size)) {
                return FR_EPROTO;
            }
            st->have_size = true;
        } else if (strcmp(names[2], "LastModified") == 0) {
            st->obj.mtime_ms = s3_parse_time(text);
        } else if (strcmp(names[2], "ETag") == 0) {
            copy_text(st->obj.etag, sizeof st->obj.etag, text);
        }
    }
    return FR_OK;
}

int s3_parse_list(const char *doc, size_t len, int (*fn)(void *arg, const struct fr_s3_object *o),
                  void *arg, int *truncated, char *token, size_t cap)
{
    struct list_state st;
    memset(&st, 0, sizeof st);
    st.fn = fn;
    st.arg = arg;
    st.obj.mtime_ms = -1;
    st.truncated = truncated;
    st.token = token;
    st.cap = cap;
    *truncated = 0;
    token[0] = 0;
    int rc = s3_xml_parse(doc, len, list_cb, &st);
    if (rc == FR_OK && !st.is_list) {
        rc = FR_EPROTO;
    }
    if (rc == FR_OK && *truncated && !token[0]) {
        rc = FR_EPROTO; /* a truncated page must say where to go on */
    }
    return rc;
}

struct uploads_state {
    int (*fn)(void *arg, const char *key, const char *upload_id, int64_t initiated_ms);
    void *arg;
    char key[1024], id[1024];
    int64_t initiated;
    bool is_list;
    int *truncated;
    char *key_marker, *id_marker;
    size_t cap;
};

static int uploads_cb(void *arg, int depth, char names[][S3_XML_MAX_NAME], const char *text,
                      size_t len)
{
    struct uploads_state *st = arg;
    if (depth == 1) {
        st->is_list = strcmp(names[0], "ListMultipartUploadsResult") == 0;
        return st->is_list ? FR_OK : FR_EPROTO;
    }
    if (depth == 2) {
        if (strcmp(names[1], "IsTruncated") == 0) {
            *st->truncated = strcmp(text, "true") == 0;
        } else if (strcmp(names[1], "NextKeyMarker") == 0 && len < st->cap) {
            copy_text(st->key_marker, st->cap, text);
        } else if (strcmp(names[1], "NextUploadIdMarker") == 0 && len < st->cap) {
            copy_text(st->id_marker, st->cap, text);
        } else if (strcmp(names[1], "Upload") == 0) {
            if (!st->key[0] || !st->id[0]) {
                return FR_EPROTO;
            }
            int rc = st->fn(st->arg, st->key, st->id, st->initiated);
            st->key[0] = st->id[0] = 0;
            st->initiated = -1;
            return rc;
        }
        return FR_OK;
    }
    if (depth == 3 && strcmp(names[1], "Upload") == 0) {
        if (strcmp(names[2], "Key") == 0 && len < sizeof st->key) {
            copy_text(st->key, sizeof st->key, text);
        } else if (strcmp(names[2], "UploadId") == 0 && len < sizeof st->id) {
            copy_text(st->id, sizeof st->id, text);
        } else if (strcmp(names[2], "Initiated") == 0) {
            st->initiated = s3_parse_time(text);
        }
    }
    return FR_OK;
}

int s3_parse_uploads(const char *doc, size_t len,
                     int (*fn)(void *arg, const char *key, const char *upload_id, int64_t initiated_ms),
                     void *arg, int *truncated, char *key_marker, char *id_marker, size_t cap)
{
    struct uploads_state st;
    memset(&st, 0, sizeof st);
    st.fn = fn;
    st.arg = arg;
    st.initiated = -1;
    st.truncated = truncated;
    st.key_marker = key_marker;
    st.id_marker = id_marker;
    st.cap = cap;
    *truncated = 0;
    key_marker[0] = id_marker[0] = 0;
    int rc = s3_xml_parse(doc, len, uploads_cb, &st);
    return rc == FR_OK && !st.is_list ? FR_EPROTO : rc;
}

struct one_state {
    const char *root, *child;
    char *out;
    size_t cap;
    bool found, root_ok;
    char *out2;
    size_t cap2;
    const char *child2;
};

static int one_cb(void *arg, int depth, char names[][S3_XML_MAX_NAME], const char *text,
                  size_t len)
{
    struct one_state *st = arg;
    if (depth == 1) {
        st->root_ok = strcmp(names[0], st->root) == 0;
    } else if (depth == 2 && strcmp(names[0], st->root) == 0) {
        if (strcmp(names[1], st->child) == 0 && len < st->cap) {
            copy_text(st->out, st->cap, text);
            st->found = true;
        } else if (st->child2 && strcmp(names[1], st->child2) == 0) {
            copy_text(st->out2, st->cap2, text); /* truncated if long: a message */
        }
    }
    return FR_OK;
}

int s3_parse_upload_id(const char *doc, size_t len, char *out, size_t cap)
{
    struct one_state st = {"InitiateMultipartUploadResult", "UploadId", out, cap, false, false,
                           NULL, 0, NULL};
    out[0] = 0;
    int rc = s3_xml_parse(doc, len, one_cb, &st);
    if (rc == FR_OK && (!st.root_ok || !st.found || !out[0])) {
        rc = FR_EPROTO;
    }
    return rc;
}

int s3_parse_error(const char *doc, size_t len, char *code, size_t code_cap, char *msg,
                   size_t msg_cap)
{
    struct one_state st = {"Error", "Code", code, code_cap, false, false, msg, msg_cap, "Message"};
    code[0] = 0;
    msg[0] = 0;
    int rc = s3_xml_parse(doc, len, one_cb, &st);
    return rc == FR_OK && st.root_ok ? FR_OK : FR_ENOTFOUND;
}
