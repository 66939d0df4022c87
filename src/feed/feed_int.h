/*
 * feed_int.h — private to src/feed: the position-keyed random numbers, the
 * generator, the recorded-file source, the fault plan and the stream and
 * cursor structs. Nothing here is exported beyond the feed's own files and
 * its unit tests.
 *
 * Determinism rule: anything about position p is computed from a generator
 * seeded by (seed, p, salt) — never from a shared, advancing state — so a
 * position's bytes do not depend on which positions were computed before,
 * by which thread, or in which order.
 */
#ifndef FR_FEED_INT_H
#define FR_FEED_INT_H

#include "feed/feed.h"

#include <math.h>
#include <stdint.h>

/* ---- random numbers keyed by position (splitmix64) ------------------- */

struct fr_feed_rng {
    uint64_t s;
};

static inline uint64_t fr_feed_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seed from (seed, a, b): distinct triples give unrelated sequences. */
static inline void fr_feed_rng_seed(struct fr_feed_rng *rng, uint64_t seed, uint64_t a, uint64_t b)
{
    rng->s = fr_feed_mix64(fr_feed_mix64(seed ^ 0x5851f42d4c957f2dULL) + a * 0x9e3779b97f4a7c15ULL +
                           fr_feed_mix64(b + 0x632be59bd9b4e019ULL));
}

static inline uint64_t fr_feed_rng_next(struct fr_feed_rng *rng)
{
    rng->s += 0x9e3779b97f4a7c15ULL;
    return fr_feed_mix64(rng->s);
}

