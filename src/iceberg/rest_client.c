/*
 * rest_client.c — a client of any Iceberg REST catalog (rest.h): load and
 * create a table, commit one table with requirements, commit several in
 * one transaction, and resolve a commit whose outcome is unknown by
 * looking for freshet's epoch marker. HTTP goes through an ops table
 * (fr_ice_rest_curl() is libcurl) so tests put a fault proxy or a fake in
 * front.
 *
 * Retry policy (one place, rest_call):
 *   not sent at all (connect refused)     every call retries, with backoff
 *   5xx / 429, or lost after sending      reads and config retry;
 *                                         create and commits do not: a
 *                                         commit's outcome is UNKNOWN
 *   4xx                                   never retried; mapped to a code
 * Backoff: backoff_ms doubled per attempt, capped at 5 s; at most
 * max_retries retries.
 *
 * Listing (fr_ice_rest_list_tables): the namespaces level by level, the
 * tables of each, one page per call.
 *
 * Commit with an epoch marker (fr_ice_rest_commit_epoch):
 *
 *      SEND ──OK──────────────────────────────────────────► LANDED (FR_OK)
 *        │──definite refusal (409, 4xx) ────────────────► NOT LANDED (its code)
 *        └──UNKNOWN (500/502/503/504, timeout, lost) ──► RELOAD changes[0]'s
 *             table (reads retry) and look for pipeline's epoch:
 *               marker there  ─────────────────────────► LANDED (FR_OK)
 *               marker absent ─────────────────────────► NOT LANDED (FR_EABORTED)
 *               reload failed ─────────────────────────► UNKNOWN (FR_EUNKNOWN)
 *
 * A commit that carries requirements (assert-ref-snapshot-id on main) is
 * safe to retry after NOT LANDED: if the first attempt still lands late,
 * the retry's requirement fails (409) instead of committing twice.
 *
 * Bodies: every answer is read into a buffer capped at max_body
 * (FR_ETOOBIG past it). The token is sent as a header, never logged.
 * A client belongs to one thread at a time.
 */
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include "core/buf.h"
#include "core/err.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REST_BACKOFF_CAP_MS 5000
#define REST_URL_MAX 2048

struct fr_ice_rest {
    char *uri, *token, *warehouse;
    char prefix[128];
    int timeout_ms, max_retries, backoff_ms;
    size_t max_body;
    const struct fr_ice_http_ops *ops;
    void *ctx;
    long last_status;
    char last_error[512];
};

/* ----------------------------------------------------------- libcurl -- */

struct curl_sink {
    struct fr_buf *buf;
    int rc;
};

static size_t curl_write(char *p, size_t size, size_t n, void *arg)
{
    struct curl_sink *s = arg;
    if (fr_buf_append(s->buf, p, size * n) < 0) {
        s->rc = FR_ETOOBIG;
        return 0;
    }
    return size * n;
}

static int curl_request(void *ctx, const char *method, const char *url, const char *token,
                        const char *body, size_t len, int timeout_ms, long *status,
                        struct fr_buf *resp)
{
    (void)ctx;
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    struct curl_sink sink = {resp, FR_OK};
    char auth[1024];
    int rc = FR_OK;
    *status = 0;
    if (!h) {
        return FR_ENOMEM;
    }
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (body) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    }
    if (token && token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
        memset(auth, 0, sizeof auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    CURLcode e = curl_easy_perform(h);
    switch (e) {
    case CURLE_OK:
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        rc = FR_EAGAIN; /* certainly not sent */
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rc = FR_ETIMEOUT;
        break;
    case CURLE_WRITE_ERROR:
        rc = sink.rc < 0 ? sink.rc : FR_EIO;
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        rc = FR_ECLOSED;
        break;
    default:
        rc = FR_EIO;
        break;
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return rc;
}

static void default_sleep(void *ctx, int ms)
{
    (void)ctx;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static const struct fr_ice_http_ops curl_ops = {curl_request, default_sleep};

const struct fr_ice_http_ops *fr_ice_rest_curl(void)
{
    return &curl_ops;
}

/* -------------------------------------------------------------- calls -- */

enum call_kind {
    CALL_READ,   /* retried on 5xx and transport errors */
    CALL_CREATE, /* retried only when not sent */
    CALL_COMMIT, /* retried only when not sent; else UNKNOWN */
};

/* Percent-encode one path segment (RFC 3986 unreserved kept). */
static int put_segment(struct fr_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = FR_OK;
    for (size_t i = 0; rc == FR_OK && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            rc = fr_buf_putc(b, c);
        } else {
            rc = fr_buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
        }
    }
    return rc;
}

/* "namespaces/<a%1Fb>/tables[/<name>]" */
static int table_path(struct fr_buf *b, const char *ns, const char *name)
{
    int rc = fr_buf_puts(b, "namespaces/");
    const char *p = ns;
    while (rc == FR_OK) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        rc = put_segment(b, p, n);
        if (rc < 0 || !dot) {
            break;
        }
        rc = fr_buf_puts(b, "%1F");
        p = dot + 1;
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, "/tables");
    }
    if (rc == FR_OK && name) {
        rc = fr_buf_putc(b, '/');
        if (rc == FR_OK) {
            rc = put_segment(b, name, strlen(name));
        }
    }
    return rc;
}

