/*
 * test_sse_parser.c — unit tests for src/sse/parser.c: every rule of the
 * WHATWG "interpretation of the event stream" as its own case, the spec's
 * own examples, chunk splits (byte by byte, every split point, random splits
 * over many seeds: all give the same transcript), the size cap with resync
 * and its memory bound, zero-copy delivery, and the recorded Wikimedia
 * frames from $FR_SHARED_DIR (skipped with a message when absent), and a
 * model-based test against the naive oracle in test_sse_oracle.c over
 * random token streams.
 * Single-threaded.
 */
#include "check.h"

#include "core/buf.h"
#include "core/err.h"
#include "sse/sse.h"
#include "sse/sse_int.h"

#include "test_sse_oracle.c" /* the naive model: tr_event, tr_retry, oracle_parse */

#define REC_KEEP 8

/* Records every event: the first REC_KEEP as strings, all of them in a
 * length-prefixed transcript for whole-stream comparisons. */
struct rec {
    int n;
    char id[REC_KEEP][512];
    char type[REC_KEEP][64];
    char data[REC_KEEP][2048];
    size_t data_len[REC_KEEP];
    const char *data_ptr[REC_KEEP];
    int64_t retry[REC_KEEP];
    int nretry;
    int fail_code; /* returned by the callback when nonzero */
    struct fr_buf transcript;
};

static void rec_init(struct rec *rec)
{
    memset(rec, 0, sizeof *rec);
    fr_buf_init(&rec->transcript, 64u << 20);
}

static void rec_free(struct rec *rec)
{
    fr_buf_free(&rec->transcript);
}

static void copy_str(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static int rec_on_event(void *arg, const struct fr_sse_event *event)
{
    struct rec *rec = arg;
    CHECK_EQ_INT(strlen(event->id), event->id_len);
    CHECK(strlen(event->type) <= event->type_len); /* a type may hold a NUL */
    if (rec->n < REC_KEEP) {
        copy_str(rec->id[rec->n], sizeof rec->id[0], event->id, event->id_len);
        copy_str(rec->type[rec->n], sizeof rec->type[0], event->type, event->type_len);
        copy_str(rec->data[rec->n], sizeof rec->data[0], event->data, event->data_len);
        rec->data_len[rec->n] = event->data_len;
        rec->data_ptr[rec->n] = event->data;
    }
    rec->n++;
    tr_event(&rec->transcript, event);
    return rec->fail_code;
}

static void rec_on_retry(void *arg, int64_t ms)
{
    struct rec *rec = arg;
    if (rec->nretry < REC_KEEP) {
        rec->retry[rec->nretry] = ms;
    }
    rec->nretry++;
    tr_retry(&rec->transcript, ms);
}

static struct fr_sse_parser *new_parser(struct rec *rec, size_t max)
{
    struct fr_sse_parser_opts opts = {
        .on_event = rec_on_event, .on_retry = rec_on_retry, .arg = rec, .max_event_bytes = max};
    struct fr_sse_parser *parser = NULL;
    CHECK_EQ_INT(fr_sse_parser_create(&opts, &parser), FR_OK);
    if (!parser) {
        exit(1);
    }
    return parser;
}

/* Parse a whole stream in one chunk, then end it. */
static struct fr_sse_parser_stats parse(struct rec *rec, const char *stream, size_t len, size_t max)
{
    struct fr_sse_parser *parser = new_parser(rec, max);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, stream, len), FR_OK);
    fr_sse_parser_reset(parser);
    struct fr_sse_parser_stats stats;
    fr_sse_parser_stats(parser, &stats);
    fr_sse_parser_destroy(parser);
    return stats;
}

#define PARSE(rec, lit) parse((rec), (lit), sizeof(lit) - 1, 0)

/* Feed a stream cut at the given offsets (sorted, within len); each chunk is
 * copied into its own heap block and freed right after the call so ASan
 * catches any pointer kept into it. */
static void feed_split(struct fr_sse_parser *parser, const char *stream, size_t len,
                       const size_t *cuts, size_t ncuts)
{
    size_t start = 0;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        char *chunk = malloc(end - start + 1);
        memcpy(chunk, stream + start, end - start);
        CHECK_EQ_INT(fr_sse_parser_feed(parser, chunk, end - start), FR_OK);
        memset(chunk, 'Z', end - start);
        free(chunk);
        start = end;
    }
    fr_sse_parser_reset(parser);
}

/* ----------------------------------------------------------- the rules */

