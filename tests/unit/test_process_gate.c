/*
 * test_process_gate.c — the decode + data-quality gate (src/process/gate.c):
 * every reason code on hand-written events, the precedence between
 * reasons, field decoding (escapes, nulls, int64), every recorded event in
 * shared/data/wikimedia (all pass except the canary; fields cross-checked
 * with src/core/json.c), and docs/QUALITY.md against its generator.
 */
#include "check.h"
#include "gate_same.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "core/utf8.h"
#include "process/process.h"

#include <errno.h>

#define BASE                                                                                       \
    "{\"$schema\":\"/mediawiki/recentchange/1.0.0\",\"meta\":{\"uri\":\"https://"                  \
    "en.wikipedia.org/wiki/X\",\"request_id\":\"r\",\"id\":\"95187f4d-688a-4823-b669-"             \
    "b4f821eeb97e\",\"dt\":\"2024-10-01T19:17:48Z\",\"domain\":\"en.wikipedia.org\","              \
    "\"stream\":\"mediawiki.recentchange\",\"topic\":\"t\",\"partition\":0,\"offset\":"            \
    "6320664800},\"id\":3390891945,\"type\":\"edit\",\"namespace\":0,\"title\":\"Main "            \
    "Page\",\"comment\":\"c\",\"timestamp\":1727810268,\"user\":\"Alice\",\"bot\":false,"          \
    "\"minor\":true,\"patrolled\":false,\"length\":{\"old\":10,\"new\":25},\"revision\":"          \
    "{\"old\":1,\"new\":2},\"server_url\":\"https://en.wikipedia.org\",\"server_name\":"           \
    "\"en.wikipedia.org\",\"server_script_path\":\"/w\",\"wiki\":\"enwiki\","                      \
    "\"parsedcomment\":\"c\"}"

#define BASE_US INT64_C(1727810268000000)

static struct fr_gate *gate;
static struct fr_row row;
static char detail[FR_GATE_DETAIL_MAX];
static const struct fr_proc_pos pos = {.partition = 3, .offset = 77, .ingest_ms = 1727810269000};

/* scan_gate: the same options, byte-by-byte walk only (gate_same.h);
 * have_index: whether this CPU gives gate its indexed walk at all. */
static struct fr_gate *scan_gate;
static int have_index;
static uint64_t agreed, agreed_indexed;

/* Both walks give the same verdict, detail and row for json. */
static void walks_agree(const struct fr_proc_pos *at, const char *json, size_t len)
{
    int indexed = 0;
    const char *diff = gate_same(gate, scan_gate, at, json, len, &indexed);
    if (diff) {
        fprintf(stderr, "  indexed and byte-by-byte walks differ (%s) on %zu bytes: %.200s\n", diff,
                len, json);
        check_case_failed = 1;
    }
    agreed++;
    agreed_indexed += indexed;
}

static enum fr_gate_reason run_len(const char *json, size_t len)
{
    walks_agree(&pos, json, len);
    return fr_gate_decode(gate, &pos, json, len, &row, detail);
}

static enum fr_gate_reason run(const char *json)
{
    return run_len(json, strlen(json));
}

/* BASE with the first occurrence of from replaced by to. */
static enum fr_gate_reason run_sub(const char *from, const char *to)
{
    static char buf[8192];
    const char *at = strstr(BASE, from);
    if (!at) {
        fprintf(stderr, "test bug: %s not in BASE\n", from);
        exit(2);
    }
    size_t head = (size_t)(at - BASE);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)head, BASE, to, at + strlen(from));
    return run(buf);
}

static int str_is(struct fr_proc_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}

#define EXPECT(call, reason)                                                                       \
    do {                                                                                           \
        enum fr_gate_reason got_ = (call);                                                         \
        if (got_ != (reason)) {                                                                    \
            fprintf(stderr, "%s:%d: %s: got %s (%s), want %s\n", __FILE__, __LINE__, #call,        \
                    fr_gate_reason_name(got_), detail, fr_gate_reason_name(reason));               \
            check_case_failed = 1;                                                                 \
        }                                                                                          \
    } while (0)

static void test_base_row(void)
{
    EXPECT(run(BASE), FR_GATE_OK);
    CHECK_EQ_STR(detail, "");
    CHECK_EQ_INT(row.partition, 3);
    CHECK_EQ_INT(row.offset, 77);
    CHECK_EQ_INT(row.ingest_ms, 1727810269000);
    CHECK(str_is(row.meta_id, "95187f4d-688a-4823-b669-b4f821eeb97e"));
    static const uint8_t key[16] = {0x95, 0x18, 0x7f, 0x4d, 0x68, 0x8a, 0x48, 0x23,
                                    0xb6, 0x69, 0xb4, 0xf8, 0x21, 0xee, 0xb9, 0x7e};
    CHECK_MEM(row.key, key, 16);
    CHECK_EQ_INT(row.event_us, BASE_US);
    CHECK(str_is(row.wiki, "enwiki"));
    CHECK_EQ_INT(row.type, FR_TYPE_EDIT);
    uint32_t want = FR_ROW_RC_ID | FR_ROW_NAMESPACE | FR_ROW_TITLE | FR_ROW_USER | FR_ROW_BOT |
                    FR_ROW_MINOR | FR_ROW_PATROLLED | FR_ROW_LENGTH_OLD | FR_ROW_LENGTH_NEW |
                    FR_ROW_REVISION_OLD | FR_ROW_REVISION_NEW | FR_ROW_SERVER_NAME | FR_ROW_COMMENT;
    CHECK_EQ_INT(row.has, want);
    CHECK_EQ_INT(row.rc_id, 3390891945LL);
    CHECK_EQ_INT(row.ns, 0);
    CHECK(str_is(row.title, "Main Page"));
    CHECK(str_is(row.user, "Alice"));
    CHECK(str_is(row.comment, "c"));
    CHECK(str_is(row.server_name, "en.wikipedia.org"));
    CHECK_EQ_INT(row.bot, 0);
    CHECK_EQ_INT(row.minor, 1);
    CHECK_EQ_INT(row.patrolled, 0);
    CHECK_EQ_INT(row.length_old, 10);
    CHECK_EQ_INT(row.length_new, 25);
    CHECK_EQ_INT(row.revision_old, 1);
    CHECK_EQ_INT(row.revision_new, 2);
}

static void test_log_event_and_nulls(void)
{
    const char *ev =
        "{\"meta\":{\"id\":\"DD5E1823-1249-48EA-B3CF-EDE65C619C44\",\"dt\":\"2019-12-03T23:56:"
        "15+00:00\"},\"type\":\"log\",\"namespace\":118,\"title\":\"Draft:X\",\"wiki\":"
        "\"enwiki\",\"id\":null,\"log_id\":0,\"log_type\":\"abusefilter\",\"log_action\":"
        "\"hit\",\"log_params\":{\"a\":[1,{\"b\":null}],\"c\":\"d\"},\"log_action_comment\":"
        "null,\"length\":{\"old\":null,\"new\":null},\"revision\":{}}";
    struct fr_proc_pos p = {0, 0, 1575417375000};
    EXPECT(fr_gate_decode(gate, &p, ev, strlen(ev), &row, detail), FR_GATE_OK);
    CHECK_EQ_INT(row.type, FR_TYPE_LOG);
    CHECK_EQ_INT(row.has, FR_ROW_NAMESPACE | FR_ROW_TITLE | FR_ROW_LOG_ID | FR_ROW_LOG_TYPE |
                              FR_ROW_LOG_ACTION);
    CHECK_EQ_INT(row.ns, 118);
    CHECK_EQ_INT(row.log_id, 0);
    CHECK(str_is(row.log_type, "abusefilter"));
    CHECK(str_is(row.log_action, "hit"));
    CHECK_EQ_INT(row.key[0], 0xdd);
    CHECK_EQ_INT(row.event_us, INT64_C(1575417375000000));
    /* Upper-case UUIDs are the same key as lower-case ones. */
    uint8_t a[16], b[16];
    CHECK_EQ_INT(fr_gate_uuid("dd5e1823-1249-48ea-b3cf-ede65c619c44", 36, a), FR_OK);
    CHECK_MEM(a, row.key, 16);
    CHECK_EQ_INT(fr_gate_uuid("dd5e1823-1249-48ea-b3cf-ede65c619c4", 35, b), FR_EINVAL);
    CHECK_EQ_INT(fr_gate_uuid("dd5e1823-1249-48ea-b3cf_ede65c619c44", 36, b), FR_EINVAL);
    CHECK_EQ_INT(fr_gate_uuid("dd5e1823-1249-48ea-b3cf-ede65c619c4g", 36, b), FR_EINVAL);
    CHECK_EQ_INT(fr_gate_uuid("dd5e18231249-48ea-b3cf-ede65c619c44-", 36, b), FR_EINVAL);
}