/* The message of an error answer ({"error":{"message":..}}) into last_error. */
static void note_error(struct fr_ice_rest *rest, const struct fr_buf *resp)
{
    struct fr_json_val root, err, msg;
    const char *p = (const char *)resp->data;
    rest->last_error[0] = 0;
    if (p && fr_json_value(p, p + resp->len, &root) && root.type == FR_JSON_OBJECT &&
        fr_json_member(&root, "error", &err) == 1 && err.type == FR_JSON_OBJECT &&
        fr_json_member(&err, "message", &msg) == 1 && msg.type == FR_JSON_STRING) {
        if (fr_json_cstr(&msg, rest->last_error, sizeof rest->last_error) < 0) {
            rest->last_error[0] = 0;
        }
    }
}

static int status_code(long status, enum call_kind kind)
{
    if (status >= 200 && status < 300) {
        return FR_OK;
    }
    switch (status) {
    case 400:
        return FR_EINVAL;
    case 401:
    case 403:
        return FR_EFORBIDDEN;
    case 404:
        return FR_ENOTFOUND;
    case 409:
        return kind == CALL_COMMIT ? FR_EREQUIREMENT : FR_EEXIST;
    }
    return FR_EHTTP;
}

/* One call, with the retry policy above. path is below "<uri>/v1/<prefix>/"
 * (prefixed: false for "config"). The answer is appended to out (may be
 * NULL). */
static int rest_call(struct fr_ice_rest *rest, const char *method, const char *path, bool prefixed,
                     const char *body, size_t len, enum call_kind kind, struct fr_buf *out)
{
    char url[REST_URL_MAX];
    int n = snprintf(url, sizeof url, "%s/v1/%s%s%s", rest->uri, prefixed ? rest->prefix : "",
                     prefixed && rest->prefix[0] ? "/" : "", path);
    if (n < 0 || (size_t)n >= sizeof url) {
        return ice_err(FR_ETOOBIG, "rest: URL too long");
    }
    struct fr_buf resp;
    fr_buf_init(&resp, rest->max_body);
    int rc = FR_OK;
    for (int attempt = 0;; attempt++) {
        long status = 0;
        fr_buf_reset(&resp);
        rc = rest->ops->request(rest->ctx, method, url, rest->token, body, len, rest->timeout_ms,
                                &status, &resp);
        rest->last_status = status;
        bool retry = false;
        if (rc == FR_ETOOBIG) {
            ice_err(rc, "rest: %s %s: the answer is larger than %zu bytes", method, url,
                    rest->max_body);
            break;
        }
        if (rc < 0) {
            /* no answer: not sent at all, or lost after sending */
            retry = rc == FR_EAGAIN || kind == CALL_READ;
            if (!retry && kind == CALL_COMMIT) {
                rc = ice_err(FR_EUNKNOWN,
                             "rest: %s %s: %s after sending: the commit may or may "
                             "not have landed",
                             method, url, fr_strerror(rc));
            } else {
                ice_err(rc, "rest: %s %s: %s", method, url, fr_strerror(rc));
            }
        } else if (status >= 500 || status == 429) {
            note_error(rest, &resp);
            if (kind == CALL_COMMIT && status != 429) {
                rc = ice_err(FR_EUNKNOWN,
                             "rest: %s %s: HTTP %ld (%s): the commit may or may not have landed",
                             method, url, status, rest->last_error);
            } else {
                retry = kind == CALL_READ || status == 429;
                rc = ice_err(FR_EHTTP, "rest: %s %s: HTTP %ld (%s)", method, url, status,
                             rest->last_error);
            }
        } else {
            rc = status_code(status, kind);
            if (rc < 0) {
                note_error(rest, &resp);
                ice_err(rc, "rest: %s %s: HTTP %ld: %s", method, url, status, rest->last_error);
            }
        }
        if (!retry || attempt >= rest->max_retries) {
            break;
        }
        long ms = (long)rest->backoff_ms << (attempt < 16 ? attempt : 16);
        rest->ops->sleep_ms
            ? rest->ops->sleep_ms(rest->ctx,
                                  ms > REST_BACKOFF_CAP_MS ? REST_BACKOFF_CAP_MS : (int)ms)
            : default_sleep(NULL, ms > REST_BACKOFF_CAP_MS ? REST_BACKOFF_CAP_MS : (int)ms);
    }
    if (rc == FR_OK && out && resp.len) {
        rc = fr_buf_append(out, resp.data, resp.len);
    }
    fr_buf_free(&resp);
    return rc;
}

