/*
 * sigv4.c — AWS Signature Version 4 over OpenSSL libcrypto (sigv4.h).
 *
 * Canonicalisation rules implemented here (from AWS's "Create a canonical
 * request" page and its test suite):
 *   - URI: given already encoded; S3 never normalises "." or "//", so the
 *     caller's encoded path is used as is.
 *   - Query: each name and value URI-encoded (unreserved A-Za-z0-9-_.~
 *     kept, the rest %XX uppercase, '/' as %2F), sorted by encoded name
 *     then encoded value, joined "n=v&n=v"; a bare name signs as "n=".
 *   - Headers: names lowercased; values trimmed and inner runs of spaces
 *     collapsed to one; sorted by name (stable, so repeated names keep the
 *     caller's order) and repeated names merged with ",".
 *   - Signed headers: the sorted lowercase names joined with ';'.
 * Pure and thread-safe; the secret stays in this file's stack frames.
 */
#include "objstore/sigv4.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/err.h"

#define SIGV4_LINE_MAX 8192 /* one canonical header line or query pair */

void fr_sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH] = {0}; /* stays zero if libcrypto is absent */
    SHA256(data, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    out[64] = 0;
}

static void hmac(const void *key, size_t keylen, const void *msg, size_t msglen,
                 unsigned char out[32])
{
    unsigned int n = 32;
    memset(out, 0, 32); /* stays zero if libcrypto is absent (src/lazy/crypto.c) */
    HMAC(EVP_sha256(), key, (int)keylen, msg, msglen, out, &n);
}

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

int fr_sigv4_encode(struct fr_buf *buf, const char *s, size_t len, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int rc;
        if (unreserved(c) || (keep_slash && c == '/')) {
            rc = fr_buf_putc(buf, c);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = fr_buf_append(buf, esc, 3);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

void fr_sigv4_amz_date(int64_t unix_ms, char out[17])
{
    time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* --------------------------------------------------------------- query -- */

struct sig_pair {
    char *name; /* encoded, malloc'd */
    char *value;
    uint32_t order;
};

static int pair_cmp(const void *a, const void *b)
{
    const struct sig_pair *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c == 0) {
        c = strcmp(x->value, y->value);
    }
    return c;
}

static char *encode_dup(const char *s, int keep_slash)
{
    struct fr_buf b;
    fr_buf_init(&b, SIGV4_LINE_MAX);
    if (fr_sigv4_encode(&b, s, strlen(s), keep_slash) < 0 || !fr_buf_cstr(&b)) {
        fr_buf_free(&b);
        return NULL;
    }
    return (char *)b.data; /* ownership moves to the caller */
}

static int put_query(const struct fr_sigv4_req *req, struct fr_buf *creq)
{
    struct sig_pair pairs[FR_SIGV4_MAX_PARAMS];
    uint32_t n = 0;
    int rc = FR_OK;
    if (req->nparams > FR_SIGV4_MAX_PARAMS) {
        return FR_EINVAL;
    }
    for (uint32_t i = 0; i < req->nparams; i++) {
        pairs[n].name = encode_dup(req->params[i].name, 0);
        pairs[n].value = encode_dup(req->params[i].value ? req->params[i].value : "", 0);
        pairs[n].order = i;
        n++;
        if (!pairs[n - 1].name || !pairs[n - 1].value) {
            rc = FR_ENOMEM;
            goto cleanup;
        }
    }
    qsort(pairs, n, sizeof pairs[0], pair_cmp);
    for (uint32_t i = 0; i < n && rc == FR_OK; i++) {
        rc = fr_buf_printf(creq, "%s%s=%s", i ? "&" : "", pairs[i].name, pairs[i].value);
    }
cleanup:
    for (uint32_t i = 0; i < n; i++) {
        free(pairs[i].name);
        free(pairs[i].value);
    }
    return rc;
}

/* ------------------------------------------------------------- headers -- */

struct sig_hdr {
    char name[128];
    const char *value;
    uint32_t order;
};

static int hdr_cmp(const void *a, const void *b)
{
    const struct sig_hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c == 0) {
        c = x->order < y->order ? -1 : x->order > y->order;
    }
    return c;
}

/* Append value trimmed, with runs of spaces and tabs collapsed to one. */
static int put_trimmed(struct fr_buf *b, const char *v)
{
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    size_t len = strlen(v);
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) {
        len--;
    }
    int space = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] == ' ' || v[i] == '\t') {
            space = 1;
            continue;
        }
        if (space) {
            int rc = fr_buf_putc(b, ' ');
            if (rc < 0) {
                return rc;
            }
            space = 0;
        }
        int rc = fr_buf_putc(b, (uint8_t)v[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return FR_OK;
}

static int put_headers(const struct fr_sigv4_req *req, struct fr_buf *creq, char *signed_out,
                       size_t signed_cap)
{
    struct sig_hdr h[FR_SIGV4_MAX_HEADERS];
    if (req->nheaders > FR_SIGV4_MAX_HEADERS) {
        return FR_EINVAL;
    }
    for (uint32_t i = 0; i < req->nheaders; i++) {
        size_t nl = strlen(req->headers[i].name);
        if (nl == 0 || nl >= sizeof h[i].name) {
            return FR_EINVAL;
        }
        for (size_t k = 0; k <= nl; k++) {
            h[i].name[k] = (char)tolower((unsigned char)req->headers[i].name[k]);
        }
        h[i].value = req->headers[i].value ? req->headers[i].value : "";
        h[i].order = i;
    }
    qsort(h, req->nheaders, sizeof h[0], hdr_cmp);
    size_t sl = 0;
    signed_out[0] = 0;
    for (uint32_t i = 0; i < req->nheaders; i++) {
        int rc;
        if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0) {
            rc = fr_buf_putc(creq, ',');
        } else {
            if (i > 0) {
                rc = fr_buf_putc(creq, '\n');
                if (rc < 0) {
                    return rc;
                }
            }
            rc = fr_buf_printf(creq, "%s:", h[i].name);
            int n = snprintf(signed_out + sl, signed_cap - sl, "%s%s", sl ? ";" : "", h[i].name);
            if (n < 0 || (size_t)n >= signed_cap - sl) {
                return FR_ETOOBIG;
            }
            sl += (size_t)n;
        }
        if (rc == FR_OK) {
            rc = put_trimmed(creq, h[i].value);
        }
        if (rc < 0) {
            return rc;
        }
    }
    /* the header block ends with a newline, then the blank separator line */
    return fr_buf_puts(creq, "\n\n");
}