/* Every byte value at every position of a UUID, against a reference
 * written here: the 8-4-4-4-12 layout, hex digits in either case. */
static int ref_hex(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static int ref_uuid(const char *s, uint8_t key[16])
{
    int k = 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') {
                return -1;
            }
            continue;
        }
        int h = ref_hex((unsigned char)s[i]), l = ref_hex((unsigned char)s[i + 1]);
        if (h < 0 || l < 0) {
            return -1;
        }
        key[k++] = (uint8_t)(h * 16 + l);
        i++;
    }
    return 0;
}

static void test_uuid_bytes(void)
{
    const char *valid[] = {"dd5e1823-1249-48ea-b3cf-ede65c619c44",
                           "00000000-0000-0000-0000-000000000000",
                           "FFFFFFFF-ffff-AbCd-eF01-23456789abcd"};
    int mismatches = 0, accepted = 0;
    for (size_t v = 0; v < sizeof valid / sizeof *valid; v++) {
        for (int i = 0; i < 36; i++) {
            for (int c = 0; c < 256; c++) {
                char s[37];
                memcpy(s, valid[v], 37);
                s[i] = (char)c;
                uint8_t got[16], want[16];
                int rw = ref_uuid(s, want);
                int rg = fr_gate_uuid(s, 36, got);
                if ((rw == 0) != (rg == FR_OK) || (rw == 0 && memcmp(got, want, 16) != 0)) {
                    mismatches++;
                }
                accepted += rw == 0;
            }
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    /* 32 digit positions x 22 hex bytes per UUID: the loop did accept */
    CHECK_EQ_INT(accepted, 3 * 32 * 22 + 3 * 4);
}

static void test_escapes(void)
{
    EXPECT(run_sub("\"title\":\"Main Page\"",
                   "\"title\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\n\\t\\u0000x\""),
           FR_GATE_OK);
    const char want[] = "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ / \n\t\0x";
    CHECK_EQ_INT(row.title.len, sizeof want - 1);
    CHECK_MEM(row.title.s, want, sizeof want - 1);
    /* Raw UTF-8 passes through. */
    EXPECT(run_sub("\"user\":\"Alice\"", "\"user\":\"\xd0\x90\xe2\x80\x8e\xf0\x9f\x98\x80\""),
           FR_GATE_OK);
    CHECK(str_is(row.user, "\xd0\x90\xe2\x80\x8e\xf0\x9f\x98\x80"));
    /* Escaped member names are matched after unescaping. */
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"w\\u0069ki\":\"frwiki\""), FR_GATE_OK);
    CHECK(str_is(row.wiki, "frwiki"));
    /* Escaped required values too. */
    EXPECT(run_sub("\"type\":\"edit\"", "\"type\":\"\\u006eew\""), FR_GATE_OK);
    CHECK_EQ_INT(row.type, FR_TYPE_NEW);
    /* Whitespace everywhere. */
    EXPECT(run(" \n{ \"meta\" : { \"id\" : \"95187f4d-688a-4823-b669-b4f821eeb97e\" ,\r\n"
               "\t\"dt\":\"2024-10-01T19:17:48.5Z\" } , \"wiki\" : \"x\" , \"type\" : \"new\" ,"
               " \"length\" : { \"new\" : -3 } } \n"),
           FR_GATE_OK);
    CHECK_EQ_INT(row.event_us, BASE_US + 500000);
    CHECK_EQ_INT(row.has, FR_ROW_LENGTH_NEW);
    CHECK_EQ_INT(row.length_new, -3);
    /* int64 extremes. */
    EXPECT(run_sub("\"id\":3390891945", "\"id\":-9223372036854775808"), FR_GATE_OK);
    CHECK_EQ_INT(row.rc_id, INT64_MIN);
    EXPECT(run_sub("\"id\":3390891945", "\"id\":9223372036854775807"), FR_GATE_OK);
    CHECK_EQ_INT(row.rc_id, INT64_MAX);
}

/* Member names are matched in place when they come in the order seen
 * last (gate.c, next[]); any other order, a longer name with the expected
 * one as its prefix, or an escaped name must decode the same. */
/* fr_gate_decode_to: the same row as fr_gate_decode, strings without
 * escapes pointing into the record itself, decoded ones into the arena. */
static int within(struct fr_proc_str s, const char *base, size_t len)
{
    return s.s >= base && s.s + s.len <= base + len;
}

static void test_decode_to_in_place(void)
{
    const char *subs[][2] = {{"\"title\":\"Main Page\"", "\"title\":\"Main Page\""},
                             {"\"title\":\"Main Page\"", "\"title\":\"caf\\u00e9 \\\"q\\\"\""}};
    for (int k = 0; k < 2; k++) {
        char json[8192];
        const char *at = strstr(BASE, subs[k][0]);
        snprintf(json, sizeof json, "%.*s%s%s", (int)(at - BASE), BASE, subs[k][1],
                 at + strlen(subs[k][0]));
        size_t len = strlen(json);
        struct fr_row want;
        CHECK_EQ_INT(fr_gate_decode(gate, &pos, json, len, &want, detail), FR_GATE_OK);
        static char arena[8192];
        struct fr_row got;
        CHECK_EQ_INT(fr_gate_decode_to(gate, &pos, json, len, &got, detail, arena), FR_GATE_OK);
        const struct fr_proc_str *w[] = {&want.title, &want.user, &want.comment, &want.wiki,
                                         &want.server_name, &want.meta_id};
        const struct fr_proc_str *g[] = {&got.title, &got.user, &got.comment, &got.wiki,
                                         &got.server_name, &got.meta_id};
        for (int i = 0; i < 6; i++) {
            CHECK_EQ_INT(g[i]->len, w[i]->len);
            CHECK_MEM(g[i]->s, w[i]->s, w[i]->len);
            int escaped = k == 1 && i == 0;
            CHECK(escaped ? within(*g[i], arena, len) : within(*g[i], json, len));
        }
        CHECK_EQ_INT(got.event_us, want.event_us);
        CHECK_EQ_INT(got.type, want.type);
        CHECK_MEM(got.key, want.key, 16);
    }
}

static void test_member_order(void)
{
    for (int round = 0; round < 3; round++) {
        EXPECT(run(BASE), FR_GATE_OK);
        CHECK_EQ_INT(row.length_old, 10);
        EXPECT(run_sub("{\"old\":10,\"new\":25}", "{\"new\":25,\"old\":10}"), FR_GATE_OK);
        CHECK_EQ_INT(row.length_old, 10);
        CHECK_EQ_INT(row.length_new, 25);
        EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wikiX\":1,\"wik\":2,\"wiki\":\"dewiki\""),
               FR_GATE_OK);
        CHECK(str_is(row.wiki, "dewiki"));
        EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"w\\u0069ki\":\"frwiki\""), FR_GATE_OK);
        CHECK(str_is(row.wiki, "frwiki"));
        EXPECT(run_sub("{\"old\":10,\"new\":25}", "{\"old\":10,\"old\":25}"),
               FR_GATE_DUPLICATE_FIELD);
    }
}

