/*
 * rest.c — the Iceberg REST catalog inside `freshet serve`, under
 * /iceberg (so a client's base URI is http://HOST:PORT/iceberg and it
 * calls /iceberg/v1/config, /iceberg/v1/{prefix}/namespaces, ...). The
 * routes are REST_ROUTES in serve_int.h, which also generates their table
 * in docs/API.md; the catalog work is src/iceberg/rest_updates.c and the
 * namespace calls of iceberg.h. docs/REST.md and adr/0015 say why.
 *
 * Invariants:
 *  1. Every request opens its own catalog handle on its worker thread and
 *     closes it before answering (handles are one-thread objects; SQLite
 *     and the compare-and-swap keep concurrent writers consistent).
 *  2. Reads (GET, HEAD) are open like /lake/ and /api/v1/tables, which
 *     already serve every file of the lake; writes (POST, DELETE) need
 *     the bearer token of the maintenance endpoints: 403 while none is
 *     configured, 401 when it does not match. A read never creates a lake.
 *  3. Bodies are capped (SERVE_REST_BODY_MAX, 413 past it, by http.c);
 *     answers are capped buffers (REST_ANSWER_MAX).
 *  4. Errors use the Iceberg error model, {"error":{"message","type","code"}}.
 *  5. The catalog's files live in the lake's warehouse: the data
 *     directory's, or with lake.warehouse = s3://... the bucket (the
 *     locations it assigns are then s3:// URIs). A serve whose lake is in
 *     another REST catalog (lake.catalog_uri) answers 501 on every route:
 *     its local catalog is not the lake.
 *
 * Namespaces in paths are levels separated by %1F; they are stored joined
 * with '.', as the JDBC catalog does, so a level holding '.' is refused.
 */
#include "serve/serve_int.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/json.h"
#include "iceberg/iceberg.h"
#include "iceberg/rest.h"
#include "objstore/s3_io.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REST_ANSWER_MAX ((size_t)80 << 20) /* metadata files are capped at 64 MiB */
#define REST_MAX_SEGS 8
#define REST_MAX_CHANGES 16
#define REST_PREFIX "freshet" /* the catalog name */

enum rest_route {
#define REST_ROUTE_ENUM(id, m, p, a, d) REST_R_##id,
    REST_ROUTES(REST_ROUTE_ENUM)
#undef REST_ROUTE_ENUM
        REST_R_COUNT
};

struct rest_route_def {
    unsigned method;
    const char *path;
    int auth;
    const char *doc;
};

static const struct rest_route_def rest_routes[REST_R_COUNT] = {
#define REST_ROUTE_DEF(id, m, p, a, d) {m, p, a, d},
    REST_ROUTES(REST_ROUTE_DEF)
#undef REST_ROUTE_DEF
};

int serve_rest_routes_markdown(struct fr_buf *out)
{
    int rc = fr_buf_puts(out, "| method | path | auth | answer |\n|---|---|---|---|\n");
    for (int r = 0; rc == FR_OK && r < REST_R_COUNT; r++) {
        const struct rest_route_def *d = &rest_routes[r];
        const char *m = d->method == SERVE_GET    ? "GET"
                        : d->method == SERVE_HEAD ? "HEAD"
                        : d->method == SERVE_POST ? "POST"
                                                  : "DELETE";
        rc = fr_buf_printf(out, "| %s | `%s` | %s | %s |\n", m, d->path, d->auth ? "bearer" : "—",
                           d->doc);
    }
    return rc;
}

/* ------------------------------------------------------------ answers -- */