/* ------------------------------------------------------------ the API -- */

int fr_ice_rest_open(const struct fr_ice_rest_opts *opts, struct fr_ice_rest **out)
{
    *out = NULL;
    ice_err_clear();
    if (!opts || !opts->uri || strncmp(opts->uri, "http", 4) != 0) {
        return ice_err(FR_EINVAL, "rest: the catalog URI must be http(s)://...");
    }
    struct fr_ice_rest *rest = calloc(1, sizeof *rest);
    if (!rest) {
        return FR_ENOMEM;
    }
    rest->uri = strdup(opts->uri);
    rest->token = strdup(opts->token ? opts->token : "");
    rest->warehouse = opts->warehouse ? strdup(opts->warehouse) : NULL;
    rest->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
    rest->max_retries = opts->max_retries == 0 ? 4 : opts->max_retries < 0 ? 0 : opts->max_retries;
    rest->backoff_ms = opts->backoff_ms > 0 ? opts->backoff_ms : 100;
    rest->max_body = opts->max_body ? opts->max_body : (size_t)64 << 20;
    rest->ops = opts->ops ? opts->ops : fr_ice_rest_curl();
    rest->ctx = opts->ctx;
    int rc = rest->uri && rest->token && (!opts->warehouse || rest->warehouse) ? FR_OK : FR_ENOMEM;
    if (rc == FR_OK) {
        size_t ul = strlen(rest->uri);
        while (ul && rest->uri[ul - 1] == '/') {
            rest->uri[--ul] = 0;
        }
    }
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    if (rc == FR_OK) {
        char path[300];
        snprintf(path, sizeof path, "config%s%s", rest->warehouse ? "?warehouse=" : "",
                 rest->warehouse ? rest->warehouse : "");
        rc = rest_call(rest, "GET", path, false, NULL, 0, CALL_READ, &b);
    }
    if (rc == FR_OK) {
        /* overrides.prefix, else defaults.prefix */
        struct fr_json_val root, part, v;
        const char *p = (const char *)b.data;
        if (!p || !fr_json_value(p, p + b.len, &root) || root.type != FR_JSON_OBJECT) {
            rc = ice_err(FR_EPROTO, "rest: GET /v1/config is not a JSON object");
        }
        static const char *const parts[] = {"overrides", "defaults"};
        for (int i = 0; rc == FR_OK && i < 2 && !rest->prefix[0]; i++) {
            if (fr_json_member(&root, parts[i], &part) == 1 && part.type == FR_JSON_OBJECT &&
                fr_json_member(&part, "prefix", &v) == 1 && v.type == FR_JSON_STRING &&
                fr_json_cstr(&v, rest->prefix, sizeof rest->prefix) < 0) {
                rc = ice_err(FR_EPROTO, "rest: bad prefix in /v1/config");
            }
        }
    }
    fr_buf_free(&b);
    if (rc < 0) {
        fr_ice_rest_close(rest);
        return rc;
    }
    *out = rest;
    return FR_OK;
}

void fr_ice_rest_close(struct fr_ice_rest *rest)
{
    if (!rest) {
        return;
    }
    if (rest->token) {
        memset(rest->token, 0, strlen(rest->token));
    }
    free(rest->uri);
    free(rest->token);
    free(rest->warehouse);
    free(rest);
}

const char *fr_ice_rest_uri(const struct fr_ice_rest *rest)
{
    return rest && rest->uri ? rest->uri : "";
}

const char *fr_ice_rest_prefix(const struct fr_ice_rest *rest)
{
    return rest->prefix;
}

long fr_ice_rest_last_status(const struct fr_ice_rest *rest)
{
    return rest->last_status;
}

const char *fr_ice_rest_last_error(const struct fr_ice_rest *rest)
{
    return rest->last_error;
}

int fr_ice_rest_load_table(struct fr_ice_rest *rest, const char *ns, const char *name,
                           struct fr_buf *out)
{
    struct fr_buf path;
    ice_err_clear();
    fr_buf_init(&path, 1024);
    int rc = table_path(&path, ns, name);
    if (rc == FR_OK) {
        rc = rest_call(rest, "GET", fr_buf_cstr(&path), true, NULL, 0, CALL_READ, out);
    }
    fr_buf_free(&path);
    return rc;
}