/* ---------------------------------------------------------------- sign -- */

int fr_sigv4_sign(const struct fr_sigv4_req *req, struct fr_sigv4_out *out, struct fr_buf *creq_out,
                  struct fr_buf *sts_out)
{
    struct fr_buf creq, sts;
    fr_buf_init(&creq, 64 * 1024);
    fr_buf_init(&sts, 4096);
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    char date[9], hash[65], scope[256];
    int rc = FR_OK;
    memset(out, 0, sizeof *out);
    if (!req->method || !req->uri || !req->amz_date || strlen(req->amz_date) != 16 ||
        !req->region || !req->service || !req->access_key_id || !req->secret_key ||
        !req->payload_hash) {
        rc = FR_EINVAL;
        goto cleanup;
    }
    memcpy(date, req->amz_date, 8);
    date[8] = 0;
    /* 1. canonical request */
    rc = fr_buf_printf(&creq, "%s\n%s\n", req->method, req->uri[0] ? req->uri : "/");
    if (rc == FR_OK) {
        rc = put_query(req, &creq);
    }
    if (rc == FR_OK) {
        rc = fr_buf_putc(&creq, '\n');
    }
    if (rc == FR_OK) {
        rc = put_headers(req, &creq, out->signed_headers, sizeof out->signed_headers);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(&creq, "%s\n%s", out->signed_headers, req->payload_hash);
    }
    if (rc < 0 || !fr_buf_cstr(&creq)) {
        rc = rc < 0 ? rc : FR_ENOMEM;
        goto cleanup;
    }
    /* 2. string to sign */
    int n = snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, req->region, req->service);
    if (n < 0 || (size_t)n >= sizeof scope) {
        rc = FR_ETOOBIG;
        goto cleanup;
    }
    fr_sigv4_sha256_hex(creq.data, creq.len, hash);
    rc = fr_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", req->amz_date, scope, hash);
    if (rc < 0) {
        goto cleanup;
    }
    /* 3. signing key: the secret is used here only */
    {
        char kbuf[256];
        size_t sl = strlen(req->secret_key);
        if (sl + 4 > sizeof kbuf) {
            rc = FR_ETOOBIG;
            goto cleanup;
        }
        memcpy(kbuf, "AWS4", 4);
        memcpy(kbuf + 4, req->secret_key, sl);
        hmac(kbuf, sl + 4, date, 8, k1);
        memset(kbuf, 0, sizeof kbuf);
    }
    hmac(k1, 32, req->region, strlen(req->region), k2);
    hmac(k2, 32, req->service, strlen(req->service), k3);
    hmac(k3, 32, "aws4_request", 12, k4);
    /* 4. signature and header */
    hmac(k4, 32, sts.data, sts.len, sig);
    for (int i = 0; i < 32; i++) {
        snprintf(out->signature + 2 * i, 3, "%02x", sig[i]);
    }
    n = snprintf(out->authorization, sizeof out->authorization,
                 "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                 req->access_key_id, scope, out->signed_headers, out->signature);
    if (n < 0 || (size_t)n >= sizeof out->authorization) {
        rc = FR_ETOOBIG;
        goto cleanup;
    }
    if (creq_out) {
        rc = fr_buf_append(creq_out, creq.data, creq.len);
    }
    if (rc == FR_OK && sts_out) {
        rc = fr_buf_append(sts_out, sts.data, sts.len);
    }
cleanup:
    memset(k1, 0, sizeof k1);
    memset(k2, 0, sizeof k2);
    memset(k3, 0, sizeof k3);
    memset(k4, 0, sizeof k4);
    fr_buf_free(&creq);
    fr_buf_free(&sts);
    return rc;
}
