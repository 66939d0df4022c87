/*
 * since.h — where an ingest connection asks the source to start, and
 * whether the source could honour it (docs/adr/0049-ingest-since-and-gaps.md).
 *
 * Three pure pieces, no I/O, no threads (each value belongs to the one
 * thread that runs the SSE client):
 *
 *   - `--since TIME`: Unix ms, ISO-8601, or a duration back from now.
 *   - positions: a Wikimedia SSE id is one assignment per Kafka topic
 *     (PROTOCOL.md §3); historical reads interleave the two datacenters'
 *     topics (§4), so a position is compared topic by topic, never as one
 *     number.
 *   - the retention-gap check: a connection that asked for a timestamp
 *     (?since= or a resume id) and whose first delivered events are later
 *     than asked by more than a tolerance reports "events between X and Y
 *     may be lost" once (PROTOCOL.md §6: Kafka starts at the oldest retained
 *     message without saying so).
 */
#ifndef FR_INGEST_SINCE_H
#define FR_INGEST_SINCE_H

#include <stddef.h>
#include <stdint.h>

/* Parse TIME for `ingest --since`: integer Unix milliseconds; an ISO-8601
 * date-time ("2026-12-05T10:00:00Z", no zone = UTC, a date alone =
 * midnight UTC); or a duration back from now_ms: one or more <integer><unit>
 * with unit s, m, h or d ("24h", "1h30m", "7d"). FR_EINVAL otherwise. */
int fr_ingest_since_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/* ---- positions ------------------------------------------------------- */

#define FR_INGEST_POS_TOPICS 4 /* Wikimedia sends 2; more entries are ignored */

struct fr_ingest_pos_topic {
    char topic[96];
    int has_ts;    /* 1: "timestamp" (Kafka ms + 1 once delivered); 0: "offset" */
    int64_t value; /* the timestamp or the offset */
};

struct fr_ingest_pos {
    int n;
    struct fr_ingest_pos_topic t[FR_INGEST_POS_TOPICS];
};

/* Parse an SSE id of the Wikimedia form, a JSON array of {topic,
 * partition, timestamp|offset} (other members ignored). FR_EJSON when it is
 * not such an array (plain SSE ids: the caller treats those as opaque). */
int fr_ingest_pos_parse(const char *id, size_t len, struct fr_ingest_pos *pos);
/* 1 when ev is past horizon on some topic: a timestamp greater than
 * horizon's for that topic, or a timestamp on a topic where horizon has
 * none. 0 otherwise. */
int fr_ingest_pos_beyond(const struct fr_ingest_pos *ev, const struct fr_ingest_pos *horizon);
/* Raise horizon to ev topic by topic (the larger timestamp wins; a topic
 * new to horizon is added while there is room). */
void fr_ingest_pos_merge(struct fr_ingest_pos *horizon, const struct fr_ingest_pos *ev);

/* ---- the retention-gap check ---------------------------------------- */

#define FR_INGEST_GAP_WINDOW 256 /* events a connection may take to show where it starts */

struct fr_ingest_gap_topic {
    char topic[96];
    int64_t asked; /* the timestamp asked for (ms) */
    int64_t first; /* Kafka timestamp of the first event delivered, -1 before */
};

struct fr_ingest_gap {
    int active;            /* a position was asked and the check is not decided */
    int64_t asked_default; /* ?since=: applies to every topic; -1 for a resume */
    int64_t tolerance_ms;
    int64_t events; /* events seen while active */
    int n;
    struct fr_ingest_gap_topic t[FR_INGEST_POS_TOPICS];
};

/* What a decided check found. */
struct fr_ingest_gap_report {
    int64_t from_ms; /* the position asked for */
    int64_t to_ms;   /* the first event the source still had */
};

/* Begin checking a connection that sent ?since=since_ms. */
void fr_ingest_gap_since(struct fr_ingest_gap *gap, int64_t since_ms, int64_t tolerance_ms);
/* Begin checking a connection that sent resume_id as Last-Event-ID. Only
 * timestamp assignments are checked ("offset" -1 means "now": nothing was
 * asked from history). An id of another form disables the check. */
void fr_ingest_gap_resume(struct fr_ingest_gap *gap, const char *resume_id, size_t len,
                          int64_t tolerance_ms);
/* No position asked: nothing to check. */
void fr_ingest_gap_none(struct fr_ingest_gap *gap);
/* One event delivered with SSE id `id`. Returns 1 and fills report when the
 * check decides that the source started later than asked by more than the
 * tolerance; 0 otherwise (undecided, or decided without a gap). The check
 * decides once every topic asked for has delivered, or after
 * FR_INGEST_GAP_WINDOW events, on the smallest delay over the topics that
 * delivered (an idle datacenter's topic may deliver late or never). */
int fr_ingest_gap_event(struct fr_ingest_gap *gap, const char *id, size_t len,
                        struct fr_ingest_gap_report *report);
/* The connection ended: decide on what was delivered, as above. */
int fr_ingest_gap_end(struct fr_ingest_gap *gap, struct fr_ingest_gap_report *report);

#endif