static void test_basic_event(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats = PARSE(&rec, "data: hello\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "hello");
    CHECK_EQ_STR(rec.type[0], "message"); /* type defaults to "message" */
    CHECK_EQ_STR(rec.id[0], "");          /* no id yet */
    CHECK_EQ_INT(stats.events, 1);
    CHECK_EQ_INT(stats.lines, 2);
    CHECK_EQ_INT(stats.bytes, 13);
    CHECK_EQ_INT(stats.truncated, 0);
    rec_free(&rec);
}

static void test_all_fields(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "event: add\nid: 42\nretry: 2500\ndata: {\"a\":1}\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.type[0], "add");
    CHECK_EQ_STR(rec.id[0], "42");
    CHECK_EQ_STR(rec.data[0], "{\"a\":1}");
    CHECK_EQ_INT(rec.nretry, 1);
    CHECK_EQ_INT(rec.retry[0], 2500);
    rec_free(&rec);
}

static void test_multiline_data_joined_with_lf(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "data: YHOO\ndata: +2\ndata: 10\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "YHOO\n+2\n10");
    rec_free(&rec);

    /* An empty data line contributes an empty line: "a", "" -> "a\n". */
    rec_init(&rec);
    PARSE(&rec, "data: a\ndata\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(rec.data_len[0], 2);
    CHECK_EQ_STR(rec.data[0], "a\n");
    rec_free(&rec);
}

static void test_one_leading_space_stripped(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "data:test\n\ndata: test\n\ndata:  two\n\ndata:\tx\n\n");
    CHECK_EQ_INT(rec.n, 4);
    CHECK_EQ_STR(rec.data[0], "test"); /* no space: value as is */
    CHECK_EQ_STR(rec.data[1], "test"); /* one space stripped */
    CHECK_EQ_STR(rec.data[2], " two"); /* only one of two */
    CHECK_EQ_STR(rec.data[3], "\tx");  /* a tab is not a space */
    rec_free(&rec);
}

static void test_colon_in_value_kept(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "data: a:b: c\n\n");
    CHECK_EQ_STR(rec.data[0], "a:b: c");
    rec_free(&rec);
}