int ice_rest_table_from_result(struct fr_ice_catalog *cat, const char *ns, const char *name,
                               const char *result, size_t len, struct fr_ice_table **table)
{
    struct fr_json_val root, loc, meta;
    char location[ICE_PATH_MAX];
    *table = NULL;
    if (!result || !fr_json_value(result, result + len, &root) || root.type != FR_JSON_OBJECT ||
        fr_json_member(&root, "metadata-location", &loc) != 1 || loc.type != FR_JSON_STRING ||
        fr_json_cstr(&loc, location, sizeof location) < 0 ||
        fr_json_member(&root, "metadata", &meta) != 1 || meta.type != FR_JSON_OBJECT) {
        return ice_err(FR_EPROTO, "rest: not a LoadTableResult for %s.%s", ns, name);
    }
    return ice_table_from_json(cat, ns, name, location, meta.start,
                               (size_t)(meta.end - meta.start), table);
}

/* ------------------------------------------------------------ listing -- */

#define REST_LIST_MAX 10000 /* tables listed, at most (the SQLite catalog's cap) */
#define REST_NS_DEPTH 8     /* namespace levels walked */

struct rest_idents {
    struct fr_ice_ident *v;
    size_t n, cap;
};

/* The next element of a JSON array being walked: *p starts after '['.
 * 1 and *elem, 0 at ']', or FR_EPROTO. */
static int json_next(const char **p, const char *end, bool first, struct fr_json_val *elem)
{
    const char *q = fr_json_ws(*p, end);
    if (q < end && *q == ']') {
        return 0;
    }
    if (!first) {
        if (q >= end || *q != ',') {
            return FR_EPROTO;
        }
        q = fr_json_ws(q + 1, end);
    }
    q = fr_json_value(q, end, elem);
    if (!q) {
        return FR_EPROTO;
    }
    *p = q;
    return 1;
}

/* A namespace as the REST API writes it (["a","b"]) joined as "a.b". */
static int ns_join(const struct fr_json_val *arr, char *out, size_t cap)
{
    if (arr->type != FR_JSON_ARRAY) {
        return FR_EPROTO;
    }
    size_t len = 0;
    const char *p = arr->start + 1;
    struct fr_json_val lv;
    int more;
    out[0] = 0;
    for (bool first = true; (more = json_next(&p, arr->end, first, &lv)) == 1; first = false) {
        char level[128];
        if (lv.type != FR_JSON_STRING || fr_json_cstr(&lv, level, sizeof level) < 0 ||
            len + strlen(level) + 2 > cap) {
            return FR_EPROTO;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", first ? "" : ".", level);
    }
    return more < 0 ? more : len ? FR_OK : FR_EPROTO;
}

/* GET path; the answer's member key, an array, into *arr (body keeps it). */
static int rest_get_array(struct fr_ice_rest *rest, const char *path, const char *key,
                          struct fr_buf *body, struct fr_json_val *arr)
{
    fr_buf_reset(body);
    int rc = rest_call(rest, "GET", path, true, NULL, 0, CALL_READ, body);
    struct fr_json_val root;
    const char *p = (const char *)body->data;
    if (rc == FR_OK &&
        (!p || !fr_json_value(p, p + body->len, &root) || root.type != FR_JSON_OBJECT ||
         fr_json_member(&root, key, arr) != 1 || arr->type != FR_JSON_ARRAY)) {
        rc = ice_err(FR_EPROTO, "rest: GET %s: no \"%s\" array in the answer", path, key);
    }
    return rc;
}

/* The tables of ns, then of the namespaces below it (depth levels more). */
static int list_ns(struct fr_ice_rest *rest, const char *ns, int depth, struct rest_idents *out)
{
    struct fr_buf path, body;
    struct fr_json_val arr = {0}, item;
    fr_buf_init(&path, 2048);
    fr_buf_init(&body, rest->max_body);
    int rc = FR_OK, more;
    if (ns) {
        rc = table_path(&path, ns, NULL);
        rc = rc ? rc : rest_get_array(rest, fr_buf_cstr(&path), "identifiers", &body, &arr);
        const char *p = rc == FR_OK ? arr.start + 1 : NULL;
        for (bool first = true; rc == FR_OK && (more = json_next(&p, arr.end, first, &item)) != 0;
             first = false) {
            struct fr_json_val nsv, namev;
            struct fr_ice_ident id;
            if (more < 0 || item.type != FR_JSON_OBJECT ||
                fr_json_member(&item, "namespace", &nsv) != 1 ||
                fr_json_member(&item, "name", &namev) != 1 || namev.type != FR_JSON_STRING ||
                ns_join(&nsv, id.ns, sizeof id.ns) < 0 ||
                fr_json_cstr(&namev, id.name, sizeof id.name) < 0) {
                rc = ice_err(FR_EPROTO, "rest: tables of %s: not a ListTablesResponse", ns);
            } else if (out->n >= REST_LIST_MAX) {
                rc = ice_err(FR_ETOOBIG, "rest: more than %d tables", REST_LIST_MAX);
            } else {
                if (out->n == out->cap) {
                    size_t cap = out->cap ? out->cap * 2 : 16;
                    struct fr_ice_ident *v = realloc(out->v, cap * sizeof *v);
                    if (!v) {
                        rc = FR_ENOMEM;
                        break;
                    }
                    out->v = v;
                    out->cap = cap;
                }
                out->v[out->n++] = id;
            }
        }
    }
    /* the namespaces one level below (ns NULL: the top level) */
    if (rc == FR_OK && depth > 0) {
        fr_buf_reset(&path);
        rc = fr_buf_puts(&path, "namespaces");
        if (rc == FR_OK && ns) {
            rc = fr_buf_puts(&path, "?parent=");
            for (const char *p = ns; rc == FR_OK && *p;) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t)(dot - p) : strlen(p);
                rc = put_segment(&path, p, n);
                if (rc == FR_OK && dot) {
                    rc = fr_buf_puts(&path, "%1F");
                }
                p = dot ? dot + 1 : p + n;
            }
        }
        rc = rc ? rc : rest_get_array(rest, fr_buf_cstr(&path), "namespaces", &body, &arr);
        const char *p = rc == FR_OK ? arr.start + 1 : NULL;
        for (bool first = true; rc == FR_OK && (more = json_next(&p, arr.end, first, &item)) != 0;
             first = false) {
            char child[128];
            if (more < 0 || ns_join(&item, child, sizeof child) < 0) {
                rc = ice_err(FR_EPROTO, "rest: not a ListNamespacesResponse");
                break;
            }
            rc = list_ns(rest, child, depth - 1, out);
        }
    }
    fr_buf_free(&body);
    fr_buf_free(&path);
    return rc;
}

