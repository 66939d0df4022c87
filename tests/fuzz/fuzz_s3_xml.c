/*
 * fuzz_s3_xml.c — libFuzzer target for src/objstore/xml.c, the reader of
 * S3's XML answers.
 *
 * Each input goes through every answer parser (listing, multipart
 * uploads, upload id, error). Checks:
 *   1. nothing crashes, leaks or reads past the input (ASan, UBSan);
 *   2. a listing that parses hands out keys that are non-empty, NUL-ended
 *      within their field, and sizes >= 0;
 *   3. a document the reader accepts is rejected once its last '>' is cut
 *      off (a truncated answer never passes as complete).
 * Built with clang -fsanitize=fuzzer,address,undefined by
 * tests/fuzz/s3xml.cmake; run by the ctest test fuzz_s3_xml for 10 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "objstore/objstore_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_obj(void *arg, const struct fr_s3_object *o)
{
    (void)arg;
    size_t n = strnlen(o->key, sizeof o->key);
    if (n == 0 || n >= sizeof o->key || o->size < 0) {
        abort();
    }
    return FR_OK;
}

static int on_upload(void *arg, const char *key, const char *id, int64_t initiated)
{
    (void)arg;
    (void)initiated;
    if (!key[0] || !id[0]) {
        abort();
    }
    return FR_OK;
}

static int count_cb(void *arg, int depth, char names[][S3_XML_MAX_NAME], const char *text,
                    size_t len)
{
    (void)names;
    if (depth < 1 || depth > S3_XML_MAX_DEPTH || strlen(text) != len) {
        abort();
    }
    (*(int *)arg)++;
    return FR_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *doc = (const char *)data;
    char token[1024], km[1024], im[1024], id[1024], code[64], msg[256];
    int truncated;
    s3_parse_list(doc, size, on_obj, NULL, &truncated, token, sizeof token);
    s3_parse_uploads(doc, size, on_upload, NULL, &truncated, km, im, sizeof km);
    s3_parse_upload_id(doc, size, id, sizeof id);
    s3_parse_error(doc, size, code, sizeof code, msg, sizeof msg);
    int n = 0;
    if (s3_xml_parse(doc, size, count_cb, &n) == FR_OK) {
        if (n < 1) {
            abort();
        }
        size_t last = size;
        while (last > 0 && doc[last - 1] != '>') {
            last--;
        }
        int m = 0;
        if (last > 0 && s3_xml_parse(doc, last - 1, count_cb, &m) == FR_OK) {
            fprintf(stderr, "accepted with its last '>' cut off\n");
            abort();
        }
    }
    return 0;
}
