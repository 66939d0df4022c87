/*
 * test_ingest_since.c — `--since TIME` parsing, SSE-id positions topic by
 * topic, and the retention-gap check, including the two datacenters'
 * topics interleaved in historical reads (PROTOCOL.md §4). Expected values
 * are written by hand from the protocol notes, not computed by the code.
 */
#include "check.h"

#include "core/err.h"
#include "ingest/since.h"

#define EQ "eqiad.mediawiki.recentchange"
#define CO "codfw.mediawiki.recentchange"

static void test_since_parse(void)
{
    int64_t now = 1793491200000LL; /* 2026-11-01T00:00:00Z */
    int64_t ms = 0;
    CHECK_EQ_INT(fr_ingest_since_parse("1793491200123", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, 1793491200123LL);
    CHECK_EQ_INT(fr_ingest_since_parse("2026-11-01T00:00:00Z", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, 1793491200000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("2026-10-31T23:00:00.5+00:00", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, 1793487600500LL);
    CHECK_EQ_INT(fr_ingest_since_parse("2026-11-01T00:00:00", now, &ms), FR_OK); /* no zone: UTC */
    CHECK_EQ_INT(ms, 1793491200000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("2026-11-01", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, 1793491200000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("24h", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, now - 86400000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("1h30m", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, now - 5400000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("7d", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, now - 604800000LL);
    CHECK_EQ_INT(fr_ingest_since_parse("90s", now, &ms), FR_OK);
    CHECK_EQ_INT(ms, now - 90000LL);
    const char *bad[] = {"",
                         "h",
                         "24x",
                         "1.5h",
                         "-3h",
                         "yesterday",
                         "2026-13-01",
                         "24h ",
                         "h24",
                         "2026-11-01T25:00:00Z",
                         "99999999999999999999"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ms = 42;
        CHECK_EQ_INT(fr_ingest_since_parse(bad[i], now, &ms), FR_EINVAL);
        CHECK_EQ_INT(ms, 42);
    }
}

/* The id KafkaSSE sends with eqiad at timestamp e and codfw at timestamp c
 * (c < 0: codfw still at its initial "offset": -1). */
static const char *id2(char *buf, size_t cap, int64_t e, int64_t c)
{
    if (c < 0) {
        snprintf(buf, cap,
                 "[{\"topic\":\"" EQ "\",\"partition\":0,\"timestamp\":%lld},"
                 "{\"topic\":\"" CO "\",\"partition\":0,\"offset\":-1}]",
                 (long long)e);
    } else {
        snprintf(buf, cap,
                 "[{\"topic\":\"" EQ "\",\"partition\":0,\"timestamp\":%lld},"
                 "{\"topic\":\"" CO "\",\"partition\":0,\"timestamp\":%lld}]",
                 (long long)e, (long long)c);
    }
    return buf;
}

/* Build the id first, then hand it over (argument order is unspecified). */
static int gev(struct fr_ingest_gap *g, int64_t e, int64_t c, struct fr_ingest_gap_report *r)
{
    char id[512];
    id2(id, sizeof id, e, c);
    return fr_ingest_gap_event(g, id, strlen(id), r);
}

static int pparse(int64_t e, int64_t c, struct fr_ingest_pos *pos)
{
    char id[512];
    id2(id, sizeof id, e, c);
    return fr_ingest_pos_parse(id, strlen(id), pos);
}

static void test_positions(void)
{
    struct fr_ingest_pos pa, pb, h;
    CHECK_EQ_INT(pparse(1000, -1, &pa), FR_OK);
    CHECK_EQ_INT(pa.n, 2);
    CHECK_EQ_STR(pa.t[0].topic, EQ);
    CHECK_EQ_INT(pa.t[0].has_ts, 1);
    CHECK_EQ_INT(pa.t[0].value, 1000);
    CHECK_EQ_INT(pa.t[1].has_ts, 0);
    CHECK_EQ_INT(pa.t[1].value, -1);
    CHECK_EQ_INT(fr_ingest_pos_parse("abc", 3, &pa), FR_EJSON);
    CHECK_EQ_INT(fr_ingest_pos_parse("[]", 2, &pa), FR_EJSON);
    CHECK_EQ_INT(fr_ingest_pos_parse("[{\"topic\":\"x\"}]", 15, &pa), FR_EJSON);

    /* horizon: eqiad 1000 */
    memset(&h, 0, sizeof h);
    pparse(1000, -1, &pa);
    fr_ingest_pos_merge(&h, &pa);
    pparse(999, -1, &pb);
    CHECK_EQ_INT(fr_ingest_pos_beyond(&pb, &h), 0);
    CHECK_EQ_INT(fr_ingest_pos_beyond(&pa, &h), 0); /* equal is not beyond */
    pparse(1001, -1, &pb);
    CHECK_EQ_INT(fr_ingest_pos_beyond(&pb, &h), 1);
    /* codfw delivering for the first time is beyond, even with eqiad behind */
    pparse(900, 50, &pb);
    CHECK_EQ_INT(fr_ingest_pos_beyond(&pb, &h), 1);
    /* merge keeps the larger value per topic */
    fr_ingest_pos_merge(&h, &pb);
    CHECK_EQ_INT(h.n, 2);
    CHECK_EQ_INT(h.t[0].value, 1000);
    CHECK_EQ_INT(h.t[1].value, 50);
    pparse(1000, 50, &pb);
    CHECK_EQ_INT(fr_ingest_pos_beyond(&pb, &h), 0);
}

static void test_gap_since_one_topic(void)
{
    struct fr_ingest_gap g;
    struct fr_ingest_gap_report r = {0, 0};
    int64_t since = 1793491200000LL;
    /* The feed's form: codfw stays at offset -1. First event 500 ms after since: no gap. */
    fr_ingest_gap_since(&g, since, 1000);
    CHECK_EQ_INT(gev(&g, since + 501, -1, &r), 0);
    CHECK_EQ_INT(g.active, 0); /* decided at once: the only asked topic delivered */
    /* 5 s late: a gap from since to the event's Kafka time (id - 1). */
    fr_ingest_gap_since(&g, since, 1000);
    CHECK_EQ_INT(gev(&g, since + 5001, -1, &r), 1);
    CHECK_EQ_INT(r.from_ms, since);
    CHECK_EQ_INT(r.to_ms, since + 5000);
    /* Reported once: later events say nothing. */
    CHECK_EQ_INT(gev(&g, since + 9001, -1, &r), 0);
    CHECK_EQ_INT(fr_ingest_gap_end(&g, &r), 0);
    /* Exactly at the tolerance is not a gap. */
    fr_ingest_gap_since(&g, since, 1000);
    CHECK_EQ_INT(gev(&g, since + 1001, -1, &r), 0);
    /* No position asked: never a gap. */
    fr_ingest_gap_none(&g);
    CHECK_EQ_INT(gev(&g, since + 99999, -1, &r), 0);
    /* Plain SSE ids: cannot be judged, the check switches off. */
    fr_ingest_gap_since(&g, since, 1000);
    CHECK_EQ_INT(fr_ingest_gap_event(&g, "42", 2, &r), 0);
    CHECK_EQ_INT(g.active, 0);
}

static void test_gap_interleaved(void)
{
    struct fr_ingest_gap g;
    struct fr_ingest_gap_report r = {0, 0};
    int64_t s = 1793491200000LL, hour = 3600000LL;
    /* Wikimedia with ?since=: both topics start at `since`. The idle DC
     * (codfw) delivers a stray event 3 h later first; eqiad's first event
     * follows 10 ms after since. Not a gap. */
    fr_ingest_gap_since(&g, s, 60000);
    CHECK_EQ_INT(gev(&g, s, s + 3 * hour + 1, &r), 0);
    CHECK_EQ_INT(g.active, 1); /* eqiad has not delivered yet: undecided */
    CHECK_EQ_INT(gev(&g, s + 11, s + 3 * hour + 1, &r), 0);
    CHECK_EQ_INT(g.active, 0);
    /* Both topics late (retention cut them both): the smaller delay is the gap. */
    fr_ingest_gap_since(&g, s, 60000);
    CHECK_EQ_INT(gev(&g, s, s + 3 * hour + 1, &r), 0);
    CHECK_EQ_INT(gev(&g, s + 2 * hour + 1, s + 3 * hour + 1, &r), 1);
    CHECK_EQ_INT(r.from_ms, s);
    CHECK_EQ_INT(r.to_ms, s + 2 * hour);
    /* The idle topic never delivers: decided after the window on eqiad alone. */
    fr_ingest_gap_since(&g, s, 60000);
    int reported = 0;
    for (int i = 0; i < FR_INGEST_GAP_WINDOW; i++) {
        reported += gev(&g, s + hour + 1 + i, s, &r);
        CHECK_EQ_INT(g.active, i + 1 < FR_INGEST_GAP_WINDOW);
    }
    CHECK_EQ_INT(reported, 1);
    CHECK_EQ_INT(r.to_ms, s + hour);
    /* The connection ends before every topic delivered: decided on what came. */
    fr_ingest_gap_since(&g, s, 60000);
    CHECK_EQ_INT(gev(&g, s, s + hour + 1, &r), 0);
    CHECK_EQ_INT(fr_ingest_gap_end(&g, &r), 1);
    CHECK_EQ_INT(r.from_ms, s);
    CHECK_EQ_INT(r.to_ms, s + hour);
    /* Ended with nothing delivered: nothing to say. */
    fr_ingest_gap_since(&g, s, 60000);
    CHECK_EQ_INT(fr_ingest_gap_end(&g, &r), 0);
}

static void test_gap_resume(void)
{
    char sent[512];
    struct fr_ingest_gap g;
    struct fr_ingest_gap_report r = {0, 0};
    int64_t t = 1793491200000LL;
    /* Resume id after the 1 ms rewind: eqiad at T (the last stored event's
     * time), codfw at "offset" -1 (now: nothing asked from history). */
    id2(sent, sizeof sent, t, -1);
    fr_ingest_gap_resume(&g, sent, strlen(sent), 60000);
    CHECK_EQ_INT(g.active, 1);
    /* The re-delivered last event (Kafka time T, id T+1): no gap. */
    CHECK_EQ_INT(gev(&g, t + 1, -1, &r), 0);
    CHECK_EQ_INT(g.active, 0);
    /* The source's history now starts 10 minutes later. */
    fr_ingest_gap_resume(&g, sent, strlen(sent), 60000);
    CHECK_EQ_INT(gev(&g, t + 600001, -1, &r), 1);
    CHECK_EQ_INT(r.from_ms, t);
    CHECK_EQ_INT(r.to_ms, t + 600000);
    /* A codfw event arriving on a resume that asked codfw at offset -1 is
     * live data, not history: not judged. */
    fr_ingest_gap_resume(&g, sent, strlen(sent), 60000);
    CHECK_EQ_INT(gev(&g, t, t + 9 * 3600000LL, &r), 0);
    CHECK_EQ_INT(g.active, 1);
    /* An id of another form asks nothing we can judge. */
    fr_ingest_gap_resume(&g, "opaque-7", 8, 60000);
    CHECK_EQ_INT(g.active, 0);
}

int main(void)
{
    RUN(test_since_parse);
    RUN(test_positions);
    RUN(test_gap_since_one_topic);
    RUN(test_gap_interleaved);
    RUN(test_gap_resume);
    return check_report();
}