static enum MHD_Result rest_send(struct MHD_Connection *conn, unsigned status, struct fr_buf *body,
                                 bool www_auth)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        body->len, body->data, body->data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        fr_buf_free(body);
        return MHD_NO;
    }
    body->data = NULL;
    body->len = body->alloc = 0;
    if (status != MHD_HTTP_NO_CONTENT) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (www_auth) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"freshet\"");
    }
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result rest_error(struct MHD_Connection *conn, unsigned status, const char *type,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum MHD_Result rest_error(struct MHD_Connection *conn, unsigned status, const char *type,
                                  const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct fr_buf body;
    fr_buf_init(&body, 8192);
    int rc = fr_buf_puts(&body, "{\"error\":{\"message\":");
    if (rc == FR_OK) {
        rc = fr_buf_json_str(&body, msg, strlen(msg));
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(&body, ",\"type\":\"%s\",\"code\":%u}}\n", type, status);
    }
    if (rc < 0) {
        fr_buf_free(&body);
        return MHD_NO;
    }
    return rest_send(conn, status, &body, status == MHD_HTTP_UNAUTHORIZED);
}

/* An fr_err code of the library as the REST error model. what404 names
 * the exception for FR_ENOTFOUND; commit: an internal error after the
 * catalog was asked to commit is CommitStateUnknownException. */
static enum MHD_Result rest_fail(struct MHD_Connection *conn, int rc, const char *what404,
                                 bool commit)
{
    const char *msg = fr_ice_errmsg()[0] ? fr_ice_errmsg() : fr_strerror(rc);
    switch (rc) {
    case FR_ENOTFOUND:
        return rest_error(conn, MHD_HTTP_NOT_FOUND, what404, "%s", msg);
    case FR_EEXIST:
        return rest_error(conn, MHD_HTTP_CONFLICT, "AlreadyExistsException", "%s", msg);
    case FR_EREQUIREMENT:
    case FR_ECONFLICT:
        return rest_error(conn, MHD_HTTP_CONFLICT, "CommitFailedException", "%s", msg);
    case FR_ENOTEMPTY:
        return rest_error(conn, MHD_HTTP_CONFLICT, "NamespaceNotEmptyException", "%s", msg);
    case FR_EJSON:
    case FR_EINVAL:
    case FR_EUNSUPPORTED:
    case FR_ETOOBIG:
    case FR_ERANGE:
        return rest_error(conn, MHD_HTTP_BAD_REQUEST, "BadRequestException", "%s", msg);
    case FR_EBUSY:
        return rest_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailableException", "%s",
                          msg);
    default:
        fr_warn("serve", "iceberg rest: %s", msg);
        /* FR_EIO may be a COMMIT whose outcome could not be read back */
        return rest_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          commit && rc == FR_EIO ? "CommitStateUnknownException"
                                                 : "InternalServerError",
                          "%s", msg);
    }
}

/* --------------------------------------------------------------- paths -- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Percent-decode [s, s+n) into out (NUL-terminated); -1 when malformed,
 * too long or holding a NUL. */
static int rest_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int h = i + 2 < n ? hexval(s[i + 1]) : -1;
            int l = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0) {
                return -1;
            }
            c = (char)(h * 16 + l);
            i += 2;
        }
        if (c == 0 || k + 1 >= cap) {
            return -1;
        }
        out[k++] = c;
    }
    out[k] = 0;
    return 0;
}

/* A namespace from the wire (levels separated by 0x1F) to the stored form
 * (joined by '.'); -1 when a level is empty or holds '.' or '/'. */
static int rest_ns(char *ns)
{
    if (!ns[0]) {
        return -1;
    }
    for (char *p = ns; *p; p++) {
        if (*p == '.' || *p == '/') {
            return -1;
        }
        if (*p == 0x1f) {
            if (p == ns || p[1] == 0 || p[1] == 0x1f) {
                return -1;
            }
            *p = '.';
        }
    }
    return 0;
}

struct rest_path {
    enum rest_route route;
    char ns[128];
    char table[128];
};

/* Match the decoded segments against the route table. 1 and *rp when a
 * route matched the path and method, 0 when none matched the path, -1
 * when the path matched but not the method. */
static int rest_match(char segs[][256], int nseg, unsigned method, struct rest_path *rp)
{
    int path_hit = 0;
    for (int r = 0; r < REST_R_COUNT; r++) {
        const char *p = rest_routes[r].path + 1; /* after '/' */
        int i = 0;
        bool ok = true;
        char ns[256] = "", table[256] = "";
        while (*p && ok) {
            const char *slash = strchr(p, '/');
            size_t len = slash ? (size_t)(slash - p) : strlen(p);
            if (len == 8 && strncmp(p, "{prefix}", 8) == 0) {
                if (i < nseg && strcmp(segs[i], REST_PREFIX) == 0) {
                    i++;
                }
            } else if (i >= nseg) {
                ok = false;
            } else if (len == 11 && strncmp(p, "{namespace}", 11) == 0) {
                snprintf(ns, sizeof ns, "%s", segs[i++]);
            } else if (len == 7 && strncmp(p, "{table}", 7) == 0) {
                snprintf(table, sizeof table, "%s", segs[i++]);
            } else {
                ok = strlen(segs[i]) == len && strncmp(segs[i], p, len) == 0;
                i++;
            }
            p += len + (slash ? 1 : 0);
        }
        if (!ok || i != nseg) {
            continue;
        }
        path_hit = 1;
        if (rest_routes[r].method != method) {
            continue;
        }
        if (strlen(ns) >= sizeof rp->ns || strlen(table) >= sizeof rp->table) {
            return -2;
        }
        rp->route = (enum rest_route)r;
        snprintf(rp->ns, sizeof rp->ns, "%s", ns);
        snprintf(rp->table, sizeof rp->table, "%s", table);
        return 1;
    }
    return path_hit ? -1 : 0;
}

