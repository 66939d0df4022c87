/*
 * fuzz_rest.c — libFuzzer target for the Iceberg REST catalog's bytes from
 * the other side of a socket: the answers a REST catalog sends freshet's
 * client (src/iceberg/rest_client.c), and the table changes a REST client
 * sends `freshet serve` (the CommitTableRequest body, applied by
 * src/iceberg/rest_updates.c to the table's metadata).
 *
 * Input: a mode byte, then
 *   mode even (client): answers, each a status byte (an index into the
 *     statuses below), a 2-byte little-endian length and that many bytes
 *     of body; the last one takes what is left. The client's HTTP ops
 *     (its seam for tests, rest.h) hand them out in order to a fixed
 *     sequence of calls: open (GET config), list every table, create a
 *     namespace, commit one table and resolve an unknown outcome by
 *     reloading the table (commit_epoch), find an epoch. Past the last
 *     answer the catalog "refuses the connection". No retries, no sleeps.
 *   mode odd (server): a 2-byte length, the base table metadata (JSON) of
 *     that length, then the request body. When the base parses, the body
 *     is checked and applied as a REST commit is; the new metadata it
 *     yields must write JSON that parses again (serve writes it as the
 *     table's next metadata file, which every engine then reads).
 * Besides ASan and UBSan: every error leaves a message, and a listing
 * holds at most what the client's cap allows. One thread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const long statuses[] = {200, 204, 400, 401, 404, 409, 419, 500, 503, 504, 302, 0};

struct answers {
    const uint8_t *p, *end;
    int calls;
};

static int fake_request(void *ctx, const char *method, const char *url, const char *token,
                        const char *body, size_t len, int timeout_ms, long *status,
                        struct fr_buf *resp)
{
    (void)method, (void)url, (void)token, (void)body, (void)len, (void)timeout_ms;
    struct answers *a = ctx;
    if (++a->calls > 64 || a->end - a->p < 1) {
        return FR_EAGAIN; /* as the curl ops say for a refused connection */
    }
    *status = statuses[*a->p++ % (sizeof statuses / sizeof statuses[0])];
    size_t n = (size_t)(a->end - a->p);
    if (n >= 2) {
        size_t want = (size_t)a->p[0] | (size_t)a->p[1] << 8;
        a->p += 2;
        n = want < (size_t)(a->end - a->p) ? want : (size_t)(a->end - a->p);
    } else {
        a->p = a->end, n = 0;
    }
    int rc = fr_buf_append(resp, a->p, n);
    a->p += n;
    return rc;
}

static void no_sleep(void *ctx, int ms)
{
    (void)ctx, (void)ms;
}

static void client(const uint8_t *data, size_t size)
{
    static const struct fr_ice_http_ops ops = {fake_request, no_sleep};
    struct answers a = {data, data + size, 0};
    struct fr_ice_rest_opts opts = {.uri = "http://127.0.0.1:9/iceberg", .warehouse = "wh",
                                    .max_retries = -1, .max_body = 1 << 20, .ops = &ops,
                                    .ctx = &a};
    struct fr_ice_rest *rest = NULL;
    if (fr_ice_rest_open(&opts, &rest) != FR_OK) {
        return;
    }
    struct fr_ice_ident *idents = NULL;
    size_t n = 0;
    if (fr_ice_rest_list_tables(rest, &idents, &n) == FR_OK && n > 10000) {
        abort(); /* the client caps a listing at REST_LIST_MAX */
    }
    free(idents);
    (void)fr_ice_rest_create_namespace(rest, "wiki");
    static const char change_json[] = "{\"requirements\":[],\"updates\":[]}";
    struct fr_ice_rest_change change = {"wiki", "silver", change_json, sizeof change_json - 1};
    int landed = 0;
    int rc = fr_ice_rest_commit_epoch(rest, &change, 1, "freshet", 7, &landed);
    if (rc < 0 && !fr_ice_errmsg()[0]) {
        abort(); /* an error without a message */
    }
    (void)fr_ice_rest_find_epoch(rest, "wiki", "silver", "freshet", 7);
    fr_ice_rest_close(rest);
}

static void server(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return;
    }
    size_t mlen = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2, size -= 2;
    mlen = mlen < size ? mlen : size;
    struct ice_change *c = calloc(1, sizeof *c);
    struct fr_ice_table *base = calloc(1, sizeof *base);
    struct fr_buf out;
    struct ice_meta *again = NULL;
    fr_buf_init(&out, 64u << 20);
    char *body = malloc(size - mlen + 1);
    memcpy(body, data + mlen, size - mlen);
    body[size - mlen] = 0;
    c->kind = ICE_CH_REST;
    snprintf(c->ns, sizeof c->ns, "wiki");
    snprintf(c->name, sizeof c->name, "silver");
    c->arena = ice_arena_new(64u << 20);
    c->rest_json = body;
    c->rest_len = size - mlen;
    if (!c->arena || ice_meta_parse((const char *)data, mlen, &base->meta) < 0) {
        goto cleanup;
    }
    c->base = base;
    int rc = ice_change_apply(c);
    if (rc < 0 && !fr_ice_errmsg()[0]) {
        abort(); /* refused without saying why */
    }
    if (rc == FR_OK && c->next) {
        if (ice_meta_write(c->next, &out) == FR_OK &&
            ice_meta_parse((const char *)out.data, out.len, &again) < 0) {
            fprintf(stderr, "the new metadata does not parse: %s\n", fr_ice_errmsg());
            abort();
        }
    }
cleanup:
    ice_meta_free(again);
    ice_meta_free(c->next);
    c->next = NULL;
    c->base = NULL;
    ice_meta_free(base->meta);
    free(base);
    ice_change_free(c);
    free(body);
    fr_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_diag_set_level(FR_DIAG_ERROR);
    if (size < 1) {
        return 0;
    }
    if (data[0] & 1) {
        server(data + 1, size - 1);
    } else {
        client(data + 1, size - 1);
    }
    return 0;
}