static int ident_cmp(const void *a, const void *b)
{
    const struct fr_ice_ident *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->name, y->name);
}

/* An answer that does not hold what was asked (garbage, wrong types) names
 * the catalog: the message says which peer sent it (docs/DAMAGE.md). */
static int rest_peer(const struct fr_ice_rest *rest, int rc)
{
    if (rc == FR_EPROTO || rc == FR_EJSON || rc == FR_ECORRUPT) {
        char why[1024];
        snprintf(why, sizeof why, "%s", fr_ice_errmsg());
        if (!strstr(why, rest->uri)) {
            ice_err(rc, "REST catalog %s: %s", rest->uri, why);
        }
    }
    return rc;
}

int fr_ice_rest_list_tables(struct fr_ice_rest *rest, struct fr_ice_ident **idents, size_t *count)
{
    struct rest_idents out = {NULL, 0, 0};
    ice_err_clear();
    *idents = NULL;
    *count = 0;
    int rc = list_ns(rest, NULL, REST_NS_DEPTH, &out);
    if (rc < 0) {
        free(out.v);
        return rest_peer(rest, rc);
    }
    if (out.n > 1) {
        qsort(out.v, out.n, sizeof *out.v, ident_cmp);
    }
    *idents = out.v;
    *count = out.n;
    return FR_OK;
}

int fr_ice_rest_table(struct fr_ice_rest *rest, struct fr_ice_catalog *cat, const char *ns,
                      const char *name, struct fr_ice_table **table)
{
    struct fr_buf b;
    *table = NULL;
    fr_buf_init(&b, rest->max_body);
    int rc = fr_ice_rest_load_table(rest, ns, name, &b);
    if (rc == FR_OK) {
        rc = ice_rest_table_from_result(cat, ns, name, (const char *)b.data, b.len, table);
    }
    fr_buf_free(&b);
    return rest_peer(rest, rc);
}

int fr_ice_rest_create_namespace(struct fr_ice_rest *rest, const char *ns)
{
    struct fr_buf body;
    ice_err_clear();
    fr_buf_init(&body, 4096);
    int rc = fr_buf_puts(&body, "{\"namespace\":[");
    const char *p = ns;
    while (rc == FR_OK) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        rc = fr_buf_json_str(&body, p, n);
        if (rc < 0 || !dot) {
            break;
        }
        rc = fr_buf_putc(&body, ',');
        p = dot + 1;
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "],\"properties\":{}}");
    }
    if (rc == FR_OK) {
        rc = rest_call(rest, "POST", "namespaces", true, (const char *)body.data, body.len,
                       CALL_CREATE, NULL);
    }
    fr_buf_free(&body);
    return rc;
}