static void test_field_without_colon(void)
{
    struct rec rec;
    rec_init(&rec);
    /* "data" alone = field data with an empty value: dispatches "". */
    struct fr_sse_parser_stats stats = PARSE(&rec, "data\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(rec.data_len[0], 0);
    CHECK_EQ_INT(stats.events, 1);
    rec_free(&rec);

    /* "data\ndata" = two empty lines = "\n". */
    rec_init(&rec);
    PARSE(&rec, "data\ndata\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "\n");
    rec_free(&rec);

    /* "id" alone sets the id to "". */
    rec_init(&rec);
    PARSE(&rec, "id: 5\ndata: a\n\nid\ndata: b\n\n");
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.id[0], "5");
    CHECK_EQ_STR(rec.id[1], "");
    rec_free(&rec);
}

static void test_comments_ignored_and_counted(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats =
        PARSE(&rec, ":ok\n\n: keepalive\ndata: x\n:between\ndata: y\n\n:\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "x\ny");
    CHECK_EQ_INT(stats.comments, 4);
    CHECK_EQ_INT(stats.events, 1);
    rec_free(&rec);
}

static void test_unknown_fields_ignored(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "foo: bar\nData: no\ndata : no\nDATA: no\nidx: 1\ndata: yes\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "yes"); /* field names are case- and space-exact */
    CHECK_EQ_STR(rec.id[0], "");
    rec_free(&rec);

    rec_init(&rec);
    PARSE(&rec, "foo: bar\n\n"); /* an event of unknown fields only: nothing */
    CHECK_EQ_INT(rec.n, 0);
    rec_free(&rec);
}

static void test_event_type(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec,
          "event: add\ndata: 1\n\ndata: 2\n\nevent\ndata: 3\n\nevent: a\nevent: b\ndata: 4\n\n");
    CHECK_EQ_INT(rec.n, 4);
    CHECK_EQ_STR(rec.type[0], "add");
    CHECK_EQ_STR(rec.type[1], "message"); /* reset after each dispatch */
    CHECK_EQ_STR(rec.type[2], "message"); /* empty type = "message" */
    CHECK_EQ_STR(rec.type[3], "b");       /* the last event: field wins */
    rec_free(&rec);
}

static void test_empty_data_not_dispatched(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats = PARSE(&rec, "event: e\n\ndata: x\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.type[0], "message"); /* the type of the empty event was reset */
    CHECK_EQ_INT(stats.events, 1);
    rec_free(&rec);
}

static void test_id_only_event_updates_last_id(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    const char s1[] = "id: 7\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s1, sizeof s1 - 1), FR_OK);
    CHECK_EQ_INT(rec.n, 0);                           /* not dispatched */
    CHECK_EQ_STR(fr_sse_parser_last_id(parser), "7"); /* but the id moved */
    const char s2[] = "data: x\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s2, sizeof s2 - 1), FR_OK);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.id[0], "7"); /* and persists to later events */
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_id_persists_until_changed(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n");
    CHECK_EQ_INT(rec.n, 3);
    CHECK_EQ_STR(rec.id[0], "1");
    CHECK_EQ_STR(rec.id[1], "1");
    CHECK_EQ_STR(rec.id[2], "2");
    rec_free(&rec);

    /* The id is taken at the blank line, wherever it appears in the event. */
    rec_init(&rec);
    PARSE(&rec, "data: a\nid: late\n\n");
    CHECK_EQ_STR(rec.id[0], "late");
    rec_free(&rec);
}

static void test_id_with_nul_ignored(void)
{
    struct rec rec;
    rec_init(&rec);
    static const char s[] = "id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n";
    parse(&rec, s, sizeof s - 1, 0);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.id[0], "1");
    CHECK_EQ_STR(rec.id[1], "1"); /* the NUL id changed nothing */
    rec_free(&rec);
}

static void test_nul_in_data_kept(void)
{
    struct rec rec;
    rec_init(&rec);
    static const char s[] = "data: a\0b\n\n";
    parse(&rec, s, sizeof s - 1, 0);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(rec.data_len[0], 3);
    CHECK_MEM(rec.data[0], "a\0b", 3);
    rec_free(&rec);
}

static void test_retry_rules(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    CHECK_EQ_INT(fr_sse_parser_retry_ms(parser), -1);
    static const char s[] = "retry: 1500\n"
                            "retry: 15a\n"
                            "retry:\n"
                            "retry\n"
                            "retry: -1\n"
                            "retry:  100\n"
                            "retry: 1.5\n"
                            "retry: 0\n"
                            "retry: 99999999999999999999999\n"
                            "retry: 0300\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s, sizeof s - 1), FR_OK);
    CHECK_EQ_INT(rec.nretry, 4);
    CHECK_EQ_INT(rec.retry[0], 1500);
    CHECK_EQ_INT(rec.retry[1], 0);
    CHECK_EQ_INT(rec.retry[2], INT64_MAX); /* saturates, never wraps */
    CHECK_EQ_INT(rec.retry[3], 300);
    CHECK_EQ_INT(fr_sse_parser_retry_ms(parser), 300);
    CHECK_EQ_INT(rec.n, 0); /* retry alone dispatches nothing */
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_line_ends(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "data: lf\n\n");
    PARSE(&rec, "data: crlf\r\n\r\n");
    PARSE(&rec, "data: cr\r\r");
    PARSE(&rec, "data: a\rdata: b\r\ndata: c\n\r\n");
    CHECK_EQ_INT(rec.n, 4);
    CHECK_EQ_STR(rec.data[0], "lf");
    CHECK_EQ_STR(rec.data[1], "crlf");
    CHECK_EQ_STR(rec.data[2], "cr");
    CHECK_EQ_STR(rec.data[3], "a\nb\nc");
    rec_free(&rec);

    /* LF CR is two line ends: "data: x\n\r" ends the event. */
    rec_init(&rec);
    PARSE(&rec, "data: x\n\rdata: y\n\n");
    CHECK_EQ_INT(rec.n, 2);
    rec_free(&rec);
}

static void test_cr_only_stream(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats =
        PARSE(&rec, ":ok\r\revent: message\rid: 1\rdata: one\r\rid: 2\rdata: two\rdata: more\r\r");
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.id[0], "1");
    CHECK_EQ_STR(rec.data[0], "one");
    CHECK_EQ_STR(rec.id[1], "2");
    CHECK_EQ_STR(rec.data[1], "two\nmore");
    CHECK_EQ_INT(stats.comments, 1);
    CHECK_EQ_INT(stats.truncated, 0);
    rec_free(&rec);
}

static void test_crlf_split_across_chunks(void)
{
    /* CR ends chunk 1, LF starts chunk 2: one line end, not two. If the LF
     * counted as a blank line, "a" and "b" would come out as two events. */
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: a\r", 8), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\ndata: b\r", 9), FR_OK);
    CHECK_EQ_INT(rec.n, 0);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n\r", 2), FR_OK);
    CHECK_EQ_INT(rec.n, 1); /* a CR ends its line at once: the blank line is complete */
    CHECK_EQ_STR(rec.data[0], "a\nb");
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n", 1), FR_OK);
    CHECK_EQ_INT(rec.n, 1); /* this LF only completes the CRLF */
    /* A CR at a chunk end followed by a chunk that does not start with LF. */
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: c\r", 8), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\r", 1), FR_OK);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[1], "c");
    /* CR, then an empty chunk, then LF: still one line end. */
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: d\r", 8), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "", 0), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n", 1), FR_OK);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n", 1), FR_OK);
    CHECK_EQ_INT(rec.n, 3);
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_bom(void)
{
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, "\xEF\xBB\xBF"
                "data: x\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "x");
    rec_free(&rec);

    /* Only one BOM is stripped: the second is part of the field name. */
    rec_init(&rec);
    PARSE(&rec, "\xEF\xBB\xBF\xEF\xBB\xBF"
                "data: x\n\n");
    CHECK_EQ_INT(rec.n, 0);
    rec_free(&rec);

    /* A BOM later in the stream is content. */
    rec_init(&rec);
    PARSE(&rec, "data: \xEF\xBB\xBFx\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "\xEF\xBB\xBFx");
    rec_free(&rec);

    /* A partial BOM is content too ("\xEF\xBBdata" is an unknown field). */
    rec_init(&rec);
    PARSE(&rec, "\xEF\xBB"
                "data: x\n\ndata: y\n\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "y");
    rec_free(&rec);

    /* BOM delivered one byte per chunk, and again after a reset (new stream). */
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    for (int round = 0; round < 2; round++) {
        static const char s[] = "\xEF\xBB\xBF"
                                "data: z\n\n";
        for (size_t i = 0; i < sizeof s - 1; i++) {
            CHECK_EQ_INT(fr_sse_parser_feed(parser, s + i, 1), FR_OK);
        }
        fr_sse_parser_reset(parser);
    }
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[1], "z");
    struct fr_sse_parser_stats stats;
    fr_sse_parser_stats(parser, &stats);
    CHECK_EQ_INT(stats.truncated, 0);
    fr_sse_parser_destroy(parser);
    rec_free(&rec);

    /* A stream that is only the start of a BOM counts as truncated. */
    rec_init(&rec);
    struct fr_sse_parser_stats st = PARSE(&rec, "\xEF\xBB");
    CHECK_EQ_INT(st.truncated, 1);
    rec_free(&rec);
}

static void test_eof_discards_unterminated_event(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats = PARSE(&rec, "data: a\n\ndata: b\n");
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(stats.truncated, 1);
    rec_free(&rec);

    rec_init(&rec);
    stats = PARSE(&rec, "data: a\n\ndata: b"); /* no line end at all */
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(stats.truncated, 1);
    rec_free(&rec);

    /* After the reset a new stream starts clean: the cut "b" is gone, the id
     * of the last dispatched event is kept, the pending one is not. */
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    const char s1[] = "id: 1\ndata: a\n\nid: 2\ndata: b\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s1, sizeof s1 - 1), FR_OK);
    fr_sse_parser_reset(parser);
    CHECK_EQ_STR(fr_sse_parser_last_id(parser), "1");
    const char s2[] = ":ok\n\ndata: c\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s2, sizeof s2 - 1), FR_OK);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[1], "c");
    CHECK_EQ_STR(rec.id[1], "1"); /* the `:ok` prelude did not clear it */
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_spec_example_streams(void)
{
    /* The examples of the HTML standard, section 9.2.5. */
    struct rec rec;
    rec_init(&rec);
    PARSE(&rec, ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
                "data:  third event\n");
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[0], "first event");
    CHECK_EQ_STR(rec.id[0], "1");
    CHECK_EQ_STR(rec.data[1], "second event");
    CHECK_EQ_STR(rec.id[1], "");
    rec_free(&rec);

    rec_init(&rec);
    PARSE(&rec, "data\n\ndata\ndata\n\ndata:");
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[0], "");
    CHECK_EQ_STR(rec.data[1], "\n");
    rec_free(&rec);
}