/* Integers of every length from 1 to 22 digits, both signs, against libc's
 * strtoll: the value when it fits in 64 bits, else bad_field_type. Digits
 * are read eight at a time and then one at a time, so every length
 * crosses that seam somewhere. */
static void test_integer_lengths(void)
{
    for (int len = 1; len <= 22; len++) {
        for (int pat = 0; pat < 3; pat++) {
            char num[32];
            for (int i = 0; i < len; i++) {
                num[i] = pat == 0 ? '9' : (char)('0' + (i * 7 + 3 + pat) % 10);
            }
            if (num[0] == '0') {
                num[0] = '1';
            }
            num[len] = 0;
            for (int neg = 0; neg < 2; neg++) {
                char json[64];
                snprintf(json, sizeof json, "\"id\":%s%s", neg ? "-" : "", num);
                errno = 0;
                long long want = strtoll(json + 5, NULL, 10);
                int fits = errno != ERANGE;
                enum fr_gate_reason got = run_sub("\"id\":3390891945", json);
                if (fits) {
                    EXPECT(got, FR_GATE_OK);
                    if (got == FR_GATE_OK && row.rc_id != want) {
                        fprintf(stderr, "%s: got %lld\n", json, (long long)row.rc_id);
                        check_case_failed = 1;
                    }
                } else {
                    EXPECT(got, FR_GATE_BAD_FIELD_TYPE);
                }
            }
        }
    }
    /* Every length of digits below eight-digit words and just past one,
     * followed by each byte next to the digits in ASCII ('/' and ':', not
     * JSON after a number even with a comma after them: a parser that took
     * one for a digit would accept it) and by what may follow one. */
    static const char *const after[] = {"/,", ":,", ",", " ,", ".5,", "e1,", "E+1,", "}"};
    for (int len = 1; len <= 9; len++) {
        char num[16];
        for (int i = 0; i < len; i++) {
            num[i] = (char)('1' + (i * 5 + len) % 9);
        }
        num[len] = 0;
        for (size_t k = 0; k < sizeof after / sizeof after[0]; k++) {
            char json[64];
            snprintf(json, sizeof json, "\"id\":%s%s", num, after[k]);
            /* the trailing comma of the replaced member follows */
            enum fr_gate_reason got = run_sub("\"id\":3390891945,", json);
            enum fr_gate_reason want = k < 2 || k == 7 ? FR_GATE_NOT_JSON
                                       : k < 4         ? FR_GATE_OK
                                                       : FR_GATE_BAD_FIELD_TYPE;
            if (got != want) {
                fprintf(stderr, "%s: got %s, want %s\n", json, fr_gate_reason_name(got),
                        fr_gate_reason_name(want));
                check_case_failed = 1;
            } else if (got == FR_GATE_OK && row.rc_id != strtoll(num, NULL, 10)) {
                fprintf(stderr, "%s: got %lld\n", json, (long long)row.rc_id);
                check_case_failed = 1;
            }
        }
    }
    /* The eight-digit step stops at a non-digit in its word. */
    EXPECT(run_sub("\"id\":3390891945", "\"id\":1234567,\"x\":1"), FR_GATE_OK);
    CHECK_EQ_INT(row.rc_id, 1234567);
    EXPECT(run_sub("\"id\":3390891945", "\"id\":12345678.5"), FR_GATE_BAD_FIELD_TYPE);
    EXPECT(run_sub("\"id\":3390891945", "\"id\":123456789e1"), FR_GATE_BAD_FIELD_TYPE);
}

static void test_oversize(void)
{
    struct fr_gate *small = NULL;
    struct fr_gate_opts o = {.max_event_bytes = 200, .max_future_ms = 600000};
    CHECK_EQ_INT(fr_gate_create(&o, &small), FR_OK);
    EXPECT(fr_gate_decode(small, &pos, BASE, strlen(BASE), &row, detail), FR_GATE_OVERSIZE);
    CHECK(strstr(detail, "cap 200") != NULL);
    /* Oversize outranks everything, even not_json. */
    char junk[300];
    memset(junk, '[', sizeof junk);
    EXPECT(fr_gate_decode(small, &pos, junk, sizeof junk, &row, detail), FR_GATE_OVERSIZE);
    EXPECT(fr_gate_decode(small, &pos, junk, 200, &row, detail), FR_GATE_NOT_JSON);
    fr_gate_destroy(small);
    fr_gate_destroy(NULL);
    o.max_event_bytes = 10;
    CHECK_EQ_INT(fr_gate_create(&o, &small), FR_EINVAL);
    o.max_event_bytes = 1024;
    o.max_future_ms = -1;
    CHECK_EQ_INT(fr_gate_create(&o, &small), FR_EINVAL);
}

static void test_not_json(void)
{
    EXPECT(run(""), FR_GATE_NOT_JSON);
    CHECK_EQ_STR(detail, "syntax error at byte 0");
    EXPECT(run("   "), FR_GATE_NOT_JSON);
    EXPECT(run_len(BASE, strlen(BASE) - 1), FR_GATE_NOT_JSON);
    EXPECT(run(BASE "x"), FR_GATE_NOT_JSON);
    EXPECT(run(BASE BASE), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"bot\":false", "\"bot\":fals"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"bot\":false", "\"bot\":False"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":01"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":-"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":1."), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":1e"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":+1"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"title\":\"Main Page\"", "\"title\":\"a\tb\""), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"title\":\"Main Page\"", "\"title\":\"a\\qb\""), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"title\":\"Main Page\"", "\"title\":\"a\\u12\""), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\" \"enwiki\""), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "wiki:\"enwiki\""), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"parsedcomment\":\"c\"}", "\"parsedcomment\":\"c\",}"), FR_GATE_NOT_JSON);
    EXPECT(run_sub("\"revision\":{\"old\":1,\"new\":2}", "\"revision\":{\"old\":1 \"new\":2}"),
           FR_GATE_NOT_JSON);
    EXPECT(run("{\"a\":[1,2,]}"), FR_GATE_NOT_JSON);
    EXPECT(run("\xef\xbb\xbf{}"), FR_GATE_NOT_JSON); /* a BOM is not JSON */
    /* Nesting: 64 levels below the top value are fine, 65 are not. */
    char deep[400];
    int n = snprintf(deep, sizeof deep, "{\"x\":");
    for (int i = 0; i < 64; i++) {
        deep[n++] = '[';
    }
    for (int i = 0; i < 64; i++) {
        deep[n++] = ']';
    }
    deep[n++] = '}';
    EXPECT(run_len(deep, (size_t)n), FR_GATE_MISSING_META);
    n = snprintf(deep, sizeof deep, "{\"x\":");
    for (int i = 0; i < 65; i++) {
        deep[n++] = '[';
    }
    deep[n++] = '1';
    for (int i = 0; i < 65; i++) {
        deep[n++] = ']';
    }
    deep[n++] = '}';
    EXPECT(run_len(deep, (size_t)n), FR_GATE_NOT_JSON);
    /* Embedded NUL outside a string. */
    EXPECT(run_len("{}\0", 3), FR_GATE_NOT_JSON);
}

