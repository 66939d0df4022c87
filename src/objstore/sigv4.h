/*
 * sigv4.h — AWS Signature Version 4 (header-based), written here over
 * OpenSSL's libcrypto (SHA-256, HMAC-SHA-256). docs/adr/0011-s3-client.md
 * says why we sign ourselves instead of using libcurl's CURLOPT_AWS_SIGV4.
 *
 * The four steps of the specification, each visible to tests:
 *   1. canonical request: METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n PAYLOAD-HASH
 *   2. string to sign:    "AWS4-HMAC-SHA256" \n DATE \n SCOPE \n hex(SHA256(creq))
 *   3. signing key:       HMAC chain "AWS4"+secret -> date -> region -> service -> "aws4_request"
 *   4. Authorization:     "AWS4-HMAC-SHA256 Credential=<id>/<scope>, SignedHeaders=..., Signature=..."
 *
 * Invariants: the secret key is read only to derive the signing key and is
 * never copied into any output (the canonical request, the string to sign
 * and the header hold no secret). Pure functions, thread-safe, no I/O.
 */
#ifndef FR_OBJSTORE_SIGV4_H
#define FR_OBJSTORE_SIGV4_H

#include <stddef.h>
#include <stdint.h>

struct fr_buf;

/* A header to sign: any case, value as sent (trimmed and space-collapsed
 * for signing). Repeated names are merged in the given order, "a,b". */
struct fr_sigv4_header {
    const char *name;
    const char *value;
};

/* A query parameter, NOT encoded (the signer encodes and sorts). value may
 * be "" (a bare "?uploads" is signed as "uploads="). */
struct fr_sigv4_param {
    const char *name;
    const char *value;
};

#define FR_SIGV4_MAX_HEADERS 32
#define FR_SIGV4_MAX_PARAMS 16

struct fr_sigv4_req {
    const char *method;    /* "GET", "PUT", ... */
    const char *uri;       /* canonical URI, already encoded (fr_sigv4_encode_path) */
    const struct fr_sigv4_param *params;
    uint32_t nparams;
    const struct fr_sigv4_header *headers; /* must include host and x-amz-date */
    uint32_t nheaders;
    const char *payload_hash; /* 64 lowercase hex, or "UNSIGNED-PAYLOAD" */
    const char *amz_date;     /* "YYYYMMDDTHHMMSSZ" (16 characters) */
    const char *region;       /* "us-east-1" */
    const char *service;      /* "s3" */
    const char *access_key_id;
    const char *secret_key; /* read, never copied out */
};

struct fr_sigv4_out {
    char signature[65];          /* lowercase hex */
    char signed_headers[512];    /* "host;x-amz-date" */
    char authorization[1024];    /* the whole Authorization header value */
};

/*
 * Sign req. creq and sts, when not NULL, receive the canonical request and
 * the string to sign (for tests and for diagnosing a SignatureDoesNotMatch;
 * they contain no secret). FR_EINVAL for a malformed request (no date, too
 * many headers), FR_ETOOBIG when a buffer cap is hit.
 */
int fr_sigv4_sign(const struct fr_sigv4_req *req, struct fr_sigv4_out *out, struct fr_buf *creq,
                  struct fr_buf *sts);

/* Lowercase hex SHA-256 of data (out: 65 bytes with the NUL). */
void fr_sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* URI-encode per SigV4 (RFC 3986 unreserved kept, everything else %XX
 * uppercase, UTF-8 bytewise). encode_path: a path, '/' kept; otherwise
 * '/' becomes %2F (query names and values). Appends to buf. */
int fr_sigv4_encode(struct fr_buf *buf, const char *s, size_t len, int keep_slash);

/* "YYYYMMDDTHHMMSSZ" for Unix milliseconds (UTC). out: 17 bytes. */
void fr_sigv4_amz_date(int64_t unix_ms, char out[17]);

#endif