/* ------------------------------------------------------------ catalog -- */

/* serve_int.h. The catalog's files (metadata, and the locations it
 * assigns) are in the bucket of lake.warehouse = s3://bucket/prefix. */
int serve_catalog_open(struct fr_serve *srv, bool write, struct fr_ice_catalog **cat,
                       struct fr_s3_warehouse **wh)
{
    char db[4300];
    struct stat st;
    *cat = NULL;
    *wh = NULL;
    const struct fr_conf *conf = srv->opts.conf;
    /* the tables are in a REST catalog: the handle only maps the warehouse */
    const bool files_only = conf && conf->lake_catalog_uri && conf->lake_catalog_uri[0];
    snprintf(db, sizeof db, "%s/lake/catalog.db", srv->data_dir);
    if (!write && !files_only && stat(db, &st) != 0) {
        return FR_ENOTFOUND;
    }
    struct fr_ice_catalog_opts copts = {
        .data_dir = srv->data_dir, .busy_timeout_ms = 5000, .files_only = files_only,
        .meta_cache = srv->mcache};
    if (conf && conf->lake_warehouse && conf->lake_warehouse[0]) {
        char err[512] = "";
        int rc = fr_s3_warehouse_open(conf, conf->lake_warehouse, &copts, wh, cat, err, sizeof err);
        if (rc < 0) {
            fr_warn("serve", "REST catalog: warehouse %s: %s (%s) %s", conf->lake_warehouse,
                    fr_strerror(rc), fr_err_name(rc), err);
            *wh = NULL;
            *cat = NULL;
        }
        return rc;
    }
    return fr_ice_catalog_open(&copts, cat);
}


/* ---------------------------------------------------------- namespaces -- */

struct rest_list {
    struct fr_buf *out;
    int n;
    int rc;
};

/* One namespace as a JSON array of its levels. */
static int rest_put_ns(struct fr_buf *out, const char *ns)
{
    int rc = fr_buf_putc(out, '[');
    const char *p = ns;
    while (rc == FR_OK) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        rc = fr_buf_json_str(out, p, len);
        if (!dot || rc < 0) {
            break;
        }
        rc = fr_buf_putc(out, ',');
        p = dot + 1;
    }
    return rc == FR_OK ? fr_buf_putc(out, ']') : rc;
}

static int rest_ns_item(void *arg, const char *ns)
{
    struct rest_list *l = arg;
    int rc = l->n++ ? fr_buf_putc(l->out, ',') : FR_OK;
    return rc == FR_OK ? rest_put_ns(l->out, ns) : rc;
}

static int rest_prop_item(void *arg, const char *key, const char *value)
{
    struct rest_list *l = arg;
    int rc = l->n++ ? fr_buf_putc(l->out, ',') : FR_OK;
    if (rc == FR_OK) {
        rc = fr_buf_json_str(l->out, key, strlen(key));
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(l->out, ':');
    }
    return rc == FR_OK ? fr_buf_json_str(l->out, value, strlen(value)) : rc;
}

/* The members of a {"k":"v",...} object as kv pairs (strings decoded into
 * pool). */
struct rest_kvs {
    struct fr_ice_kv kv[256];
    const char *keys[256];
    uint32_t n, nkeys;
    char pool[64 * 1024];
    size_t used;
};

static const char *rest_pool_str(struct rest_kvs *k, const struct fr_json_val *v)
{
    if (v->type != FR_JSON_STRING) {
        return NULL;
    }
    int n = fr_json_unescape(v, k->pool + k->used, sizeof k->pool - k->used);
    if (n < 0 || k->used + (size_t)n + 1 > sizeof k->pool) {
        return NULL;
    }
    const char *s = k->pool + k->used;
    k->pool[k->used + (size_t)n] = 0;
    k->used += (size_t)n + 1;
    return s;
}

