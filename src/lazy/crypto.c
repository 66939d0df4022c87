/*
 * crypto.c — OpenSSL's libcrypto, opened on first use (lazy.h,
 * docs/adr/0027): SHA-256 and HMAC-SHA-256 for SigV4 (src/objstore), so
 * only an s3:// warehouse needs it.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "lazy/lazy.h"

#define CRYPTO_FUNCS(X)                                                                    \
    X(unsigned char *, SHA256, (const unsigned char *d, size_t n, unsigned char *md),     \
      (d, n, md), NULL)                                                                    \
    X(const EVP_MD *, EVP_sha256, (void), (), NULL)                                        \
    X(unsigned char *, HMAC,                                                               \
      (const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data,      \
       size_t data_len, unsigned char *md, unsigned int *md_len),                          \
      (evp_md, key, key_len, data, data_len, md, md_len), NULL)

LAZY_LIBRARY(crypto_dl, "libcrypto.so.3", "libssl3", CRYPTO_FUNCS, LAZY_NONE, LAZY_NONE);

#define CRYPTO_STUB(ret, name, params, args, fail) \
    LAZY_STUB(crypto_dl, ret, name, params, args, fail)
CRYPTO_FUNCS(CRYPTO_STUB)