/* ---------------------------------------------------------- size cap */

static void test_oversize_discarded_and_resynced(void)
{
    struct rec rec;
    rec_init(&rec);
    char s[1024];
    char big[201];
    memset(big, 'x', 200);
    big[200] = 0;
    int n = snprintf(s, sizeof s,
                     "id: 1\ndata: ok1\n\n"
                     "id: 2\ndata: %s\ndata: tail\nid: 3\n\n"
                     "data: ok2\n\n",
                     big);
    struct fr_sse_parser_stats stats = parse(&rec, s, (size_t)n, 128);
    CHECK_EQ_INT(stats.oversize, 1);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[0], "ok1");
    CHECK_EQ_STR(rec.data[1], "ok2");
    CHECK_EQ_STR(rec.id[1], "1"); /* ids inside the dropped event do not count */
    rec_free(&rec);

    /* Many small lines add up: the cap is on the whole event. */
    rec_init(&rec);
    struct fr_buf b;
    fr_buf_init(&b, 1 << 20);
    for (int i = 0; i < 40; i++) {
        fr_buf_puts(&b, "data: 0123456789\n");
    }
    fr_buf_puts(&b, "\ndata: after\n\n");
    stats = parse(&rec, (const char *)b.data, b.len, 256);
    CHECK_EQ_INT(stats.oversize, 1);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "after");
    fr_buf_free(&b);
    rec_free(&rec);

    /* An event exactly at the cap passes: "data: " + 58 bytes = 64. */
    rec_init(&rec);
    char exact[128];
    memset(exact, 'y', sizeof exact);
    memcpy(exact, "data: ", 6);
    exact[64] = '\n';
    exact[65] = '\n';
    stats = parse(&rec, exact, 66, 64);
    CHECK_EQ_INT(stats.oversize, 0);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_INT(rec.data_len[0], 58);
    exact[64] = 'y'; /* one byte more */
    exact[65] = '\n';
    exact[66] = '\n';
    stats = parse(&rec, exact, 67, 64);
    CHECK_EQ_INT(stats.oversize, 1);
    CHECK_EQ_INT(rec.n, 1);
    rec_free(&rec);
}