static int rest_parse_kv(struct rest_kvs *k, const struct fr_json_val *obj)
{
    const char *p = obj->start + 1, *end = obj->end - 1;
    bool first = true;
    for (;;) {
        p = fr_json_ws(p, end);
        if (p >= end) {
            return FR_OK;
        }
        if (!first) {
            if (*p != ',') {
                return FR_EJSON;
            }
            p = fr_json_ws(p + 1, end);
        }
        first = false;
        struct fr_json_val key, val;
        p = fr_json_value(p, end, &key);
        if (!p || key.type != FR_JSON_STRING) {
            return FR_EJSON;
        }
        p = fr_json_ws(p, end);
        if (p >= end || *p != ':') {
            return FR_EJSON;
        }
        p = fr_json_value(fr_json_ws(p + 1, end), end, &val);
        if (!p || k->n == 256) {
            return p ? FR_ETOOBIG : FR_EJSON;
        }
        k->kv[k->n].key = rest_pool_str(k, &key);
        k->kv[k->n].value = rest_pool_str(k, &val);
        if (!k->kv[k->n].key || !k->kv[k->n].value) {
            return FR_EINVAL;
        }
        k->n++;
    }
}

static int rest_parse_keys(struct rest_kvs *k, const struct fr_json_val *arr)
{
    const char *p = arr->start + 1, *end = arr->end - 1;
    bool first = true;
    for (;;) {
        p = fr_json_ws(p, end);
        if (p >= end) {
            return FR_OK;
        }
        if (!first) {
            if (*p != ',') {
                return FR_EJSON;
            }
            p = fr_json_ws(p + 1, end);
        }
        first = false;
        struct fr_json_val v;
        p = fr_json_value(p, end, &v);
        if (!p || k->nkeys == 256) {
            return p ? FR_ETOOBIG : FR_EJSON;
        }
        if (!(k->keys[k->nkeys++] = rest_pool_str(k, &v))) {
            return FR_EINVAL;
        }
    }
}

/* The namespace of a request body ({"namespace":["a","b"]}) joined by '.'. */
static int rest_body_ns(const struct fr_json_val *root, char *out, size_t cap)
{
    struct fr_json_val arr;
    if (fr_json_member(root, "namespace", &arr) != 1 || arr.type != FR_JSON_ARRAY) {
        return FR_EINVAL;
    }
    const char *p = arr.start + 1, *end = arr.end - 1;
    size_t k = 0;
    bool first = true;
    for (;;) {
        p = fr_json_ws(p, end);
        if (p >= end) {
            break;
        }
        if (!first) {
            if (*p != ',') {
                return FR_EJSON;
            }
            p = fr_json_ws(p + 1, end);
        }
        struct fr_json_val v;
        p = fr_json_value(p, end, &v);
        if (!p || v.type != FR_JSON_STRING || k + 2 >= cap) {
            return FR_EINVAL;
        }
        if (!first) {
            out[k++] = 0x1f;
        }
        first = false;
        int n = fr_json_unescape(&v, out + k, cap - k - 1);
        if (n <= 0) {
            return FR_EINVAL;
        }
        k += (size_t)n;
    }
    out[k] = 0;
    return rest_ns(out) == 0 ? FR_OK : FR_EINVAL;
}

/* ------------------------------------------------------------ handlers -- */

struct rest_ctx {
    struct fr_serve *srv;
    struct MHD_Connection *conn;
    const struct serve_req *req;
    struct rest_path path;
    struct fr_ice_catalog *cat;
    struct fr_buf out;
    struct fr_json_val body; /* parsed, for POST */
};

static enum MHD_Result rest_ok(struct rest_ctx *x, unsigned status)
{
    return rest_send(x->conn, status, &x->out, false);
}

static enum MHD_Result rest_no_ns(struct rest_ctx *x)
{
    return rest_error(x->conn, MHD_HTTP_NOT_FOUND, "NoSuchNamespaceException",
                      "namespace %s does not exist", x->path.ns);
}