/* Uniform in [0, 1). */
static inline double fr_feed_rng_unit(struct fr_feed_rng *rng)
{
    return (double)(fr_feed_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint64_t fr_feed_rng_below(struct fr_feed_rng *rng, uint64_t n)
{
    return n ? fr_feed_rng_next(rng) % n : 0;
}

/* Uniform in [lo, hi]. */
static inline int64_t fr_feed_rng_range(struct fr_feed_rng *rng, int64_t lo, int64_t hi)
{
    return lo + (int64_t)fr_feed_rng_below(rng, (uint64_t)(hi - lo) + 1);
}

/* Roughly Zipf(1) over [0, n): small values are much more likely. */
static inline uint64_t fr_feed_rng_zipf(struct fr_feed_rng *rng, uint64_t n)
{
    double v = exp(fr_feed_rng_unit(rng) * log((double)n + 1.0)) - 1.0;
    uint64_t k = (uint64_t)v;
    return k < n ? k : n - 1;
}

/* Log-normal with the given median and sigma. */
static inline double fr_feed_rng_lognormal(struct fr_feed_rng *rng, double median, double sigma)
{
    double u1 = fr_feed_rng_unit(rng), u2 = fr_feed_rng_unit(rng);
    double z = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
    return median * exp(sigma * z);
}

/* Salts: one per independent decision about a position. Never reuse one. */
enum fr_feed_salt {
    FR_FEED_SALT_EVENT = 1,
    FR_FEED_SALT_ID,
    FR_FEED_SALT_CANARY,
    FR_FEED_SALT_CHUNK,
    FR_FEED_SALT_SESSION,
    FR_FEED_SALT_FAULT,
    FR_FEED_SALT_EDIT,
    FR_FEED_SALT_USER,
    FR_FEED_SALT_WORD,
    FR_FEED_SALT_API
};

/* Append a UUIDv4 string (36 bytes, lower-case) drawn from rng to out[37]. */
void fr_feed_uuid4(struct fr_feed_rng *rng, char out[37]);

/* ---- synthetic generator (gen.c) ------------------------------------- */

/* Kafka timestamps are laid out in chunks of FR_FEED_CHUNK positions: chunk
 * k covers event time [start + k·C·gap, start + (k+1)·C·gap) and its
 * positions fall inside it in order, with random gaps (some zero, so many
 * events share a millisecond). Any chunk is computed on its own, so the
 * timestamp of any position costs O(C) and seeking is exact. */
#define FR_FEED_CHUNK 256

struct fr_feed_gen {
    uint64_t seed;
    int64_t start_us; /* event time of chunk 0 */
    int64_t gap_us;   /* mean spacing between positions */
    double canary_rate;
    int64_t offset_base;
};

void fr_feed_gen_init(struct fr_feed_gen *gen, uint64_t seed, int64_t start_ms, double event_rate,
                      double canary_rate, int64_t offset_base);
int fr_feed_gen_is_canary(const struct fr_feed_gen *gen, int64_t pos);
/* meta.id of position pos (what fr_feed_gen_render writes). */
void fr_feed_gen_meta_id(const struct fr_feed_gen *gen, int64_t pos, char out[37]);
/* Kafka timestamps (ms) of chunk k's FR_FEED_CHUNK positions. */
void fr_feed_gen_chunk_ts(const struct fr_feed_gen *gen, int64_t chunk, int64_t ts[FR_FEED_CHUNK]);
/* First position that may have ts >= ts_ms lies in this chunk or the next. */
int64_t fr_feed_gen_chunk_of(const struct fr_feed_gen *gen, int64_t ts_ms);
/* Append the event JSON of position pos with event time ts_ms. */
int fr_feed_gen_render(const struct fr_feed_gen *gen, int64_t pos, int64_t ts_ms,
                       struct fr_buf *out);

/* ---- generator tables and text (gen_data.c, gen_text.c) -------------- */

enum fr_feed_script {
    FR_FEED_LATIN = 0,
    FR_FEED_CYRILLIC,
    FR_FEED_GREEK,
    FR_FEED_ARABIC,
    FR_FEED_HEBREW,
    FR_FEED_DEVANAGARI,
    FR_FEED_BENGALI,
    FR_FEED_TAMIL,
    FR_FEED_MALAYALAM,
    FR_FEED_THAI,
    FR_FEED_GEORGIAN,
    FR_FEED_ARMENIAN,
    FR_FEED_HAN,
    FR_FEED_KANA,
    FR_FEED_HANGUL,
    FR_FEED_SCRIPT_COUNT
};

enum fr_feed_family {
    FR_FEED_WP = 0,
    FR_FEED_WIKT,
    FR_FEED_WS,
    FR_FEED_WB,
    FR_FEED_WQ,
    FR_FEED_WV,
    FR_FEED_WN,
    FR_FEED_COMMONS,
    FR_FEED_WIKIDATA,
    FR_FEED_META
};

/* Localised names and messages for one language; NULL fields fall back to
 * English. */
struct fr_feed_lang {
    const char *code;
    const char *talk, *user, *user_talk, *file, *tmpl, *category, *help, *project;
    const char *cat_added, *cat_removed; /* printf format with one %s: the page */
    const char *created;                 /* printf format with one %s: page text */
    const char *accents;                 /* extra letters, space separated */
};

struct fr_feed_wiki {
    const char *db;
    const char *host;
    const char *code;    /* language code, seeds the vocabulary */
    const char *ns_lang; /* code of the fr_feed_lang with its namespace names */
    uint8_t script;
    uint8_t family;
    uint8_t patrol; /* bit 0: RC patrol (edits carry "patrolled"), bit 1: new-page patrol */
    uint8_t rtl;
    uint32_t w_edit;  /* weight among edit/new/log events */
    uint32_t w_cat;   /* weight among categorize events */
    int64_t rc_base;  /* rc_id at FR_FEED_REF_MS, 0: derived from w_edit */
    int64_t rev_base; /* revision id at FR_FEED_REF_MS, 0: derived */
};

#define FR_FEED_REF_MS INT64_C(1783699526000) /* 2026-07-10T16:05:26Z, the sample's time */
#define FR_FEED_REAL_RATE 38.0                /* events/s of the real stream (measured) */

extern const struct fr_feed_wiki fr_feed_wikis[];
/* The body of a wbgetentities answer (api_labels.c) for ids and languages
 * ('|'-separated, as MHD decoded them). counts[0..3) gain entities,
 * missing entities and labels served. FR_EINVAL with *errcode set for a
 * request the real API refuses (toomanyvalues, no-such-entity,
 * param-missing); FR_ETOOBIG when body's cap is reached. */
int fr_feed_api_entities(const char *ids, const char *languages, struct fr_buf *body,
                         int64_t counts[3], const char **errcode);
extern const size_t fr_feed_nwikis;
/* The language entry for code (English when unknown); fields may be NULL. */
const struct fr_feed_lang *fr_feed_lang_get(const char *code);
/* Copy code's entry with every NULL name or message taken from English. */
void fr_feed_lang_resolve(const char *code, struct fr_feed_lang *out);
/* Draw a wiki index by weight: w_cat for categorize events, else w_edit. */
size_t fr_feed_wiki_pick(struct fr_feed_rng *rng, int categorize);

/* Text. Every function appends UTF-8 to out and fails only on the cap. */
int fr_feed_utf8_put(struct fr_buf *out, uint32_t cp);
/* A vocabulary word of language code (Zipf-distributed over its vocabulary). */
int fr_feed_text_word(struct fr_buf *out, const struct fr_feed_wiki *wiki, struct fr_feed_rng *rng,
                      int capital);
/* Whether the script separates words with spaces (not Han, kana, Thai). */
int fr_feed_text_spaced(int script);
/* n words joined as the script joins them. */
int fr_feed_text_words(struct fr_buf *out, const struct fr_feed_wiki *wiki, struct fr_feed_rng *rng,
                       int n, int capital);
/* Title-cased phrase for page titles (1–4 words). */
int fr_feed_text_phrase(struct fr_buf *out, const struct fr_feed_wiki *wiki,
                        struct fr_feed_rng *rng);
/* A user name (deterministic in index; bot names look like bots). */
int fr_feed_text_user(struct fr_buf *out, uint64_t seed, uint64_t index, int bot);
/* An emoji (sometimes a ZWJ or variation-selector sequence). */
int fr_feed_text_emoji(struct fr_buf *out, struct fr_feed_rng *rng);
/* MediaWiki's wfUrlencode of a title (spaces to underscores). */
int fr_feed_text_urlencode(struct fr_buf *out, const char *s, size_t len);
/* Optional link renderer for parse_comment: write the whole <a>…</a> for
 * [[target|label]] and return 1, or return 0 for the default rendering. */
struct fr_feed_links {
    int (*render)(void *ctx, struct fr_buf *out, const char *target, size_t tlen, const char *label,
                  size_t llen);
    void *ctx;
};
/* MediaWiki comment to parsedcomment: HTML escaping, [[links]], autocomments.
 * page is the event's title (for section links). A Wikibase autocomment
 * (wbsetclaim-create and the like) is shown as wb_text, followed by wb_sep
 * (default ": ") when text follows; wb_text NULL means a section link.
 * links may be NULL. */
int fr_feed_text_parse_comment(struct fr_buf *out, const char *comment, size_t len,
                               const char *page, const char *wb_text, const char *wb_sep,
                               const struct fr_feed_links *links);
/* HTML-escape s (& < > " ') for parsedcomment and log_action_comment. */
int fr_feed_text_html_escape(struct fr_buf *out, const char *s, size_t len);

/* ---- recorded files (files.c) ---------------------------------------- */

struct fr_feed_rec {
    int64_t off;   /* into text */
    int64_t ts_ms; /* monotone Kafka timestamp */
    uint32_t len;
    uint32_t id_off; /* meta.id within the record, id_len 0 when absent */
    uint8_t id_len;
    uint8_t canary;
};

struct fr_feed_files {
    struct fr_buf text;
    struct fr_feed_rec *recs;
    int64_t n;
};

int fr_feed_files_load(struct fr_feed_files *files, const char *const *paths, size_t npaths,
                       int64_t limit, int64_t fallback_ms, char *err, size_t errlen);
void fr_feed_files_free(struct fr_feed_files *files);

/* ---- fault plan (faults.c) ------------------------------------------- */

struct fr_feed_plan {
    enum fr_feed_fault fault;
    enum fr_feed_malformed malformed;
    int64_t arg;   /* DUP: source position; LATE/OOO/FUTURE: shift in ms */
    uint64_t salt; /* per-position randomness for the byte edit */
};

/* The plan for position pos (canaries are never faulted). */
void fr_feed_plan_at(const struct fr_feed_stream *stream, int64_t pos, struct fr_feed_plan *plan);
/* Apply plan to the event in payload[start..] (a JSON object). ts_ms is the
 * position's Kafka timestamp. Sets *applied to 0 when the event lacks what
 * the fault edits (then payload is unchanged). */
int fr_feed_fault_apply(const struct fr_feed_stream *stream, const struct fr_feed_plan *plan,
                        int64_t ts_ms, struct fr_buf *payload, size_t start, int *applied);
/* Whether the fault keeps a usable meta.id in the event. */
int fr_feed_fault_keeps_id(const struct fr_feed_plan *plan);

/* ---- stream and cursor (stream.c) ------------------------------------ */

struct fr_feed_stream {
    struct fr_feed_opts opts;
    int synthetic;
    struct fr_feed_gen gen;
    struct fr_feed_files files;
    int64_t count;
    /* cumulative fault probabilities: malformed, dup, late, ooo, future */
    double cut[5];
    enum fr_feed_malformed mal_kinds[FR_FEED_MAL_COUNT];
    int nmal_kinds;
};

struct fr_feed_cursor {
    const struct fr_feed_stream *stream;
    int64_t chunk; /* cached chunk of timestamps, -1 when none */
    int64_t chunk_ts[FR_FEED_CHUNK];
    struct fr_buf scratch; /* for info() on faulted positions */
};

/* ---- the API fixture (api.c) ----------------------------------------- */

struct MHD_Connection;
int fr_feed_api_new(const struct fr_feed_stream *stream, struct fr_feed_api **out);
void fr_feed_api_free(struct fr_feed_api *api);
/* Answer a request whose path starts with /api/ (returns an MHD result). */
int fr_feed_api_request(struct fr_feed_api *api, struct MHD_Connection *mc, const char *url);

int fr_feed_source_is_canary(const struct fr_feed_stream *stream, int64_t pos);

#endif