static void test_oversize_memory_bounded(void)
{
    /* 8 MiB of one line, then 8 MiB of short data lines, fed in 4 KiB and in
     * 1-byte-ish odd chunks: the buffers never grow past the cap. */
    const size_t max = 1024;
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, max);
    size_t len = 8u << 20;
    char *line = malloc(len);
    memset(line, 'q', len);
    memcpy(line, "data: ", 6);
    for (size_t off = 0; off < len; off += 4096) {
        CHECK_EQ_INT(fr_sse_parser_feed(parser, line + off, len - off < 4096 ? len - off : 4096),
                     FR_OK);
    }
    CHECK(parser->line.alloc <= max + 1);
    CHECK(parser->data.alloc <= max + 1);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n\n", 2), FR_OK); /* end line, resync */
    for (size_t i = 0; i + 8 <= len; i += 8) {
        memcpy(line + i, "data: 1\n", 8);
    }
    for (size_t off = 0; off < len; off += 7001) {
        CHECK_EQ_INT(fr_sse_parser_feed(parser, line + off, len - off < 7001 ? len - off : 7001),
                     FR_OK);
    }
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n\ndata: fine\n\n", 14), FR_OK);
    CHECK(parser->line.alloc <= max + 1);
    CHECK(parser->data.alloc <= max + 1);
    CHECK(parser->id.alloc <= max + 1);
    CHECK(parser->last_id.alloc <= max + 1);
    CHECK(parser->type.alloc <= max + 1);
    struct fr_sse_parser_stats stats;
    fr_sse_parser_stats(parser, &stats);
    CHECK_EQ_INT(stats.oversize, 2); /* the long line, then the many short ones */
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "fine");
    free(line);
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_oversize_split_line(void)
{
    /* The oversize line arrives in pieces and its blank line right after a
     * CR at a chunk end: the resync still finds the right blank line. */
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 64);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: ", 6), FR_OK);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(fr_sse_parser_feed(parser, "0123456789", 10), FR_OK);
    }
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\r", 1), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\ndata: skipped\r", 15), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n\r", 2), FR_OK); /* the blank line */
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\ndata: next\n\n", 13), FR_OK);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "next");
    struct fr_sse_parser_stats stats;
    fr_sse_parser_stats(parser, &stats);
    CHECK_EQ_INT(stats.oversize, 1);
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

/* ------------------------------------------------------------ splitting */

/* A stream with every feature: BOM, comments, CR/LF/CRLF, multi-line data,
 * ids (one with NUL), retry, unknown fields, an oversize event (cap 256), an
 * id-only event, and an unterminated tail. */
static size_t sample_stream(char *out, size_t cap)
{
    struct fr_buf b;
    fr_buf_init(&b, cap);
    fr_buf_puts(&b, "\xEF\xBB\xBF:ok\n\n");
    fr_buf_puts(&b, "event: message\nid: [{\"t\":1}]\ndata: {\"a\":1}\n\n");
    fr_buf_puts(&b, "event: add\r\nid: 2\r\ndata: line1\r\ndata: line2\r\n\r\n");
    fr_buf_puts(&b, "retry: 3000\rdata: cr\rdata\r\r");
    fr_buf_puts(&b, ": comment\nfoo: bar\ndata:nospace\n\n");
    fr_buf_append(&b, "id: a\0b\ndata: nul-id\n\n", 23);
    fr_buf_puts(&b, "id: big\ndata: ");
    for (int i = 0; i < 40; i++) {
        fr_buf_puts(&b, "0123456789");
    }
    fr_buf_puts(&b, "\ndata: more\n\n");
    fr_buf_puts(&b, "data: after-big\r\n\r\n");
    fr_buf_puts(&b, "id: only\n\n");
    fr_buf_puts(&b, "data: a:b\n\ndata: \xEF\xBB\xBF\n\n");
    fr_buf_puts(&b, "event: x\ndata: cut");
    memcpy(out, b.data, b.len);
    size_t len = b.len;
    fr_buf_free(&b);
    return len;
}

static void append_stats(struct fr_buf *t, const struct fr_sse_parser_stats *s)
{
    fr_buf_printf(t, "S%llu,%llu,%llu,%llu,%llu,%llu,%llu", (unsigned long long)s->bytes,
                  (unsigned long long)s->lines, (unsigned long long)s->events,
                  (unsigned long long)s->comments, (unsigned long long)s->oversize,
                  (unsigned long long)s->truncated, (unsigned long long)s->retries);
}

/* Parse with the given cuts; return the transcript (events, retries, stats). */
static char *transcript(const char *s, size_t len, const size_t *cuts, size_t ncuts, size_t max)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, max);
    feed_split(parser, s, len, cuts, ncuts);
    struct fr_sse_parser_stats stats;
    fr_sse_parser_stats(parser, &stats);
    append_stats(&rec.transcript, &stats);
    fr_buf_printf(&rec.transcript, "L%s", fr_sse_parser_last_id(parser));
    fr_sse_parser_destroy(parser);
    char *copy = malloc(rec.transcript.len + 1);
    memcpy(copy, fr_buf_cstr(&rec.transcript), rec.transcript.len + 1);
    rec_free(&rec);
    return copy;
}

