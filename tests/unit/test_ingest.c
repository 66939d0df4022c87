/*
 * test_ingest.c — the resume rule (PROTOCOL.md §4) and field extraction,
 * on hand-written ids and on the recorded events in shared/.
 */
#include "check.h"

#include "core/buf.h"
#include "core/err.h"
#include "ingest/ingest.h"

static void test_resume_rewind(void)
{
    const char *id = "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,"
                     "\"timestamp\":1670732822001},{\"topic\":\"codfw.mediawiki.recentchange\","
                     "\"partition\":0,\"offset\":-1}]";
    struct fr_buf out;
    fr_buf_init(&out, 4096);
    CHECK_EQ_INT(fr_ingest_resume_id(id, strlen(id), 1, &out), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&out),
                 "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,"
                 "\"timestamp\":1670732822000},{\"topic\":\"codfw.mediawiki.recentchange\","
                 "\"partition\":0,\"offset\":-1}]");
    fr_buf_reset(&out);
    /* Both DCs with timestamps: both move back. */
    const char *two = "[{\"topic\":\"a\",\"partition\":0,\"timestamp\":1000},"
                      "{\"topic\":\"b\",\"partition\":0,\"timestamp\":2000}]";
    CHECK_EQ_INT(fr_ingest_resume_id(two, strlen(two), 5, &out), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&out), "[{\"topic\":\"a\",\"partition\":0,\"timestamp\":995},"
                                    "{\"topic\":\"b\",\"partition\":0,\"timestamp\":1995}]");
    fr_buf_reset(&out);
    CHECK_EQ_INT(fr_ingest_resume_id(two, strlen(two), 0, &out), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&out), two);
    const char *bad[] = {"", "[]", "{}", "[1]", "[{\"timestamp\":1.5}]", "[{\"timestamp\":",
                         "not json"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_buf_reset(&out);
        CHECK_EQ_INT(fr_ingest_resume_id(bad[i], strlen(bad[i]), 1, &out), FR_EJSON);
    }
    fr_buf_free(&out);
}

static void test_extract(void)
{
    struct fr_ingest_meta m;
    const char *ev = "{\"meta\":{\"id\":\"0b6c4f5e-2f7b-4b58-9a55-2b8d7f0b1c2d\","
                     "\"dt\":\"2026-10-05T13:42:02.235Z\",\"domain\":\"en.wikipedia.org\"},"
                     "\"wiki\":\"enwiki\",\"title\":\"Marie Curie\",\"type\":\"edit\"}";
    fr_ingest_extract(ev, strlen(ev), &m);
    CHECK_EQ_INT(m.canary, 0);
    CHECK_EQ_INT(m.event_ms, 1791207722235LL);
    CHECK_EQ_STR(m.meta_id, "0b6c4f5e-2f7b-4b58-9a55-2b8d7f0b1c2d");
    CHECK_EQ_INT(m.key_len, strlen("enwiki") + 1 + strlen("Marie Curie"));
    CHECK_MEM(m.key, "enwiki\x1fMarie Curie", m.key_len);
    const char *broken = "{\"meta\":{\"id\":\"x\",";
    fr_ingest_extract(broken, strlen(broken), &m);
    CHECK_EQ_INT(m.event_ms, -1);
    CHECK_EQ_INT(m.key_len, 0);
}

static void test_recorded_canary(void)
{
    const char *path = check_shared("data/wikimedia/ircstream-00-empty.json");
    if (!path) {
        fprintf(stderr, "  skip: shared/data/wikimedia not found (set FR_SHARED_DIR)\n");
        return;
    }
    struct fr_buf buf;
    fr_buf_init(&buf, 1 << 20);
    FILE *f = fopen(path, "r");
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        fr_buf_append(&buf, chunk, n);
    }
    fclose(f);
    struct fr_ingest_meta m;
    fr_ingest_extract((const char *)buf.data, buf.len, &m);
    CHECK_EQ_INT(m.canary, 1);
    CHECK(m.event_ms > 0);
    fr_buf_free(&buf);

    path = check_shared("data/wikimedia/ircstream-02-edit.json");
    fr_buf_init(&buf, 1 << 20);
    f = fopen(path, "r");
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        fr_buf_append(&buf, chunk, n);
    }
    fclose(f);
    fr_ingest_extract((const char *)buf.data, buf.len, &m);
    CHECK_EQ_INT(m.canary, 0);
    CHECK(m.key_len > 0);
    fr_buf_free(&buf);
}

int main(void)
{
    RUN(test_resume_rewind);
    RUN(test_extract);
    RUN(test_recorded_canary);
    return check_report();
}