int fr_ice_rest_create_table(struct fr_ice_rest *rest, const char *ns, const char *json, size_t len,
                             struct fr_buf *out)
{
    struct fr_buf path;
    ice_err_clear();
    fr_buf_init(&path, 1024);
    int rc = table_path(&path, ns, NULL);
    if (rc == FR_OK) {
        rc = rest_call(rest, "POST", fr_buf_cstr(&path), true, json, len, CALL_CREATE, out);
    }
    fr_buf_free(&path);
    return rc;
}

int fr_ice_rest_commit_table(struct fr_ice_rest *rest, const struct fr_ice_rest_change *change,
                             struct fr_buf *out)
{
    struct fr_buf path;
    ice_err_clear();
    fr_buf_init(&path, 1024);
    int rc = table_path(&path, change->ns, change->name);
    if (rc == FR_OK) {
        rc = rest_call(rest, "POST", fr_buf_cstr(&path), true, change->json, change->len,
                       CALL_COMMIT, out);
    }
    fr_buf_free(&path);
    return rc;
}

/* {"namespace":["a","b"],"name":"t"} */
static int put_ident(struct fr_buf *b, const char *ns, const char *name)
{
    int rc = fr_buf_puts(b, "{\"namespace\":[");
    const char *p = ns;
    while (rc == FR_OK) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        rc = fr_buf_json_str(b, p, n);
        if (rc < 0 || !dot) {
            break;
        }
        rc = fr_buf_putc(b, ',');
        p = dot + 1;
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(b, "],\"name\":");
    }
    if (rc == FR_OK) {
        rc = fr_buf_json_str(b, name, strlen(name));
    }
    return rc == FR_OK ? fr_buf_putc(b, '}') : rc;
}

int fr_ice_rest_commit_txn(struct fr_ice_rest *rest, const struct fr_ice_rest_change *changes,
                           uint32_t n)
{
    struct fr_buf body;
    ice_err_clear();
    fr_buf_init(&body, rest->max_body);
    int rc = n ? fr_buf_puts(&body, "{\"table-changes\":[") : ice_err(FR_EINVAL, "no changes");
    for (uint32_t i = 0; rc == FR_OK && i < n; i++) {
        const struct fr_ice_rest_change *c = &changes[i];
        struct fr_json_val obj;
        if (!fr_json_value(c->json, c->json + c->len, &obj) || obj.type != FR_JSON_OBJECT) {
            rc = ice_err(FR_EJSON, "rest: change %u is not a JSON object", i);
            break;
        }
        /* the change's members after an identifier */
        const char *inner = fr_json_ws(obj.start + 1, obj.end - 1);
        rc = fr_buf_puts(&body, i ? ",{\"identifier\":" : "{\"identifier\":");
        if (rc == FR_OK) {
            rc = put_ident(&body, c->ns, c->name);
        }
        if (rc == FR_OK && inner < obj.end - 1) {
            rc = fr_buf_putc(&body, ',');
            if (rc == FR_OK) {
                rc = fr_buf_append(&body, inner, (size_t)(obj.end - inner));
            }
        } else if (rc == FR_OK) {
            rc = fr_buf_putc(&body, '}');
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&body, "]}");
    }
    if (rc == FR_OK) {
        rc = rest_call(rest, "POST", "transactions/commit", true, (const char *)body.data, body.len,
                       CALL_COMMIT, NULL);
    }
    fr_buf_free(&body);
    return rc;
}

int fr_ice_rest_find_epoch(struct fr_ice_rest *rest, const char *ns, const char *name,
                           const char *pipeline_id, int64_t epoch)
{
    struct fr_buf b;
    struct ice_meta *m = NULL;
    fr_buf_init(&b, rest->max_body);
    int rc = fr_ice_rest_load_table(rest, ns, name, &b);
    struct fr_json_val root, meta;
    const char *p = (const char *)b.data;
    if (rc == FR_OK &&
        (!p || !fr_json_value(p, p + b.len, &root) || root.type != FR_JSON_OBJECT ||
         fr_json_member(&root, "metadata", &meta) != 1 || meta.type != FR_JSON_OBJECT)) {
        rc = ice_err(FR_EPROTO, "rest: LoadTableResult of %s.%s has no metadata", ns, name);
    }
    if (rc == FR_OK) {
        rc = ice_meta_parse(meta.start, (size_t)(meta.end - meta.start), &m);
    }
    int found = 0;
    for (uint32_t i = 0; rc == FR_OK && m && i < m->nsnapshots && !found; i++) {
        const struct fr_ice_snapshot *s = &m->snapshots[i].pub;
        const char *pid = ice_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
        const char *ep = ice_summary_get(s, FR_ICE_SUMMARY_EPOCH);
        char *end = NULL;
        long long e = ep ? strtoll(ep, &end, 10) : -1;
        found = pid && strcmp(pid, pipeline_id) == 0 && ep && end && !*end && e >= epoch;
    }
    ice_meta_free(m);
    fr_buf_free(&b);
    return rc < 0 ? rest_peer(rest, rc) : found;
}