static void test_sample_stream_reference(void)
{
    char s[4096];
    size_t len = sample_stream(s, sizeof s);
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats = parse(&rec, s, len, 256);
    CHECK_EQ_INT(rec.n, 8);
    CHECK_EQ_STR(rec.id[0], "[{\"t\":1}]");
    CHECK_EQ_STR(rec.data[0], "{\"a\":1}");
    CHECK_EQ_STR(rec.type[1], "add");
    CHECK_EQ_STR(rec.data[1], "line1\nline2");
    CHECK_EQ_STR(rec.data[2], "cr\n");
    CHECK_EQ_STR(rec.id[2], "2");
    CHECK_EQ_STR(rec.data[3], "nospace");
    CHECK_EQ_STR(rec.data[4], "nul-id");
    CHECK_EQ_STR(rec.id[4], "2");
    CHECK_EQ_STR(rec.data[5], "after-big");
    CHECK_EQ_STR(rec.data[6], "a:b");
    CHECK_EQ_STR(rec.id[6], "only");
    CHECK_EQ_STR(rec.data[7], "\xEF\xBB\xBF");
    CHECK_EQ_INT(stats.oversize, 1);
    CHECK_EQ_INT(stats.truncated, 1);
    CHECK_EQ_INT(stats.comments, 2);
    CHECK_EQ_INT(rec.nretry, 1);
    rec_free(&rec);
}

static void test_all_splits_identical(void)
{
    char s[4096];
    size_t len = sample_stream(s, sizeof s);
    char *whole = transcript(s, len, NULL, 0, 256);

    /* Byte by byte. */
    size_t *cuts = malloc(len * sizeof *cuts);
    for (size_t i = 0; i + 1 < len; i++) {
        cuts[i] = i + 1;
    }
    char *t = transcript(s, len, cuts, len - 1, 256);
    CHECK_EQ_STR(t, whole);
    free(t);

    /* Every single split point, and every pair of nearby split points. */
    int bad = 0;
    for (size_t i = 0; i <= len; i++) {
        t = transcript(s, len, &i, 1, 256);
        bad += strcmp(t, whole) != 0;
        free(t);
        for (size_t j = i; j <= len && j < i + 8; j++) {
            size_t two[2] = {i, j};
            t = transcript(s, len, two, 2, 256);
            bad += strcmp(t, whole) != 0;
            free(t);
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* Random splits over many seeds. */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int seed = 0; seed < 300; seed++) {
        size_t n = 0, at = 0;
        while (n < len) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            at += 1 + (size_t)(x % (seed % 3 == 0 ? 3 : 40));
            if (at >= len) {
                break;
            }
            cuts[n++] = at;
        }
        t = transcript(s, len, cuts, n, 256);
        bad += strcmp(t, whole) != 0;
        free(t);
    }
    CHECK_EQ_INT(bad, 0);
    free(cuts);
    free(whole);
}

/* -------------------------------------------------- zero copy, errors */

static void test_zero_copy_within_chunk(void)
{
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    const char s[] = "event: message\nid: 1\ndata: {\"k\":\"v\"}\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s, sizeof s - 1), FR_OK);
    CHECK_EQ_INT(rec.n, 1);
    /* The data the callback saw lies inside the caller's chunk. */
    CHECK(rec.data_ptr[0] >= s && rec.data_ptr[0] < s + sizeof s);
    CHECK_EQ_STR(rec.data[0], "{\"k\":\"v\"}");
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_data_kept_across_chunks(void)
{
    /* The chunk holding the data line is freed before the blank line comes:
     * the parser must have copied it (ASan would catch a stale pointer). */
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    char *chunk = malloc(16);
    memcpy(chunk, "data: abc\n", 10);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, chunk, 10), FR_OK);
    memset(chunk, 'Z', 10);
    free(chunk);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n", 1), FR_OK);
    CHECK_EQ_INT(rec.n, 1);
    CHECK_EQ_STR(rec.data[0], "abc");
    /* A data line completed from the carry-over buffer, followed in the same
     * chunk by a long partial line that reuses that buffer. */
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: abc", 9), FR_OK);
    const char s2[] = "def\nevent: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s2, sizeof s2 - 1), FR_OK);
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "\n\n", 2), FR_OK);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_STR(rec.data[1], "abcdef");
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_callback_error_stops_feed(void)
{
    struct rec rec;
    rec_init(&rec);
    rec.fail_code = FR_EJSON;
    struct fr_sse_parser *parser = new_parser(&rec, 0);
    const char s[] = "data: 1\n\ndata: 2\n\n";
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s, sizeof s - 1), FR_EJSON);
    CHECK_EQ_INT(rec.n, 1); /* the second event was not delivered */
    fr_sse_parser_reset(parser);
    rec.fail_code = 0;
    CHECK_EQ_INT(fr_sse_parser_feed(parser, s, sizeof s - 1), FR_OK);
    CHECK_EQ_INT(rec.n, 3);
    fr_sse_parser_destroy(parser);
    rec_free(&rec);
}