static enum MHD_Result h_config(struct rest_ctx *x)
{
    if (fr_buf_puts(&x->out, "{\"defaults\":{},\"overrides\":{\"prefix\":\"" REST_PREFIX
                             "\"},\"endpoints\":[") < 0) {
        return MHD_NO;
    }
    for (int r = REST_R_NS_LIST; r < REST_R_COUNT; r++) {
        const struct rest_route_def *d = &rest_routes[r];
        const char *m = d->method == SERVE_GET    ? "GET"
                        : d->method == SERVE_HEAD ? "HEAD"
                        : d->method == SERVE_POST ? "POST"
                                                  : "DELETE";
        if (fr_buf_printf(&x->out, "%s\"%s %s\"", r > REST_R_NS_LIST ? "," : "", m, d->path) < 0) {
            return MHD_NO;
        }
    }
    if (fr_buf_puts(&x->out, "]}\n") < 0) {
        return MHD_NO;
    }
    return rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_ns_list(struct rest_ctx *x)
{
    char parent[256] = "";
    const char *q = MHD_lookup_connection_value(x->conn, MHD_GET_ARGUMENT_KIND, "parent");
    if (q && q[0]) {
        snprintf(parent, sizeof parent, "%s", q);
        if (rest_ns(parent) < 0) {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "bad parent namespace");
        }
    }
    struct rest_list l = {&x->out, 0, 0};
    int rc = fr_buf_puts(&x->out, "{\"namespaces\":[");
    if (rc == FR_OK && x->cat) {
        rc = fr_ice_ns_list(x->cat, parent, rest_ns_item, &l);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&x->out, "]}\n");
    }
    return rc < 0 ? rest_fail(x->conn, rc, "NoSuchNamespaceException", false)
                  : rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_ns_create(struct rest_ctx *x)
{
    char ns[256];
    struct fr_json_val props;
    static _Thread_local struct rest_kvs kvs;
    memset(&kvs, 0, offsetof(struct rest_kvs, pool));
    kvs.used = 0;
    int rc = rest_body_ns(&x->body, ns, sizeof ns);
    if (rc < 0) {
        return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "\"namespace\" must be an array of non-empty levels without '.'");
    }
    int has = fr_json_member(&x->body, "properties", &props);
    if (has == 1 && props.type == FR_JSON_OBJECT) {
        rc = rest_parse_kv(&kvs, &props);
    } else if (has == 1 && props.type != FR_JSON_NULL) {
        rc = FR_EINVAL;
    }
    if (rc < 0) {
        return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "\"properties\" must be an object of strings");
    }
    rc = fr_ice_ns_create(x->cat, ns, kvs.kv, kvs.n);
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchNamespaceException", false);
    }
    struct rest_list l = {&x->out, 0, 0};
    rc = fr_buf_puts(&x->out, "{\"namespace\":");
    if (rc == FR_OK) {
        rc = rest_put_ns(&x->out, ns);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&x->out, ",\"properties\":{");
    }
    if (rc == FR_OK) {
        rc = fr_ice_ns_props(x->cat, ns, rest_prop_item, &l);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&x->out, "}}\n");
    }
    return rc < 0 ? MHD_NO : rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_ns_load(struct rest_ctx *x, bool head)
{
    int rc = x->cat ? fr_ice_ns_exists(x->cat, x->path.ns) : 0;
    if (rc == 0) {
        return rest_no_ns(x);
    }
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchNamespaceException", false);
    }
    if (head) {
        return rest_ok(x, MHD_HTTP_NO_CONTENT);
    }
    struct rest_list l = {&x->out, 0, 0};
    rc = fr_buf_puts(&x->out, "{\"namespace\":");
    if (rc == FR_OK) {
        rc = rest_put_ns(&x->out, x->path.ns);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&x->out, ",\"properties\":{");
    }
    if (rc == FR_OK) {
        rc = fr_ice_ns_props(x->cat, x->path.ns, rest_prop_item, &l);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(&x->out, "}}\n");
    }
    return rc < 0 ? rest_fail(x->conn, rc, "NoSuchNamespaceException", false)
                  : rest_ok(x, MHD_HTTP_OK);
}

struct rest_missing {
    const struct rest_kvs *kvs;
    bool miss[256];
};

static int rest_missing_item(void *arg, const char *key)
{
    struct rest_missing *m = arg;
    for (uint32_t i = 0; i < m->kvs->nkeys; i++) {
        if (strcmp(m->kvs->keys[i], key) == 0) {
            m->miss[i] = true;
        }
    }
    return FR_OK;
}

/* The keys of kvs->keys whose miss flag equals want, as a JSON array body. */
static int rest_put_keys(struct fr_buf *out, const struct rest_missing *m, bool want)
{
    int rc = FR_OK, k = 0;
    for (uint32_t i = 0; rc == FR_OK && i < m->kvs->nkeys; i++) {
        if (m->miss[i] == want) {
            rc = k++ ? fr_buf_putc(out, ',') : FR_OK;
            if (rc == FR_OK) {
                rc = fr_buf_json_str(out, m->kvs->keys[i], strlen(m->kvs->keys[i]));
            }
        }
    }
    return rc;
}