static void test_bad_utf8(void)
{
    EXPECT(run_sub("Main Page", "Main \xff Page"), FR_GATE_BAD_UTF8);
    CHECK(strstr(detail, "invalid UTF-8 at byte") != NULL);
    EXPECT(run_sub("Main Page", "Main \xc0\xaf"), FR_GATE_BAD_UTF8);         /* overlong */
    EXPECT(run_sub("Main Page", "Main \xe0\x80\xaf"), FR_GATE_BAD_UTF8);     /* overlong */
    EXPECT(run_sub("Main Page", "Main \xed\xa0\x80"), FR_GATE_BAD_UTF8);     /* surrogate */
    EXPECT(run_sub("Main Page", "Main \xf4\x90\x80\x80"), FR_GATE_BAD_UTF8); /* > U+10FFFF */
    EXPECT(run_sub("Main Page", "Main \xe2\x82"), FR_GATE_BAD_UTF8);         /* truncated */
    EXPECT(run_sub("Main Page", "Main \x80"), FR_GATE_BAD_UTF8);             /* continuation */
    /* In strings nobody keeps, and in member names. */
    EXPECT(run_sub("\"parsedcomment\":\"c\"", "\"parsedcomment\":\"\xfe\""), FR_GATE_BAD_UTF8);
    EXPECT(run_sub("\"parsedcomment\":\"c\"", "\"x\xff\":1"), FR_GATE_BAD_UTF8);
    /* Lone surrogate escapes. */
    EXPECT(run_sub("\"comment\":\"c\"", "\"comment\":\"\\ud800\""), FR_GATE_BAD_UTF8);
    CHECK(strstr(detail, "lone surrogate escape") != NULL);
    EXPECT(run_sub("\"comment\":\"c\"", "\"comment\":\"\\udc00x\""), FR_GATE_BAD_UTF8);
    EXPECT(run_sub("\"comment\":\"c\"", "\"comment\":\"\\ud800\\u0041\""), FR_GATE_BAD_UTF8);
    EXPECT(run_sub("\"comment\":\"c\"", "\"comment\":\"\\uDBFF\\uDFFF\""), FR_GATE_OK);
    EXPECT(run_sub("\"comment\":\"c\"", "\"comment\":\"\xf4\x8f\xbf\xbf\""), FR_GATE_OK);
}

static void test_not_object_and_canary(void)
{
    EXPECT(run("[1,2]"), FR_GATE_NOT_OBJECT);
    CHECK_EQ_STR(detail, "top-level value is array, not an object");
    EXPECT(run("\"x\""), FR_GATE_NOT_OBJECT);
    EXPECT(run(" 42 "), FR_GATE_NOT_OBJECT);
    EXPECT(run("null"), FR_GATE_NOT_OBJECT);
    EXPECT(run("{}"), FR_GATE_MISSING_META);
    const char *canary =
        "{\"$schema\":\"/mediawiki/recentchange/1.0.1\",\"meta\":{\"dt\":\"2024-10-01T19:02:"
        "00.000Z\",\"stream\":\"mediawiki.recentchange\",\"domain\":\"canary\",\"id\":"
        "\"2a0843b0-3509-46ea-a951-7bfb8889acfc\"}}";
    EXPECT(run(canary), FR_GATE_CANARY);
    CHECK_EQ_STR(detail, "meta.domain is \"canary\"");
    EXPECT(run_sub("\"domain\":\"en.wikipedia.org\"", "\"domain\":\"can\\u0061ry\""),
           FR_GATE_CANARY);
    EXPECT(run_sub("\"domain\":\"en.wikipedia.org\"", "\"domain\":\"canaryx\""), FR_GATE_OK);
    /* Top-level "domain" is not meta.domain. */
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"domain\":\"canary\""), FR_GATE_OK);
}

static void test_required_fields(void)
{
    const char *id = "\"id\":\"95187f4d-688a-4823-b669-b4f821eeb97e\",";
    EXPECT(run_sub(",\"meta\":{", ",\"metax\":{"), FR_GATE_MISSING_META);
    CHECK_EQ_STR(detail, "meta is absent");
    EXPECT(run("{\"meta\":\"x\",\"wiki\":\"w\",\"type\":\"edit\"}"), FR_GATE_MISSING_META);
    CHECK_EQ_STR(detail, "meta: expected object, got string");
    EXPECT(run_sub(id, ""), FR_GATE_MISSING_META_ID);
    CHECK_EQ_STR(detail, "meta.id is absent");
    EXPECT(run_sub(id, "\"id\":5,"), FR_GATE_BAD_META_ID);
    CHECK_EQ_STR(detail, "meta.id: expected string, got number");
    EXPECT(run_sub(id, "\"id\":\"not-a-uuid\","), FR_GATE_BAD_META_ID);
    CHECK_EQ_STR(detail, "meta.id: not a UUID (8-4-4-4-12 hex)");
    EXPECT(run_sub(id, "\"id\":\"95187f4d-688a-4823-b669-b4f821eeb97g\","), FR_GATE_BAD_META_ID);
    EXPECT(run_sub(id, "\"id\":\"{95187f4d-688a-4823-b669-b4f821eeb97}\","), FR_GATE_BAD_META_ID);
    EXPECT(run_sub(id, "\"id\":null,"), FR_GATE_BAD_META_ID);
    EXPECT(run_sub("\"dt\":\"2024-10-01T19:17:48Z\",", ""), FR_GATE_MISSING_META_DT);
    EXPECT(run_sub("2024-10-01T19:17:48Z", "2024-13-01T19:17:48Z"), FR_GATE_BAD_META_DT);
    CHECK_EQ_STR(detail, "meta.dt: not an RFC 3339 timestamp");
    EXPECT(run_sub("2024-10-01T19:17:48Z", "2024-10-01T19:17:48"), FR_GATE_BAD_META_DT);
    EXPECT(run_sub("2024-10-01T19:17:48Z", "1727810268"), FR_GATE_BAD_META_DT);
    EXPECT(run_sub("\"dt\":\"2024-10-01T19:17:48Z\"", "\"dt\":1727810268"), FR_GATE_BAD_META_DT);
    CHECK_EQ_STR(detail, "meta.dt: expected string, got number");
    EXPECT(run_sub(",\"wiki\":\"enwiki\"", ""), FR_GATE_MISSING_WIKI);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":\"\""), FR_GATE_BAD_WIKI);
    CHECK_EQ_STR(detail, "wiki: empty or longer than 255 bytes");
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":5"), FR_GATE_BAD_WIKI);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":null"), FR_GATE_BAD_WIKI);
    char wiki[300];
    memset(wiki, 'w', sizeof wiki);
    char sub[320];
    snprintf(sub, sizeof sub, "\"wiki\":\"%.*s\"", 255, wiki);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", sub), FR_GATE_OK);
    CHECK_EQ_INT(row.wiki.len, 255);
    snprintf(sub, sizeof sub, "\"wiki\":\"%.*s\"", 256, wiki);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", sub), FR_GATE_BAD_WIKI);
    EXPECT(run_sub("\"type\":\"edit\",", ""), FR_GATE_MISSING_TYPE);
    EXPECT(run_sub("\"type\":\"edit\"", "\"type\":\"Edit\""), FR_GATE_BAD_TYPE);
    CHECK_EQ_STR(detail, "type: not one of edit, new, log, categorize, external");
    EXPECT(run_sub("\"type\":\"edit\"", "\"type\":0"), FR_GATE_BAD_TYPE);
    EXPECT(run_sub("\"type\":\"edit\"", "\"type\":\"edits\""), FR_GATE_BAD_TYPE);
    static const char *const types[] = {"edit", "new", "log", "categorize", "external"};
    for (int t = 0; t < 5; t++) {
        snprintf(sub, sizeof sub, "\"type\":\"%s\"", types[t]);
        EXPECT(run_sub("\"type\":\"edit\"", sub), FR_GATE_OK);
        CHECK_EQ_INT(row.type, FR_TYPE_EDIT + t);
        CHECK_EQ_STR(fr_proc_type_name(row.type), types[t]);
    }
}

