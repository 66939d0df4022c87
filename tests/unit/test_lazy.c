/*
 * test_lazy.c — the optional libraries opened on first use (src/core/dynlib.h,
 * src/lazy, docs/adr/0027): none of them is mapped before its first call;
 * each stub then reaches the real library (its answer is the library's own:
 * libcurl's error text, snappy's bound, SHA-256 of "abc" against FIPS 180-2,
 * librdkafka's version, a libmicrohttpd response); a library that is absent,
 * or lacks a function, fails once with a message naming it and its package,
 * and stays failed; eight threads loading one library at once all get it.
 */
#include "check.h"

#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <snappy-c.h>

#include "core/dynlib.h"
#include "core/err.h"

static const char *const optional[] = {"libcurl.so.4", "librdkafka.so.1", "libmicrohttpd.so.12",
                                       "libsnappy.so.1", "libcrypto.so.3", "libgnutls.so.30"};
/* (libstdc++, which libsnappy brings, is not listed: UBSan's runtime links it.) */

/* Runs first: nothing has called a stub yet. */
static void test_nothing_mapped_at_start(void)
{
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        if (fr_dl_mapped(optional[i])) {
            fprintf(stderr, "mapped before any call: %s\n", optional[i]);
        }
        CHECK(!fr_dl_mapped(optional[i]));
    }
    CHECK(fr_dl_mapped("libc.so.6")); /* the probe itself works */
}

static void test_stubs_reach_the_libraries(void)
{
    CHECK_EQ_STR(curl_easy_strerror(CURLE_OK), "No error");
    CHECK(fr_dl_mapped("libcurl.so.4"));
    CURL *h = curl_easy_init();
    CHECK(h != NULL);
    CHECK_EQ_INT(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1234L), CURLE_OK);
    CHECK_EQ_INT(curl_easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:9/"), CURLE_OK);
    CHECK_EQ_INT(curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)5), CURLE_OK);
    char *url = NULL;
    CHECK_EQ_INT(curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url), CURLE_OK);
    CHECK_EQ_STR(url ? url : "", "http://127.0.0.1:9/");
    curl_easy_cleanup(h);

    CHECK_EQ_INT(snappy_max_compressed_length(600), 32 + 600 + 600 / 6);
    CHECK(fr_dl_mapped("libsnappy.so.1"));
    char packed[64];
    size_t plen = sizeof packed, ulen = 0;
    CHECK_EQ_INT(snappy_compress("freshet freshet", 15, packed, &plen), SNAPPY_OK);
    CHECK_EQ_INT(snappy_uncompressed_length(packed, plen, &ulen), SNAPPY_OK);
    CHECK_EQ_INT(ulen, 15);

    unsigned char md[SHA256_DIGEST_LENGTH];
    CHECK(SHA256((const unsigned char *)"abc", 3, md) != NULL);
    static const unsigned char abc[8] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea};
    CHECK_MEM(md, abc, sizeof abc);
    CHECK(fr_dl_mapped("libcrypto.so.3"));

    CHECK(rd_kafka_version() >= 0x02000000);
    CHECK(fr_dl_mapped("librdkafka.so.1"));

    struct MHD_Response *r = MHD_create_response_from_buffer(2, "ok", MHD_RESPMEM_PERSISTENT);
    CHECK(r != NULL);
    CHECK_EQ_INT(MHD_add_response_header(r, "X-Test", "1"), MHD_YES);
    MHD_destroy_response(r);
    CHECK(fr_dl_mapped("libmicrohttpd.so.12"));
}

static const char *const cos_names[] = {"cos"};
static void *cos_fns[1];
static struct fr_dl libm_dl = FR_DL_INIT("libm.so.6", "libc6", cos_names, cos_fns);

static void test_absent_library(void)
{
    static const char *const names[] = {"fr_absent"};
    static void *fns[1];
    static struct fr_dl absent = FR_DL_INIT("libfreshet-absent.so.7", "freshet-absent", names, fns);
    CHECK_EQ_STR(fr_dl_error(&absent), "");
    CHECK_EQ_INT(fr_dl_load(&absent), FR_ENOTFOUND);
    CHECK(strstr(fr_dl_error(&absent), "libfreshet-absent.so.7") != NULL);
    CHECK(strstr(fr_dl_error(&absent), "freshet-absent") != NULL);
    CHECK_EQ_INT(fr_dl_ready(&absent), FR_ENOTFOUND); /* stays failed */

    static const char *const missing[] = {"cos", "fr_no_such_function"};
    static void *mfns[2];
    static struct fr_dl partial = FR_DL_INIT("libm.so.6", "libc6", missing, mfns);
    CHECK_EQ_INT(fr_dl_load(&partial), FR_ENOTFOUND);
    CHECK(strstr(fr_dl_error(&partial), "has no function fr_no_such_function") != NULL);
}

static void *load_libm(void *arg)
{
    (void)arg;
    return fr_dl_load(&libm_dl) == FR_OK ? cos_fns[0] : NULL;
}

static void test_concurrent_first_use(void)
{
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(pthread_create(&t[i], NULL, load_libm, NULL), 0);
    }
    void *got[8];
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], &got[i]);
        CHECK(got[i] != NULL);
        CHECK(got[i] == got[0]);
    }
    double (*fn)(double) = (double (*)(double))cos_fns[0];
    CHECK(fn && fn(0.0) == 1.0);
}

int main(void)
{
    RUN(test_nothing_mapped_at_start);
    RUN(test_stubs_reach_the_libraries);
    RUN(test_absent_library);
    RUN(test_concurrent_first_use);
    return check_report();
}