static enum MHD_Result h_ns_props(struct rest_ctx *x)
{
    static _Thread_local struct rest_kvs kvs;
    static _Thread_local struct rest_missing miss;
    memset(&kvs, 0, offsetof(struct rest_kvs, pool));
    kvs.used = 0;
    memset(&miss, 0, sizeof miss);
    miss.kvs = &kvs;
    struct fr_json_val v;
    int rc = FR_OK;
    if (fr_json_member(&x->body, "updates", &v) == 1 && v.type == FR_JSON_OBJECT) {
        rc = rest_parse_kv(&kvs, &v);
    }
    if (rc == FR_OK && fr_json_member(&x->body, "removals", &v) == 1 && v.type == FR_JSON_ARRAY) {
        rc = rest_parse_keys(&kvs, &v);
    }
    if (rc < 0) {
        return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "\"updates\" must be an object and \"removals\" an array of strings");
    }
    rc = fr_ice_ns_update(x->cat, x->path.ns, kvs.kv, kvs.n, kvs.keys, kvs.nkeys, rest_missing_item,
                          &miss);
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchNamespaceException", false);
    }
    rc = fr_buf_puts(&x->out, "{\"updated\":[");
    for (uint32_t i = 0; rc == FR_OK && i < kvs.n; i++) {
        rc = i ? fr_buf_putc(&x->out, ',') : FR_OK;
        if (rc == FR_OK) {
            rc = fr_buf_json_str(&x->out, kvs.kv[i].key, strlen(kvs.kv[i].key));
        }
    }
    rc = rc == FR_OK ? fr_buf_puts(&x->out, "],\"removed\":[") : rc;
    rc = rc == FR_OK ? rest_put_keys(&x->out, &miss, false) : rc;
    rc = rc == FR_OK ? fr_buf_puts(&x->out, "],\"missing\":[") : rc;
    rc = rc == FR_OK ? rest_put_keys(&x->out, &miss, true) : rc;
    rc = rc == FR_OK ? fr_buf_puts(&x->out, "]}\n") : rc;
    return rc < 0 ? MHD_NO : rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_tables_list(struct rest_ctx *x)
{
    struct fr_ice_ident *ids = NULL;
    size_t n = 0;
    int rc = x->cat ? fr_ice_ns_exists(x->cat, x->path.ns) : 0;
    if (rc == 0) {
        return rest_no_ns(x);
    }
    if (rc > 0) {
        rc = fr_ice_list_tables(x->cat, &ids, &n);
    }
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchNamespaceException", false);
    }
    rc = fr_buf_puts(&x->out, "{\"identifiers\":[");
    int k = 0;
    for (size_t i = 0; rc == FR_OK && i < n; i++) {
        if (strcmp(ids[i].ns, x->path.ns) != 0) {
            continue;
        }
        rc = fr_buf_puts(&x->out, k++ ? ",{\"namespace\":" : "{\"namespace\":");
        if (rc == FR_OK) {
            rc = rest_put_ns(&x->out, ids[i].ns);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(&x->out, ",\"name\":");
        }
        if (rc == FR_OK) {
            rc = fr_buf_json_str(&x->out, ids[i].name, strlen(ids[i].name));
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(&x->out, '}');
        }
    }
    free(ids);
    rc = rc == FR_OK ? fr_buf_puts(&x->out, "]}\n") : rc;
    return rc < 0 ? MHD_NO : rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_table_load(struct rest_ctx *x, bool head)
{
    int rc = x->cat ? fr_ice_rest_load(x->cat, x->path.ns, x->path.table, &x->out) : FR_ENOTFOUND;
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchTableException", false);
    }
    if (head) {
        fr_buf_free(&x->out);
        return rest_ok(x, MHD_HTTP_NO_CONTENT);
    }
    return rest_ok(x, MHD_HTTP_OK);
}

/* The {"identifier":{"namespace":[..],"name":".."}} of a table change. */
static int rest_ident(const struct fr_json_val *obj, char *ns, size_t nscap, char *name,
                      size_t namecap)
{
    struct fr_json_val id, v;
    if (fr_json_member(obj, "identifier", &id) != 1 || id.type != FR_JSON_OBJECT ||
        rest_body_ns(&id, ns, nscap) < 0 || fr_json_member(&id, "name", &v) != 1 ||
        v.type != FR_JSON_STRING) {
        return FR_EINVAL;
    }
    return fr_json_cstr(&v, name, namecap) > 0 ? FR_OK : FR_EINVAL;
}

static enum MHD_Result h_commit(struct rest_ctx *x)
{
    struct fr_ice_rest_change ch = {x->path.ns, x->path.table, (const char *)x->req->body.data,
                                    x->req->body.len};
    /* an identifier in the body, when present, must name this table */
    char ns[256], name[256];
    struct fr_json_val id;
    if (fr_json_member(&x->body, "identifier", &id) == 1 && id.type == FR_JSON_OBJECT) {
        if (rest_ident(&x->body, ns, sizeof ns, name, sizeof name) < 0 ||
            strcmp(ns, x->path.ns) != 0 || strcmp(name, x->path.table) != 0) {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "the body's identifier does not name %s.%s", x->path.ns,
                              x->path.table);
        }
    }
    int rc = fr_ice_rest_commit(x->cat, &ch, 1, &x->out);
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchTableException", true);
    }
    fr_info("serve", "iceberg rest: committed %s.%s", x->path.ns, x->path.table);
    return rest_ok(x, MHD_HTTP_OK);
}