static void test_duplicate_and_field_types(void)
{
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"wiki\":\"dewiki\""),
           FR_GATE_DUPLICATE_FIELD);
    CHECK_EQ_STR(detail, "field wiki appears twice");
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"w\\u0069ki\":\"x\""),
           FR_GATE_DUPLICATE_FIELD);
    EXPECT(run_sub("{\"old\":10,", "{\"old\":10,\"old\":11,"), FR_GATE_DUPLICATE_FIELD);
    CHECK_EQ_STR(detail, "field length.old appears twice");
    /* Unknown members may repeat. */
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"x\":1,\"x\":2,\"wiki\":\"enwiki\""), FR_GATE_OK);

    struct {
        const char *from, *to, *detail;
    } cases[] = {
        {"\"namespace\":0", "\"namespace\":\"0\"",
         "field namespace: expected integer (32-bit), got string"},
        {"\"namespace\":0", "\"namespace\":1.5",
         "field namespace: expected integer (32-bit), got a number with a fraction or exponent"},
        {"\"namespace\":0", "\"namespace\":2147483648",
         "field namespace: expected integer (32-bit), got an integer out of range"},
        {"\"namespace\":0", "\"namespace\":null",
         "field namespace: expected integer (32-bit), got null"},
        {"\"title\":\"Main Page\"", "\"title\":5", "field title: expected string, got number"},
        {"\"title\":\"Main Page\"", "\"title\":null", "field title: expected string, got null"},
        {"\"user\":\"Alice\"", "\"user\":[\"Alice\"]", "field user: expected string, got array"},
        {"\"comment\":\"c\"", "\"comment\":{}", "field comment: expected string, got object"},
        {"\"bot\":false", "\"bot\":\"false\"", "field bot: expected boolean, got string"},
        {"\"minor\":true", "\"minor\":1", "field minor: expected boolean, got number"},
        {"\"patrolled\":false", "\"patrolled\":null",
         "field patrolled: expected boolean, got null"},
        {"\"length\":{\"old\":10,\"new\":25}", "\"length\":15",
         "field length: expected object, got number"},
        {"{\"old\":10,", "{\"old\":\"10\",",
         "field length.old: expected integer (64-bit) or null, got string"},
        {"\"new\":2}", "\"new\":1e3}",
         "field revision.new: expected integer (64-bit) or null, got a number with a fraction "
         "or exponent"},
        {"\"id\":3390891945", "\"id\":\"3390891945\"",
         "field id: expected integer (64-bit) or null, got string"},
        {"\"id\":3390891945", "\"id\":9223372036854775808",
         "field id: expected integer (64-bit) or null, got an integer out of range"},
        {"\"timestamp\":1727810268", "\"timestamp\":1727810268.0",
         "field timestamp: expected integer (64-bit), got a number with a fraction or "
         "exponent"},
        {"\"offset\":6320664800", "\"offset\":\"6320664800\"",
         "field meta.offset: expected integer (64-bit), got string"},
        {"\"partition\":0", "\"partition\":true",
         "field meta.partition: expected integer (64-bit), got boolean"},
        {"\"server_name\":\"en.wikipedia.org\"", "\"server_name\":false",
         "field server_name: expected string, got boolean"},
        {"\"$schema\":\"/mediawiki/recentchange/1.0.0\"", "\"$schema\":1",
         "field $schema: expected string, got number"},
        {"\"request_id\":\"r\"", "\"request_id\":{}",
         "field meta.request_id: expected string, got object"},
        {"\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"log_type\":5",
         "field log_type: expected string or null, got number"},
        {"\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"log_id\":\"1\"",
         "field log_id: expected integer (64-bit) or null, got string"},
        {"\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"log_action\":[]",
         "field log_action: expected string or null, got array"},
        {"\"wiki\":\"enwiki\"", "\"wiki\":\"enwiki\",\"notify_url\":null",
         "field notify_url: expected string, got null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT(run_sub(cases[i].from, cases[i].to), FR_GATE_BAD_FIELD_TYPE);
        CHECK_EQ_STR(detail, cases[i].detail);
    }
    /* The first bad field in document order is the one named. */
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":\"0\",\"channel\":1"), FR_GATE_BAD_FIELD_TYPE);
    CHECK(strstr(detail, "namespace") != NULL);
    /* Anything goes in log_params and meta.key; nulls where allowed. */
    EXPECT(run_sub("\"wiki\":\"enwiki\"",
                   "\"wiki\":\"enwiki\",\"log_params\":\"s\",\"log_type\":null,\"log_id\":null"),
           FR_GATE_OK);
    EXPECT(run_sub("\"request_id\":\"r\"", "\"request_id\":\"r\",\"key\":[null,{}]"), FR_GATE_OK);
}

static void test_future(void)
{
    /* Exactly max_future ahead is fine, one microsecond more is not. */
    struct fr_proc_pos p = {0, 0, 1727810268000 - 600000};
    EXPECT(fr_gate_decode(gate, &p, BASE, strlen(BASE), &row, detail), FR_GATE_OK);
    EXPECT(run_sub("19:17:48Z", "19:17:48.000001Z"), FR_GATE_OK); /* pos is 1 s later */
    p.ingest_ms -= 1;
    EXPECT(fr_gate_decode(gate, &p, BASE, strlen(BASE), &row, detail), FR_GATE_FUTURE_EVENT);
    CHECK_EQ_STR(detail, "event time 2024-10-01T19:17:48.000Z is 600001 ms ahead of ingest time "
                         "(max 600000)");
    /* No limit on how old an event may be. */
    p.ingest_ms = INT64_C(4102444800000); /* 2100 */
    EXPECT(fr_gate_decode(gate, &p, BASE, strlen(BASE), &row, detail), FR_GATE_OK);
    /* Configurable: 0 ms. */
    struct fr_gate *strict = NULL;
    struct fr_gate_opts o = {.max_event_bytes = 4096, .max_future_ms = 0};
    CHECK_EQ_INT(fr_gate_create(&o, &strict), FR_OK);
    p.ingest_ms = 1727810268000;
    EXPECT(fr_gate_decode(strict, &p, BASE, strlen(BASE), &row, detail), FR_GATE_OK);
    p.ingest_ms -= 1;
    EXPECT(fr_gate_decode(strict, &p, BASE, strlen(BASE), &row, detail), FR_GATE_FUTURE_EVENT);
    fr_gate_destroy(strict);
}

static void test_precedence(void)
{
    /* not_json outranks a bad UTF-8 byte found earlier. */
    EXPECT(run("{\"title\":\"\xff\",\"x\":}"), FR_GATE_NOT_JSON);
    /* bad_utf8 outranks not_object and canary. */
    EXPECT(run("[\"\xff\"]"), FR_GATE_BAD_UTF8);
    EXPECT(run("{\"meta\":{\"domain\":\"canary\"},\"t\":\"\xff\"}"), FR_GATE_BAD_UTF8);
    /* canary outranks missing fields. */
    EXPECT(run("{\"meta\":{\"domain\":\"canary\"}}"), FR_GATE_CANARY);
    /* The required fields in table order, whatever the document order. */
    EXPECT(run("{\"type\":\"x\",\"wiki\":\"\",\"meta\":{\"dt\":\"x\"}}"), FR_GATE_MISSING_META_ID);
    EXPECT(run("{\"type\":\"x\",\"wiki\":\"\",\"meta\":{\"id\":\"x\",\"dt\":\"x\"}}"),
           FR_GATE_BAD_META_ID);
    EXPECT(run_sub("\"wiki\":\"enwiki\"", "\"wiki\":\"\",\"namespace\":\"x\""), FR_GATE_BAD_WIKI);
    /* duplicate_field outranks bad_field_type, which outranks future_event. */
    EXPECT(run_sub("\"namespace\":0", "\"namespace\":\"0\",\"bot\":true"), FR_GATE_DUPLICATE_FIELD);
    struct fr_proc_pos p = {0, 0, 0};
    const char *bad = "{\"meta\":{\"id\":\"95187f4d-688a-4823-b669-b4f821eeb97e\",\"dt\":"
                      "\"2024-10-01T19:17:48Z\"},\"wiki\":\"w\",\"type\":\"edit\",\"bot\":0}";
    EXPECT(fr_gate_decode(gate, &p, bad, strlen(bad), &row, detail), FR_GATE_BAD_FIELD_TYPE);
}