int fr_ice_rest_commit_epoch(struct fr_ice_rest *rest, const struct fr_ice_rest_change *changes,
                             uint32_t n, const char *pipeline_id, int64_t epoch, int *landed)
{
    int dummy;
    landed = landed ? landed : &dummy;
    *landed = 0;
    if (n == 0 || !pipeline_id || epoch < 0) {
        return ice_err(FR_EINVAL, "rest: commit_epoch needs changes, a pipeline and an epoch");
    }
    int rc = n == 1 ? fr_ice_rest_commit_table(rest, changes, NULL)
                    : fr_ice_rest_commit_txn(rest, changes, n);
    if (rc == FR_OK) {
        *landed = 1;
        return FR_OK;
    }
    if (rc != FR_EUNKNOWN) {
        return rc; /* definitely not applied */
    }
    char why[600];
    snprintf(why, sizeof why, "%s", fr_ice_errmsg());
    int found = fr_ice_rest_find_epoch(rest, changes[0].ns, changes[0].name, pipeline_id, epoch);
    if (found == 1) {
        *landed = 1;
        ice_err_clear();
        return FR_OK; /* it landed after all */
    }
    if (found == 0) {
        return ice_err(FR_EABORTED,
                       "rest: %s; reloaded %s.%s: epoch %" PRId64 " of %s is not there, so the "
                       "commit did not land",
                       why, changes[0].ns, changes[0].name, epoch, pipeline_id);
    }
    *landed = -1;
    return ice_err(FR_EUNKNOWN, "rest: %s; and reloading %s.%s failed (%s): outcome unknown", why,
                   changes[0].ns, changes[0].name, fr_strerror(found));
}

/* ------------------------------------------------------------ staging -- */

int ice_rest_stage(struct fr_ice_catalog *cat, const char *ns, const char *name,
                   const char *load_result, size_t len, const struct ice_rest_stage_in *in,
                   struct fr_buf *out)
{
    struct fr_ice_table *base = NULL;
    struct ice_change *c = NULL;
    const struct fr_ice_commit_info *info = in->info;
    ice_err_clear();
    int rc = ice_rest_table_from_result(cat, ns, name, load_result, len, &base);
    if (rc == FR_OK && info && info->pipeline_id && info->epoch >= 0) {
        int64_t last;
        if (fr_ice_last_epoch(base, info->pipeline_id, &last, NULL) == FR_OK &&
            last >= info->epoch) {
            rc = ice_err(FR_EEXIST,
                         "table %s.%s: epoch %" PRId64 " of %s is already committed (last %" PRId64
                         ")",
                         ns, name, info->epoch, info->pipeline_id, last);
        }
    }
    if (rc == FR_OK) {
        rc = ice_change_new(cat, in->overwrite ? ICE_CH_OVERWRITE : in->nremove ? ICE_CH_REWRITE : ICE_CH_APPEND, ns, name, &c);
    }
    if (rc == FR_OK) {
        rc = ice_change_set_files(c, NULL, in->files, in->nfiles);
    }
    if (rc == FR_OK && in->nremove) {
        c->remove = ice_alloc(c->arena, sizeof *c->remove * in->nremove);
        rc = c->remove ? FR_OK : FR_ENOMEM;
        for (uint32_t i = 0; rc == FR_OK && i < in->nremove; i++) {
            c->remove[i] = ice_strdup(c->arena, in->remove[i]);
            rc = c->remove[i] ? FR_OK : FR_ENOMEM;
        }
        c->nremove = in->nremove;
    }
    if (rc == FR_OK) {
        rc = ice_change_set_info(c, info);
    }
    if (rc == FR_OK) {
        c->base = base; /* the change owns it from here */
        base = NULL;
        rc = ice_change_apply(c); /* writes the manifest(s) and the manifest list */
    }
    const struct ice_snapshot *snap = NULL;
    if (rc == FR_OK) {
        snap = ice_meta_snapshot(c->next, c->next->current_snapshot_id);
        rc = snap ? FR_OK : ice_err(FR_EIO, "rest: staged change made no snapshot");
    }
    int64_t was = rc == FR_OK ? c->base->meta->current_snapshot_id : -1;
    char was_text[24] = "null";
    if (was >= 0) {
        snprintf(was_text, sizeof was_text, "%" PRId64, was);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out,
                           "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"},"
                           "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":"
                           "%s}],\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":",
                           c->base->meta->uuid, was_text);
    }
    if (rc == FR_OK) {
        rc = ice_snapshot_json(snap, out);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(out,
                           "},{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":"
                           "\"branch\",\"snapshot-id\":%" PRId64 "}]}",
                           snap->pub.snapshot_id);
    }
    if (c && rc < 0 && c->base) {
        ice_change_reset(c, true); /* nothing to commit: remove what was written */
        if (c->kept_manifest) {
            ice_io_remove(&cat->io, c->kept_manifest);
        }
    }
    ice_change_free(c); /* keeps the files of a staged change */
    fr_ice_table_free(base);
    return rc;
}