static void test_api_edges(void)
{
    struct fr_sse_parser *parser = (struct fr_sse_parser *)1;
    struct fr_sse_parser_opts opts = {0};
    CHECK_EQ_INT(fr_sse_parser_create(&opts, &parser), FR_EINVAL); /* no callback */
    CHECK(parser == NULL);
    struct rec rec;
    rec_init(&rec);
    opts.on_event = rec_on_event;
    opts.arg = &rec;
    opts.max_event_bytes = FR_SSE_MIN_MAX_EVENT - 1;
    CHECK_EQ_INT(fr_sse_parser_create(&opts, &parser), FR_EINVAL);
    opts.max_event_bytes = 0;
    CHECK_EQ_INT(fr_sse_parser_create(&opts, &parser), FR_OK);
    CHECK_EQ_STR(fr_sse_parser_last_id(parser), "");
    CHECK_EQ_INT(fr_sse_parser_set_last_id(parser, "resume-me", 9), FR_OK);
    CHECK_EQ_STR(fr_sse_parser_last_id(parser), "resume-me");
    CHECK_EQ_INT(fr_sse_parser_feed(parser, "data: x\n\n", 9), FR_OK);
    CHECK_EQ_STR(rec.id[0], "resume-me");
    CHECK_EQ_INT(fr_sse_parser_feed(parser, NULL, 0), FR_OK);
    fr_sse_parser_destroy(parser);
    fr_sse_parser_destroy(NULL);
    rec_free(&rec);
}

/* ------------------------------------------------------------ the model */

/* Random streams built from tokens that exercise every rule; the parser
 * (whole, and in random chunks) must match the oracle byte for byte. */
static void test_model_random_streams(void)
{
    static const char *const tokens[] = {
        "data", "data:", "data: ", "id", "id:", "id: ", "event", "event: ", "retry: ",
        "retry:", ":", ": ", " ", "x", "42", "\xC3\xA9", "foo", "Data", "\n", "\n", "\n",
        "\r", "\r\n", "\r\n", "\n\n", "\xEF\xBB\xBF", "\t", "message", "error", "{\"a\":1}"};
    const size_t ntok = sizeof tokens / sizeof tokens[0];
    uint64_t x = 88172645463325252ULL;
    int bad_whole = 0, bad_split = 0, shown = 0;
    char s[2048];
    size_t cuts[2048];
    for (int seed = 0; seed < 3000; seed++) {
        size_t len = 0;
        int count = (int)(x % 80);
        for (int k = 0; k < count; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            const char *tok = tokens[x % ntok];
            size_t tl = strlen(tok);
            if (x % 97 == 0) {
                s[len++] = 0; /* a NUL byte now and then */
            } else {
                memcpy(s + len, tok, tl);
                len += tl;
            }
        }
        struct fr_buf model;
        fr_buf_init(&model, 1 << 20);
        oracle_parse((const uint8_t *)s, len, &model);
        struct rec rec;
        rec_init(&rec);
        parse(&rec, s, len, 0);
        bad_whole += rec.transcript.len != model.len ||
                     (model.len && memcmp(rec.transcript.data, model.data, model.len) != 0);
        rec_free(&rec);

        size_t ncuts = 0, at = 0;
        for (;;) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            at += 1 + (size_t)(x % 9);
            if (at >= len) {
                break;
            }
            cuts[ncuts++] = at;
        }
        rec_init(&rec);
        struct fr_sse_parser *parser = new_parser(&rec, 0);
        feed_split(parser, s, len, cuts, ncuts);
        fr_sse_parser_destroy(parser);
        bad_split += rec.transcript.len != model.len ||
                     (model.len && memcmp(rec.transcript.data, model.data, model.len) != 0);
        if (bad_whole + bad_split > 0 && !shown && getenv("FR_TEST_VERBOSE")) {
            shown = 1;
            fprintf(stderr, "model mismatch at seed %d:\n", seed);
            fwrite(s, 1, len, stderr);
            fprintf(stderr, "\n--- model\n");
            fwrite(model.data, 1, model.len, stderr);
            fprintf(stderr, "\n--- parser\n");
            fwrite(rec.transcript.data, 1, rec.transcript.len, stderr);
            fprintf(stderr, "\n");
        }
        rec_free(&rec);
        fr_buf_free(&model);
    }
    CHECK_EQ_INT(bad_whole, 0);
    CHECK_EQ_INT(bad_split, 0);
}

/* ------------------------------------------------------ recorded frames */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = 0;
    fclose(f);
    return s;
}