static void test_reason_table(void)
{
    CHECK_EQ_STR(fr_gate_reason_name(FR_GATE_OK), "ok");
    CHECK_EQ_STR(fr_gate_reason_name(FR_GATE_REASON_COUNT), "?");
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        const char *name = fr_gate_reason_name((enum fr_gate_reason)r);
        CHECK_EQ_INT(fr_gate_reason_from_name(name, strlen(name)), r);
        CHECK(strlen(fr_gate_reason_desc((enum fr_gate_reason)r)) > 10);
    }
    CHECK_EQ_INT(fr_gate_reason_from_name("nope", 4), -1);
    CHECK_EQ_STR(fr_gate_reason_name(FR_GATE_BAD_FIELD_TYPE), "bad_field_type");
}

/* docs/QUALITY.md is generated by fr_gate_quality_md; fail when it drifts. */
static void test_quality_doc(void)
{
    struct fr_buf md;
    fr_buf_init(&md, 1 << 20);
    CHECK_EQ_INT(fr_gate_quality_md(&md), FR_OK);
    CHECK(strstr(fr_buf_cstr(&md), "| 17 | `future_event` |") != NULL);
    const char *src = getenv("FR_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/QUALITY.md", src ? src : ".");
    static char doc[1 << 20];
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        n = fread(doc, 1, sizeof doc, f);
        fclose(f);
    }
    if (!f || n != md.len || memcmp(doc, md.data, n) != 0) {
        /* FR_QUALITY_OUT=docs/QUALITY.md regenerates it. */
        fprintf(stderr,
                "  %s is missing or drifted from the reason table: rerun with "
                "FR_QUALITY_OUT=%s\n",
                path, path);
        const char *out = getenv("FR_QUALITY_OUT");
        if (out && (f = fopen(out, "wb"))) {
            fwrite(md.data, 1, md.len, f);
            fclose(f);
        }
        check_case_failed = 1;
    }
    fr_buf_free(&md);
}

/* ------------------------------------------------------------------------ */
/* Recorded events                                                            */
/* ------------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    *len = fread(data, 1, (size_t)n, f);
    data[*len] = 0;
    fclose(f);
    return data;
}

/* Cross-check a string field with src/core/json.c. */
static void oracle_str(const struct fr_json_val *obj, const char *key, uint32_t bit,
                       struct fr_proc_str got)
{
    struct fr_json_val v;
    static char tmp[1 << 16];
    int found = fr_json_member(obj, key, &v);
    if (found == 1 && v.type == FR_JSON_STRING) {
        int n = fr_json_unescape(&v, tmp, sizeof tmp);
        CHECK((row.has & bit) || !bit);
        CHECK(n >= 0 && (uint32_t)n == got.len && memcmp(tmp, got.s, got.len) == 0);
    } else if (bit) {
        CHECK(!(row.has & bit));
    }
}

static void oracle_int(const struct fr_json_val *obj, const char *key, uint32_t bit, int64_t got)
{
    struct fr_json_val v;
    int64_t want;
    if (fr_json_member(obj, key, &v) == 1 && fr_json_int64(&v, &want) == FR_OK) {
        CHECK(row.has & bit);
        CHECK_EQ_INT(got, want);
    } else {
        CHECK(!(row.has & bit));
    }
}

/* Decode one recorded event; 1 when accepted. */
static int recorded_one(const char *json, size_t len, int *canaries)
{
    struct fr_proc_pos p = {0, 0, INT64_C(4102444800000)};
    walks_agree(&p, json, len);
    enum fr_gate_reason r = fr_gate_decode(gate, &p, json, len, &row, detail);
    if (r == FR_GATE_CANARY) {
        (*canaries)++;
        return 0;
    }
    if (r != FR_GATE_OK) {
        fprintf(stderr, "  recorded event rejected: %s (%s): %.120s\n", fr_gate_reason_name(r),
                detail, json);
        check_case_failed = 1;
        return 0;
    }
    struct fr_json_val top, meta, lenobj, rev, v;
    CHECK(fr_json_value(json, json + len, &top) != NULL);
    CHECK(fr_json_member(&top, "meta", &meta) == 1);
    oracle_str(&meta, "id", 0, row.meta_id);
    oracle_str(&top, "wiki", 0, row.wiki);
    oracle_str(&top, "title", FR_ROW_TITLE, row.title);
    oracle_str(&top, "user", FR_ROW_USER, row.user);
    oracle_str(&top, "comment", FR_ROW_COMMENT, row.comment);
    oracle_str(&top, "server_name", FR_ROW_SERVER_NAME, row.server_name);
    oracle_str(&top, "log_type", FR_ROW_LOG_TYPE, row.log_type);
    oracle_str(&top, "log_action", FR_ROW_LOG_ACTION, row.log_action);
    oracle_int(&top, "id", FR_ROW_RC_ID, row.rc_id);
    oracle_int(&top, "namespace", FR_ROW_NAMESPACE, row.ns);
    oracle_int(&top, "log_id", FR_ROW_LOG_ID, row.log_id);
    if (fr_json_member(&top, "length", &lenobj) == 1) {
        oracle_int(&lenobj, "old", FR_ROW_LENGTH_OLD, row.length_old);
        oracle_int(&lenobj, "new", FR_ROW_LENGTH_NEW, row.length_new);
    }
    if (fr_json_member(&top, "revision", &rev) == 1) {
        oracle_int(&rev, "old", FR_ROW_REVISION_OLD, row.revision_old);
        oracle_int(&rev, "new", FR_ROW_REVISION_NEW, row.revision_new);
    }
    if (fr_json_member(&top, "bot", &v) == 1) {
        CHECK_EQ_INT(row.bot, v.type == FR_JSON_TRUE);
    }
    CHECK(fr_json_member(&meta, "dt", &v) == 1);
    int64_t us;
    CHECK(fr_time_parse_rfc3339(v.start, (size_t)(v.end - v.start), &us) == FR_OK);
    CHECK_EQ_INT(row.event_us, us);
    return 1;
}