static enum MHD_Result h_txn_commit(struct rest_ctx *x)
{
    struct fr_json_val arr, item;
    struct fr_ice_rest_change chs[REST_MAX_CHANGES];
    char names[REST_MAX_CHANGES][2][256];
    uint32_t n = 0;
    if (fr_json_member(&x->body, "table-changes", &arr) != 1 || arr.type != FR_JSON_ARRAY) {
        return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "\"table-changes\" must be an array");
    }
    const char *p = arr.start + 1, *end = arr.end - 1;
    for (;;) {
        p = fr_json_ws(p, end);
        if (p >= end) {
            break;
        }
        if (n && *p++ != ',') {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "malformed table-changes");
        }
        p = fr_json_value(fr_json_ws(p, end), end, &item);
        if (!p || item.type != FR_JSON_OBJECT || n == REST_MAX_CHANGES) {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "table-changes: at most %d objects", REST_MAX_CHANGES);
        }
        if (rest_ident(&item, names[n][0], 256, names[n][1], 256) < 0) {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "table-changes[%u]: needs an identifier", n);
        }
        chs[n] = (struct fr_ice_rest_change){names[n][0], names[n][1], item.start,
                                             (size_t)(item.end - item.start)};
        n++;
    }
    if (n == 0) {
        return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "table-changes is empty");
    }
    int rc = fr_ice_rest_commit(x->cat, chs, n, NULL);
    if (rc < 0) {
        return rest_fail(x->conn, rc, "NoSuchTableException", true);
    }
    fr_info("serve", "iceberg rest: committed a transaction of %u table(s)", n);
    return rest_ok(x, MHD_HTTP_NO_CONTENT);
}

/* ------------------------------------------------------------ dispatch -- */