int fr_ice_rest_stage_append(struct fr_ice_catalog *cat, const char *ns, const char *name,
                             const char *load_result, size_t len,
                             const struct fr_ice_data_file *files, uint32_t nfiles,
                             const struct fr_ice_commit_info *info, struct fr_buf *out)
{
    struct ice_rest_stage_in in = {.files = files, .nfiles = nfiles, .info = info};
    return ice_rest_stage(cat, ns, name, load_result, len, &in, out);
}

int fr_ice_rest_stage_overwrite(struct fr_ice_catalog *cat, const char *ns, const char *name,
                                const char *load_result, size_t len,
                                const struct fr_ice_data_file *files, uint32_t nfiles,
                                const struct fr_ice_commit_info *info, struct fr_buf *out)
{
    struct ice_rest_stage_in in = {.files = files, .nfiles = nfiles, .info = info, .overwrite = true};
    return ice_rest_stage(cat, ns, name, load_result, len, &in, out);
}

int fr_ice_rest_create_request(const char *name, const struct fr_ice_table_def *def,
                               struct fr_buf *out)
{
    if (!name || !def || def->nfields == 0) {
        return ice_err(FR_EINVAL, "rest: a create request needs a name and fields");
    }
    int rc = fr_buf_puts(out, "{\"name\":");
    if (rc == FR_OK) {
        rc = fr_buf_json_str(out, name, strlen(name));
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, ",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[");
    }
    for (uint32_t i = 0; rc == FR_OK && i < def->nfields; i++) {
        const struct fr_ice_field *f = &def->fields[i];
        rc = fr_buf_printf(out, "%s{\"id\":%d,\"name\":", i ? "," : "", (int)f->id);
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, f->name, strlen(f->name));
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ",\"required\":%s,\"type\":\"%s\"",
                               f->required ? "true" : "false", ice_type_name(f->type));
        }
        if (rc == FR_OK && f->doc) {
            rc = fr_buf_puts(out, ",\"doc\":");
            if (rc == FR_OK) {
                rc = fr_buf_json_str(out, f->doc, strlen(f->doc));
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '}');
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "]},\"partition-spec\":{\"spec-id\":0,\"fields\":[");
    }
    for (uint32_t i = 0; rc == FR_OK && i < def->nparts; i++) {
        const struct fr_ice_part_field *p = &def->parts[i];
        const char *src = NULL;
        for (uint32_t k = 0; k < def->nfields; k++) {
            src = def->fields[k].id == p->source_id ? def->fields[k].name : src;
        }
        if (!src) {
            return ice_err(FR_EINVAL, "rest: partition field %u has no source column", i);
        }
        char pname[160];
        if (p->name) {
            snprintf(pname, sizeof pname, "%s", p->name);
        } else if (p->transform == FR_ICE_IDENTITY) {
            snprintf(pname, sizeof pname, "%s", src);
        } else {
            snprintf(pname, sizeof pname, "%s_%s", src, ice_transform_name(p->transform));
        }
        rc = fr_buf_printf(
            out, "%s{\"source-id\":%d,\"field-id\":%d,\"transform\":\"%s\",\"name\":", i ? "," : "",
            (int)p->source_id, 1000 + (int)i, ice_transform_name(p->transform));
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, pname, strlen(pname));
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '}');
        }
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(out, "]},\"write-order\":{\"order-id\":0,\"fields\":[]},\"properties\":{");
    }
    for (uint32_t i = 0; rc == FR_OK && i < def->nprops; i++) {
        rc = i ? fr_buf_putc(out, ',') : FR_OK;
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, def->props[i].key, strlen(def->props[i].key));
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, ':');
        }
        if (rc == FR_OK) {
            rc = fr_buf_json_str(out, def->props[i].value, strlen(def->props[i].value));
        }
    }
    return rc == FR_OK ? fr_buf_puts(out, "}}") : rc;
}