static void test_recorded_events(void)
{
    static const char *const files[] = {
        "data/wikimedia/gokulportfolio-sample_events.jsonl",
        "data/wikimedia/editgroups-one_qs_batch.json",
        "data/wikimedia/editgroups-qs_batch_with_new_items.json",
        "data/wikimedia/ircstream-00-empty.json",
        "data/wikimedia/ircstream-01-log.json",
        "data/wikimedia/ircstream-02-edit.json",
        "data/wikimedia/ircstream-03-nouser.json",
        "data/wikimedia/ircstream-04-type-categorize.json",
        "data/wikimedia/ircstream-05-type-new.json",
        "data/wikimedia/ircstream-06-patrolled-true.json",
        "data/wikimedia/ircstream-07-patrolled-false.json",
        "data/wikimedia/ircstream-08-bot.json",
        "data/wikimedia/ircstream-09-szdiff-negative-small.json",
        "data/wikimedia/ircstream-10-szdiff-negative-large.json",
        "data/wikimedia/wikivis-example.events",
    };
    if (!check_shared(files[0])) {
        fprintf(stderr, "  skip: shared/data/wikimedia not found (set FR_SHARED_DIR)\n");
        return;
    }
    int accepted = 0, canaries = 0, gokul = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len;
        char *data = slurp(check_shared(files[i]), &len);
        CHECK(data != NULL);
        if (!data) {
            continue;
        }
        if (strstr(files[i], "ircstream-")) {
            accepted += recorded_one(data, len, &canaries);
        } else {
            /* One event per line; in the SSE capture, per "data: " line. */
            int sse = strstr(files[i], ".events") != NULL;
            for (char *line = data; *line;) {
                char *nl = strchr(line, '\n');
                size_t n = nl ? (size_t)(nl - line) : strlen(line);
                if (sse && n > 6 && memcmp(line, "data: ", 6) == 0) {
                    accepted += recorded_one(line + 6, n - 6, &canaries);
                } else if (!sse && n > 0) {
                    int ok = recorded_one(line, n, &canaries);
                    accepted += ok;
                    gokul += ok && i == 0;
                }
                line = nl ? nl + 1 : line + n;
            }
        }
        free(data);
    }
    CHECK_EQ_INT(gokul, 1200);
    CHECK_EQ_INT(canaries, 1);
    CHECK_EQ_INT(accepted, 1200 + 3818 + 82 + 10 + 3);
    fprintf(stderr, "  %d recorded events accepted, %d canary\n", accepted, canaries);
}

static void test_nouser_fixture(void)
{
    const char *path = check_shared("data/wikimedia/ircstream-03-nouser.json");
    if (!path) {
        fprintf(stderr, "  skip: shared/data/wikimedia not found (set FR_SHARED_DIR)\n");
        return;
    }
    size_t len = 0;
    char *data = slurp(path, &len);
    struct fr_proc_pos p = {0, 0, INT64_C(4102444800000)};
    EXPECT(fr_gate_decode(gate, &p, data, len, &row, detail), FR_GATE_OK);
    CHECK(!(row.has & FR_ROW_USER));
    CHECK(!(row.has & FR_ROW_PATROLLED));
    CHECK(str_is(row.title, "\xd0\xa0\xd0\xbe\xd1\x81\xd1\x81\xd0\xb8\xd0\xb9\xd1\x81\xd0\xba"
                            "\xd0\xb0\xd1\x8f \xd0\xbe\xd0\xba\xd0\xba\xd1\x83\xd0\xbf\xd0\xb0"
                            "\xd1\x86\xd0\xb8\xd1\x8f \xd0\xa5\xd0\xb0\xd1\x80\xd1\x8c\xd0\xba"
                            "\xd0\xbe\xd0\xb2\xd1\x81\xd0\xba\xd0\xbe\xd0\xb9 \xd0\xbe\xd0\xb1"
                            "\xd0\xbb\xd0\xb0\xd1\x81\xd1\x82\xd0\xb8"));
    free(data);
}

/* ------------------------------------------------------------------------ */
/* The indexed walk against the byte-by-byte one                              */
/* ------------------------------------------------------------------------ */

/* {"a":"xxx<seq>xxx"}, seq starting at byte `at` of the record, 128 bytes
 * in all: the verdict is missing_meta when seq is valid UTF-8 (it has no
 * quote, backslash or control byte) and bad_utf8 otherwise, and the gate
 * indexes the record exactly when it is valid. */
static unsigned long seq_cases;

static int seq_case(const unsigned char *seq, size_t n, size_t at)
{
    seq_cases++;
    char rec[128];
    memset(rec, 'x', sizeof rec);
    memcpy(rec, "{\"a\":\"", 6);
    memcpy(rec + at, seq, n);
    memcpy(rec + sizeof rec - 2, "\"}", 2);
    int valid = fr_utf8_valid(seq, n);
    uint64_t before = fr_gate_paths(gate).indexed;
    enum fr_gate_reason r = fr_gate_decode(gate, &pos, rec, sizeof rec, &row, detail);
    int indexed = fr_gate_paths(gate).indexed != before;
    if (r != (valid ? FR_GATE_MISSING_META : FR_GATE_BAD_UTF8) ||
        (have_index && indexed != valid)) {
        fprintf(stderr, "  UTF-8 case at %zu:", at);
        for (size_t i = 0; i < n; i++) {
            fprintf(stderr, " %02X", seq[i]);
        }
        fprintf(stderr, ": oracle %s, gate %s, indexed %d\n", valid ? "valid" : "invalid",
                fr_gate_reason_name(r), indexed);
        check_case_failed = 1;
        return 1;
    }
    return 0;
}

/* Every byte a sequence may hold in seq_case: not '"', '\\' or control. */
static int seq_byte(unsigned b)
{
    return b >= 0x20 && b != '"' && b != '\\';
}

/* The vector UTF-8 check against src/core/utf8.c (code the gate does not
 * use): every pair of bytes at four
 * places (inside a 32-byte half, across the halves of a 64-byte block,
 * across two blocks), every triple that starts with a lead byte, and the
 * 4-byte leads with every second and last byte, across two blocks. */