static void test_recorded_wikimedia_frames(void)
{
    const char *path = check_shared("data/wikimedia/wikivis-example.events");
    if (!path) {
        fprintf(stderr, "skip test_recorded_wikimedia_frames: "
                        "$FR_SHARED_DIR/data/wikimedia/wikivis-example.events not found\n");
        return;
    }
    size_t len = 0;
    char *s = slurp(path, &len);
    CHECK(s != NULL);
    if (!s) {
        return;
    }
    /* Expected values straight from the file's lines. */
    char ids[REC_KEEP][512], datas[REC_KEEP][2048];
    int nid = 0, ndata = 0;
    for (char *line = s; line < s + len;) {
        char *nl = memchr(line, '\n', (size_t)(s + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(s + len - line);
        if (n > 4 && memcmp(line, "id: ", 4) == 0 && nid < REC_KEEP) {
            copy_str(ids[nid++], sizeof ids[0], line + 4, n - 4);
        } else if (n > 6 && memcmp(line, "data: ", 6) == 0 && ndata < REC_KEEP) {
            copy_str(datas[ndata++], sizeof datas[0], line + 6, n - 6);
        }
        line += n + 1;
    }
    /* The capture stops right after the third data line, with no line end:
     * as the spec says for an unterminated event at EOF, it is discarded. */
    struct rec rec;
    rec_init(&rec);
    struct fr_sse_parser_stats stats = parse(&rec, s, len, 0);
    CHECK_EQ_INT(nid, 3);
    CHECK_EQ_INT(rec.n, 2);
    CHECK_EQ_INT(stats.truncated, 1);
    CHECK_EQ_INT(stats.bytes, len);
    rec_free(&rec);

    /* Completed with its blank line, all three frames come out, ids verbatim. */
    s = realloc(s, len + 3);
    memcpy(s + len, "\n\n", 3);
    len += 2;
    rec_init(&rec);
    stats = parse(&rec, s, len, 0);
    CHECK_EQ_INT(rec.n, 3);
    for (int i = 0; i < rec.n && i < nid; i++) {
        CHECK_EQ_STR(rec.id[i], ids[i]); /* verbatim, not re-serialised */
        CHECK_EQ_STR(rec.data[i], datas[i]);
        CHECK_EQ_STR(rec.type[i], "message");
    }
    CHECK_EQ_STR(rec.id[0], "[{\"topic\":\"eqiad.mediawiki.recentchange\",\"partition\":0,"
                            "\"timestamp\":1670732822001},{\"topic\":\"codfw.mediawiki."
                            "recentchange\",\"partition\":0,\"offset\":-1}]");
    CHECK_EQ_INT(stats.oversize, 0);
    CHECK_EQ_INT(stats.truncated, 0);
    CHECK_EQ_INT(stats.bytes, len);
    /* Every split point gives the same events. */
    char *whole = transcript(s, len, NULL, 0, 0);
    int bad = 0;
    for (size_t i = 0; i <= len; i++) {
        char *t = transcript(s, len, &i, 1, 0);
        bad += strcmp(t, whole) != 0;
        free(t);
    }
    CHECK_EQ_INT(bad, 0);
    /* The same frames with CRLF line ends parse to the same events. */
    char *crlf = malloc(len * 2 + 1);
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n') {
            crlf[m++] = '\r';
        }
        crlf[m++] = s[i];
    }
    struct rec rec2;
    rec_init(&rec2);
    parse(&rec2, crlf, m, 0);
    CHECK_EQ_INT(rec2.n, 3);
    CHECK(rec.transcript.len == rec2.transcript.len &&
          memcmp(rec.transcript.data, rec2.transcript.data, rec.transcript.len) == 0);
    rec_free(&rec2);
    free(crlf);
    free(whole);
    rec_free(&rec);
    free(s);
}

int main(void)
{
    RUN(test_basic_event);
    RUN(test_all_fields);
    RUN(test_multiline_data_joined_with_lf);
    RUN(test_one_leading_space_stripped);
    RUN(test_colon_in_value_kept);
    RUN(test_field_without_colon);
    RUN(test_comments_ignored_and_counted);
    RUN(test_unknown_fields_ignored);
    RUN(test_event_type);
    RUN(test_empty_data_not_dispatched);
    RUN(test_id_only_event_updates_last_id);
    RUN(test_id_persists_until_changed);
    RUN(test_id_with_nul_ignored);
    RUN(test_nul_in_data_kept);
    RUN(test_retry_rules);
    RUN(test_line_ends);
    RUN(test_cr_only_stream);
    RUN(test_crlf_split_across_chunks);
    RUN(test_bom);
    RUN(test_eof_discards_unterminated_event);
    RUN(test_spec_example_streams);
    RUN(test_oversize_discarded_and_resynced);
    RUN(test_oversize_memory_bounded);
    RUN(test_oversize_split_line);
    RUN(test_sample_stream_reference);
    RUN(test_all_splits_identical);
    RUN(test_zero_copy_within_chunk);
    RUN(test_data_kept_across_chunks);
    RUN(test_callback_error_stops_feed);
    RUN(test_api_edges);
    RUN(test_model_random_streams);
    RUN(test_recorded_wikimedia_frames);
    return check_report();
}