static enum MHD_Result rest_route(struct rest_ctx *x)
{
    int rc;
    switch (x->path.route) {
    case REST_R_CONFIG:
        return h_config(x);
    case REST_R_NS_LIST:
        return h_ns_list(x);
    case REST_R_NS_CREATE:
        return h_ns_create(x);
    case REST_R_NS_LOAD:
        return h_ns_load(x, false);
    case REST_R_NS_EXISTS:
        return h_ns_load(x, true);
    case REST_R_NS_DROP:
        rc = fr_ice_ns_drop(x->cat, x->path.ns);
        return rc < 0 ? rest_fail(x->conn, rc, "NoSuchNamespaceException", false)
                      : rest_ok(x, MHD_HTTP_NO_CONTENT);
    case REST_R_NS_PROPS:
        return h_ns_props(x);
    case REST_R_T_LIST:
        return h_tables_list(x);
    case REST_R_T_CREATE:
        rc = fr_ice_rest_create(x->cat, x->path.ns, (const char *)x->req->body.data,
                                x->req->body.len, &x->out);
        if (rc < 0) {
            return rest_fail(x->conn, rc, "NoSuchNamespaceException", false);
        }
        fr_info("serve", "iceberg rest: created a table in %s", x->path.ns);
        return rest_ok(x, MHD_HTTP_OK);
    case REST_R_T_LOAD:
        return h_table_load(x, false);
    case REST_R_T_EXISTS:
        return h_table_load(x, true);
    case REST_R_T_DROP: {
        const char *purge =
            MHD_lookup_connection_value(x->conn, MHD_GET_ARGUMENT_KIND, "purgeRequested");
        if (purge && strcmp(purge, "true") == 0) {
            return rest_error(x->conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "purgeRequested=true is not supported: freshet drops the catalog "
                              "row and keeps the files (remove the table directory yourself)");
        }
        rc = fr_ice_table_drop(x->cat, x->path.ns, x->path.table);
        return rc < 0 ? rest_fail(x->conn, rc, "NoSuchTableException", false)
                      : rest_ok(x, MHD_HTTP_NO_CONTENT);
    }
    case REST_R_T_COMMIT:
        return h_commit(x);
    case REST_R_TXN_COMMIT:
        return h_txn_commit(x);
    case REST_R_COUNT:
        break;
    }
    return rest_error(x->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalServerError", "bad route");
}

static unsigned rest_method(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0      ? SERVE_GET
           : strcmp(method, MHD_HTTP_METHOD_HEAD) == 0   ? SERVE_HEAD
           : strcmp(method, MHD_HTTP_METHOD_POST) == 0   ? SERVE_POST
           : strcmp(method, MHD_HTTP_METHOD_DELETE) == 0 ? SERVE_DELETE
                                                         : 0;
}

enum MHD_Result serve_rest(struct fr_serve *srv, struct MHD_Connection *conn,
                           const struct serve_req *req, const char *method)
{
    static const char base[] = "/iceberg/v1/";
    char segs[REST_MAX_SEGS][256];
    int nseg = 0;
    const char *p = req->raw;
    if (strncmp(p, base, sizeof base - 1) != 0) {
        return rest_error(conn, MHD_HTTP_NOT_FOUND, "NoSuchRouteException",
                          "Iceberg REST routes are under /iceberg/v1/");
    }
    p += sizeof base - 1;
    const char *end = p + strcspn(p, "?#");
    strcpy(segs[nseg++], "v1");
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t len = slash ? (size_t)(slash - p) : (size_t)(end - p);
        if (nseg == REST_MAX_SEGS || rest_decode(p, len, segs[nseg], sizeof segs[nseg]) < 0) {
            return rest_error(conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "bad request path");
        }
        nseg++;
        p += len + (slash ? 1 : 0);
    }
    unsigned m = rest_method(method);
    struct rest_ctx x;
    memset(&x, 0, sizeof x);
    x.srv = srv;
    x.conn = conn;
    x.req = req;
    int hit = rest_match(segs, nseg, m, &x.path);
    if (hit == 0) {
        return rest_error(conn, MHD_HTTP_NOT_FOUND, "NoSuchRouteException",
                          "no Iceberg REST route for %s %s", method, req->raw);
    }
    if (hit == -1 && m == SERVE_HEAD) {
        hit = rest_match(segs, nseg, SERVE_GET, &x.path); /* HEAD of a GET */
    }
    if (hit < 0) {
        return rest_error(conn, hit == -1 ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_BAD_REQUEST,
                          "BadRequestException", "%s is not allowed on %s", method, req->raw);
    }
    if ((x.path.ns[0] && rest_ns(x.path.ns) < 0) ||
        (x.path.table[0] && (strchr(x.path.table, '/') || strchr(x.path.table, 0x1f)))) {
        return rest_error(conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                          "bad namespace or table name in the path (levels may not hold '.')");
    }
    const bool write = rest_routes[x.path.route].auth != 0;
    if (write) {
        if (!srv->api_token || !srv->api_token[0]) {
            return rest_error(conn, MHD_HTTP_FORBIDDEN, "ForbiddenException",
                              "catalog writes are disabled: no API token is configured (set "
                              "FRESHET_SERVE_API_TOKEN for freshet serve)");
        }
        const char *auth =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!serve_bearer_ok(auth, srv->api_token)) {
            return rest_error(conn, MHD_HTTP_UNAUTHORIZED, "NotAuthorizedException",
                              "catalog writes need Authorization: Bearer <serve.api_token>");
        }
    }
    if (m == SERVE_POST) {
        const char *b = (const char *)req->body.data;
        if (!b || fr_json_validate(b, b + req->body.len) < 0 ||
            !fr_json_value(b, b + req->body.len, &x.body) || x.body.type != FR_JSON_OBJECT) {
            return rest_error(conn, MHD_HTTP_BAD_REQUEST, "BadRequestException",
                              "the request body must be a JSON object");
        }
    }
    const struct fr_conf *conf = srv->opts.conf;
    if (conf && conf->lake_catalog_uri && conf->lake_catalog_uri[0]) {
        /* this serve's lake is in another catalog: the local one is not it */
        return rest_error(conn, MHD_HTTP_NOT_IMPLEMENTED, "NotImplementedException",
                          "freshet serve: not a REST catalog with a REST catalog "
                          "(lake.catalog_uri=%s): the lake's tables are there, not here",
                          conf->lake_catalog_uri);
    }
    struct fr_s3_warehouse *wh = NULL;
    fr_buf_init(&x.out, REST_ANSWER_MAX);
    enum MHD_Result ret;
    if (x.path.route != REST_R_CONFIG) {
        int rc = serve_catalog_open(srv, write, &x.cat, &wh);
        if (rc < 0 && rc != FR_ENOTFOUND) {
            ret = rest_fail(conn, rc, "NoSuchTableException", false);
            goto cleanup;
        }
    }
    ret = rest_route(&x);
cleanup:
    fr_ice_catalog_close(x.cat);
    fr_s3_warehouse_close(wh); /* after the catalog that uses it */
    fr_buf_free(&x.out);
    return ret;
}