static void test_index_utf8(void)
{
    if (!have_index) {
        fprintf(stderr, "  skip: this CPU has no AVX2, the gate never indexes\n");
        return;
    }
    int bad = 0;
    static const size_t pair_at[] = {10, 31, 62, 63};
    for (size_t a = 0; a < sizeof pair_at / sizeof pair_at[0] && bad < 5; a++) {
        for (unsigned b0 = 0x20; b0 < 0x100; b0++) {
            for (unsigned b1 = 0x20; b1 < 0x100 && seq_byte(b0); b1++) {
                unsigned char seq[2] = {(unsigned char)b0, (unsigned char)b1};
                if (seq_byte(b1)) {
                    bad += seq_case(seq, 2, pair_at[a]);
                }
            }
        }
    }
    static const unsigned char second[] = {0x41, 0xC2, 0xE1, 0xF1};
    for (unsigned b0 = 0xC0; b0 < 0x100 && bad < 5; b0++) {
        for (unsigned i1 = 0; i1 < 0x40 + sizeof second; i1++) {
            unsigned b1 = i1 < 0x40 ? 0x80 + i1 : second[i1 - 0x40];
            for (unsigned b2 = 0x20; b2 < 0x100; b2++) {
                unsigned char seq[3] = {(unsigned char)b0, (unsigned char)b1, (unsigned char)b2};
                if (seq_byte(b2)) {
                    bad += seq_case(seq, 3, 62);
                }
            }
        }
    }
    static const unsigned char third[] = {0x80, 0xBF, 0x41, 0xC2};
    for (unsigned b0 = 0xF0; b0 < 0xF8 && bad < 5; b0++) {
        for (unsigned i1 = 0; i1 < 0x42; i1++) {
            unsigned b1 = i1 < 0x40 ? 0x80 + i1 : second[i1 - 0x40];
            for (size_t i2 = 0; i2 < sizeof third; i2++) {
                for (unsigned b3 = 0x20; b3 < 0x100; b3++) {
                    unsigned char seq[4] = {(unsigned char)b0, (unsigned char)b1, third[i2],
                                            (unsigned char)b3};
                    if (seq_byte(b3)) {
                        bad += seq_case(seq, 4, 61);
                    }
                }
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    fprintf(stderr, "  %lu sequences\n", seq_cases);
}

/* Records the index turns away (control bytes, whitespace outside strings,
 * a sequence cut by the end of the record, a record over the index's cap)
 * and records it takes, each decoded both ways. */
static void test_index_edges(void)
{
    if (!have_index) {
        fprintf(stderr, "  skip: this CPU has no AVX2, the gate never indexes\n");
        return;
    }
    struct {
        const char *json;
        int indexed;
    } cases[] = {
        {"{\"a\":\t\"b\"}", 0},
        {"{\"a\": \"b\" , \"c\" : 1 }", 1},
        {"{\"a\":\"b\x01\"}", 0},
        {"\n{\"a\":1}", 0},
        {"{\"a\":\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", 1},
        {"{\"a\":\"\\ud83d\"}", 1},
        {"{\"a\":\"\\x\"}", 1},
        {"{\"a\":\"abc", 1},
        {"{\"a\":\"abc\\", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int indexed = -1;
        const char *diff =
            gate_same(gate, scan_gate, &pos, cases[i].json, strlen(cases[i].json), &indexed);
        if (diff || indexed != cases[i].indexed) {
            fprintf(stderr, "  case %zu: %s, indexed %d\n", i, diff ? diff : "same", indexed);
            check_case_failed = 1;
        }
    }
    /* 64 and 128 bytes ending inside a sequence, or right after one */
    static const char *const tails[] = {"\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xC3\xA9"};
    for (size_t n = 64; n <= 128; n += 64) {
        for (size_t t = 0; t < 4; t++) {
            char rec[128];
            size_t tl = strlen(tails[t]);
            memset(rec, 'x', n);
            memcpy(rec, "{\"a\":\"", 6);
            memcpy(rec + n - tl, tails[t], tl);
            int indexed = -1;
            const char *diff = gate_same(gate, scan_gate, &pos, rec, n, &indexed);
            CHECK(diff == NULL);
            CHECK_EQ_INT(indexed, t == 3);
        }
    }
    /* the index's cap: a comment that makes the record exactly
     * FR_GATE_INDEX_MAX bytes is indexed, one byte more is not; both pass */
    const char *at = strstr(BASE, "\"comment\":\"c\"");
    CHECK(at != NULL);
    size_t head = (size_t)(at - BASE) + 11, tail = strlen(at + 12);
    char *big = malloc(FR_GATE_INDEX_MAX + 1);
    for (size_t extra = 0; extra <= 1; extra++) {
        size_t total = FR_GATE_INDEX_MAX + extra, fill = total - head - tail;
        memcpy(big, BASE, head);
        for (size_t i = 0; i < fill;) { /* ASCII with some 2-byte characters */
            if (i % 7 == 3 && fill - i >= 2) {
                memcpy(big + head + i, "\xc3\xa9", 2);
                i += 2;
            } else {
                big[head + i++] = 'w';
            }
        }
        memcpy(big + head + fill, at + 12, tail);
        int indexed = -1;
        const char *diff = gate_same(gate, scan_gate, &pos, big, total, &indexed);
        CHECK(diff == NULL);
        CHECK_EQ_INT(indexed, extra == 0);
        EXPECT(fr_gate_decode(gate, &pos, big, total, &row, detail), FR_GATE_OK);
        CHECK_EQ_INT((int)row.comment.len, (int)fill);
    }
    free(big);
}

/* Random edits of real events and of BASE: every result agrees. The edits
 * favour the bytes the two walks treat differently (quotes, backslashes,
 * escapes, control and non-ASCII bytes, structure). Fixed seed. */
static void test_walks_agree_mutated(void)
{
    static const unsigned char alphabet[] = {
        '"',  '\\', '{',  '}',  '[',  ']',  ':',  ',',  ' ',  '\t', '\n', 'u',  'D',
        '8',  '0',  '9',  '-',  'e',  '.',  'n',  't',  'f',  'x',  0x00, 0x1F, 0x7F,
        0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC3, 0xE0, 0xE2, 0xED, 0xF0, 0xF4, 0xF5, 0xFF};
    enum { SEEDS = 64 };
    char *seeds[SEEDS];
    size_t seed_len[SEEDS], nseeds = 0;
    seeds[nseeds] = strdup(BASE);
    seed_len[nseeds++] = strlen(BASE);
    const char *path = check_shared("data/wikimedia/gokulportfolio-sample_events.jsonl");
    char *data = NULL;
    if (path) {
        size_t len;
        data = slurp(path, &len);
        for (char *line = data; data && *line && nseeds < SEEDS;) {
            char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line) : strlen(line);
            if (n > 0) {
                seeds[nseeds] = line;
                seed_len[nseeds++] = n;
            }
            line = nl ? nl + 1 : line + n;
        }
    } else {
        fprintf(stderr, "  shared/data/wikimedia not found: mutating BASE only\n");
    }
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
    char buf[8192];
    uint64_t before = agreed, before_indexed = agreed_indexed;
    for (int iter = 0; iter < 40000; iter++) {
        size_t si = (size_t)(x % nseeds), len = seed_len[si];
        if (len > sizeof buf - 8) {
            len = sizeof buf - 8;
        }
        memcpy(buf, seeds[si], len);
        int edits = 1 + (int)(x >> 8 & 3);
        for (int e = 0; e < edits; e++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = len ? (size_t)(x >> 16) % len : 0;
            unsigned char c = alphabet[(x >> 40) % sizeof alphabet];
            switch (x >> 60 & 3) {
            case 0: /* insert */
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = (char)c;
                len++;
                break;
            case 1: /* delete */
                if (len) {
                    memmove(buf + at, buf + at + 1, len - at - 1);
                    len--;
                }
                break;
            default: /* replace */
                if (len) {
                    buf[at] = (char)c;
                }
                break;
            }
        }
        walks_agree(&pos, buf, len);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    }
    fprintf(stderr, "  %llu mutated records, %llu of them indexed\n",
            (unsigned long long)(agreed - before),
            (unsigned long long)(agreed_indexed - before_indexed));
    if (have_index) {
        CHECK(agreed_indexed - before_indexed > 1000);
    }
    free(seeds[0]);
    free(data);
}

int main(void)
{
    struct fr_gate_opts opts = {.max_event_bytes = FR_GATE_DEFAULT_MAX_EVENT_BYTES,
                                .max_future_ms = FR_GATE_DEFAULT_MAX_FUTURE_MS};
    if (fr_gate_create(&opts, &gate) != FR_OK || fr_gate_create(&opts, &scan_gate) != FR_OK) {
        return 1;
    }
    have_index = fr_gate_set_indexed(gate, 1);
    fr_gate_set_indexed(scan_gate, 0);
    RUN(test_base_row);
    RUN(test_log_event_and_nulls);
    RUN(test_uuid_bytes);
    RUN(test_escapes);
    RUN(test_integer_lengths);
    RUN(test_member_order);
    RUN(test_decode_to_in_place);
    RUN(test_oversize);
    RUN(test_not_json);
    RUN(test_bad_utf8);
    RUN(test_not_object_and_canary);
    RUN(test_required_fields);
    RUN(test_duplicate_and_field_types);
    RUN(test_future);
    RUN(test_precedence);
    RUN(test_reason_table);
    RUN(test_quality_doc);
    RUN(test_recorded_events);
    RUN(test_nouser_fixture);
    RUN(test_index_utf8);
    RUN(test_index_edges);
    RUN(test_walks_agree_mutated);
    fprintf(stderr, "%llu records decoded both ways, %llu indexed%s\n", (unsigned long long)agreed,
            (unsigned long long)agreed_indexed,
            have_index ? "" : " (this CPU has no AVX2: the byte walk only)");
    CHECK(!have_index || agreed_indexed > 0);
    CHECK_EQ_INT((int)fr_gate_paths(scan_gate).indexed, 0);
    fr_gate_destroy(scan_gate);
    fr_gate_destroy(gate);
    return check_report();
}
