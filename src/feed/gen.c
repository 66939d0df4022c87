/*
 * gen.c — the synthetic recentchange generator: event k is a pure function
 * of (seed, k) and its Kafka timestamp.
 *
 * Shape, calibrated on the recorded events (docs/FEED.md has the figures):
 * the type mix (edit 62.7 %, categorize 33.7 %, log 2.2 %, new 1.4 %), the
 * field set and key order of 2026 events per type (PROTOCOL.md §10.3), bot
 * share per type, user kinds (names, bots, temporary accounts, IPs, rare
 * redaction), namespace mix per project family, title and comment styles,
 * page-size and revision-gap distributions, and int64 ids growing with
 * time from the values observed per wiki.
 *
 * Sessions. Real streams are bursty: one bot files 300 pages into one
 * category, a QuickStatements batch edits 50 items. An event first draws its
 * type from the measured mix, then joins a session of that type in its long
 * block (GEN_LONG_BLOCK positions, probability GEN_LONG_P) or short block
 * (GEN_SHORT_BLOCK, GEN_SHORT_P), else it is a one-off. A session (user,
 * wiki, bot flag, interface language, theme) is derived from (seed, block,
 * slot); its theme fixes the comment template and title stems, the event
 * varies the rest. Categorize events of a session also fan out: those within
 * GEN_FANOUT positions share the member page, revision and request id, as
 * one edit's category changes do. The comment text is in gen_comment.c.
 *
 * Timestamps: see FR_FEED_CHUNK in feed_int.h.
 *
 * Thread-safe: no state beyond the const struct fr_feed_gen.
 */
#include "feed/gen_int.h"

#include "core/clock.h"
#include "core/err.h"

#include <stdio.h>
#include <string.h>

/* Sessions at two scales: long runs (a bot working for minutes) and short
 * bursts. Given its type, an event joins a long session with probability
 * GEN_LONG_P, a short one with GEN_SHORT_P, else it is a one-off. Each
 * block has a fixed set of session types, so the type mix stays exact. */
#define GEN_LONG_BLOCK 4096
#define GEN_SHORT_BLOCK 128
#define GEN_LONG_P 0.6
#define GEN_SHORT_P 0.25
static const int gen_long_types[] = {GEN_EDIT,       GEN_EDIT, GEN_EDIT, GEN_CATEGORIZE,
                                     GEN_CATEGORIZE, GEN_LOG,  GEN_NEW};
static const int gen_short_types[] = {GEN_EDIT, GEN_EDIT, GEN_CATEGORIZE, GEN_LOG};
#define GEN_FIELD_CAP (64 * 1024)

static const char *const gen_type_name[] = {"edit", "categorize", "log", "new"};

/* Measured on gokulportfolio (1,200 events, 2026-07). */
static const double gen_type_cut[] = {0.627, 0.964, 0.986, 1.0};
static const double gen_bot_p[] = {0.23, 0.035, 0.03, 0.45};

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if ((rc = (expr)) < 0) {                                                                   \
            goto cleanup;                                                                          \
        }                                                                                          \
    } while (0)

void fr_feed_uuid4(struct fr_feed_rng *rng, char out[37])
{
    uint64_t a = fr_feed_rng_next(rng), b = fr_feed_rng_next(rng);
    a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
    b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
    snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xFFFF), (unsigned)(a & 0xFFFF), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xFFFFFFFFFFFFULL));
}

void fr_feed_gen_init(struct fr_feed_gen *gen, uint64_t seed, int64_t start_ms, double event_rate,
                      double canary_rate, int64_t offset_base)
{
    gen->seed = seed;
    gen->start_us = start_ms * 1000;
    double gap = 1e6 / (event_rate > 0 ? event_rate : FR_FEED_REAL_RATE);
    gen->gap_us = gap < 1 ? 1 : (int64_t)(gap + 0.5);
    gen->canary_rate = canary_rate;
    gen->offset_base = offset_base;
}

int fr_feed_gen_is_canary(const struct fr_feed_gen *gen, int64_t pos)
{
    if (gen->canary_rate <= 0) {
        return 0;
    }
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, gen->seed, (uint64_t)pos, FR_FEED_SALT_CANARY);
    return fr_feed_rng_unit(&r) < gen->canary_rate;
}

void fr_feed_gen_meta_id(const struct fr_feed_gen *gen, int64_t pos, char out[37])
{
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, gen->seed, (uint64_t)pos, FR_FEED_SALT_ID);
    fr_feed_uuid4(&r, out);
}

/* ---- Kafka timestamps ------------------------------------------------ */

void fr_feed_gen_chunk_ts(const struct fr_feed_gen *gen, int64_t chunk, int64_t ts[FR_FEED_CHUNK])
{
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, gen->seed, (uint64_t)chunk, FR_FEED_SALT_CHUNK);
    double w[FR_FEED_CHUNK + 1], total = 0;
    for (int i = 0; i <= FR_FEED_CHUNK; i++) {
        /* About 2 % of neighbours share a millisecond outright (an edit and
         * its categorize events); the rest arrive as a Poisson process. */
        w[i] = fr_feed_rng_unit(&r) < 0.02 ? 0.0 : -log(1.0 - fr_feed_rng_unit(&r));
        total += w[i];
    }
    double span = (double)gen->gap_us * FR_FEED_CHUNK;
    int64_t base = gen->start_us + chunk * gen->gap_us * FR_FEED_CHUNK;
    double acc = 0;
    for (int i = 0; i < FR_FEED_CHUNK; i++) {
        /* Position i sits after the first i gaps; w[FR_FEED_CHUNK] keeps the
         * last position strictly inside the chunk. */
        int64_t us = base + (int64_t)(acc / total * span);
        int64_t ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
        ts[i] = i > 0 && ms < ts[i - 1] ? ts[i - 1] : ms;
        acc += w[i];
    }
}

int64_t fr_feed_gen_chunk_of(const struct fr_feed_gen *gen, int64_t ts_ms)
{
    int64_t span = gen->gap_us * FR_FEED_CHUNK;
    int64_t d = ts_ms * 1000 - gen->start_us;
    return d <= 0 ? 0 : d / span;
}

/* ---- one event ------------------------------------------------------- */

static void gen_session_make(const struct fr_feed_gen *gen, uint64_t a, uint64_t b, int type,
                             struct gen_session *s)
{
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, gen->seed, a, b);
    s->type = type;
    s->wiki = fr_feed_wiki_pick(&r, type == GEN_CATEGORIZE);
    s->bot = fr_feed_rng_unit(&r) < gen_bot_p[type];
    double k = fr_feed_rng_unit(&r);
    s->user_kind = s->bot ? 0 : k < 0.03 ? 1 : k < 0.036 ? 2 : k < 0.04 ? 3 : 0;
    s->user = s->bot ? fr_feed_rng_zipf(&r, 3000) : fr_feed_rng_zipf(&r, 300000);
    s->theme = fr_feed_rng_next(&r);
    /* Interface language: English for half the editors. */
    double u = fr_feed_rng_unit(&r);
    s->ui = u < 0.5 ? 0 : 1 + (int)fr_feed_rng_below(&r, (uint64_t)fr_feed_gen_ui_count() - 1);
}

/* Choose the event's type and session (see GEN_LONG_P). */
static void gen_session_pick(const struct fr_feed_gen *gen, int64_t pos, struct fr_feed_rng *r,
                             struct gen_session *s)
{
    double u = fr_feed_rng_unit(r);
    int type = 0;
    while (u >= gen_type_cut[type]) {
        type++;
    }
    const int *types[] = {gen_long_types, gen_short_types};
    const size_t ntypes[] = {sizeof gen_long_types / sizeof gen_long_types[0],
                             sizeof gen_short_types / sizeof gen_short_types[0]};
    const uint64_t block[] = {(uint64_t)pos / GEN_LONG_BLOCK, (uint64_t)pos / GEN_SHORT_BLOCK};
    double v = fr_feed_rng_unit(r);
    int scale = v < GEN_LONG_P ? 0 : v < GEN_LONG_P + GEN_SHORT_P ? 1 : -1;
    if (scale >= 0) {
        size_t match[8], n = 0;
        for (size_t i = 0; i < ntypes[scale]; i++) {
            if (types[scale][i] == type) {
                match[n++] = i;
            }
        }
        if (n) {
            size_t j = match[fr_feed_rng_below(r, n)];
            gen_session_make(gen, block[scale],
                             FR_FEED_SALT_SESSION * 64 + (uint64_t)scale * 16 + j, type, s);
            return;
        }
    }
    gen_session_make(gen, (uint64_t)pos, FR_FEED_SALT_EDIT, type, s);
}

static int64_t gen_per_s(const struct fr_feed_wiki *w)
{
    double share = (w->w_edit * 0.66 + w->w_cat * 0.34) / 100000.0;
    double v = FR_FEED_REAL_RATE * share;
    return v < 0.01 ? 1 : (int64_t)(v * 100);
}

/* rc_id and revision ids grow with event time from the wiki's base. */
static int64_t gen_grow(struct gen_ev *ev, int64_t base, double per_event)
{
    int64_t rate100 = gen_per_s(ev->wiki);
    double dt = (double)(ev->ts_ms - FR_FEED_REF_MS) / 1000.0;
    double v = (double)base + dt * (double)rate100 / 100.0 * per_event;
    v += (double)fr_feed_rng_below(&ev->r, (uint64_t)(rate100 / 100 + 2));
    return v < 1000 ? 1000 + (int64_t)fr_feed_rng_below(&ev->r, 1000) : (int64_t)v;
}

static int64_t gen_rc_base(const struct fr_feed_wiki *w)
{
    return w->rc_base ? w->rc_base : (int64_t)w->w_edit * 60000 + 500000;
}

static int64_t gen_rev_base(const struct fr_feed_wiki *w)
{
    return w->rev_base ? w->rev_base : gen_rc_base(w) * 55 / 100;
}

int fr_feed_gen_user_name(struct gen_ev *ev, struct fr_buf *out, int kind, uint64_t index, int bot)
{
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, ev->gen->seed, index, FR_FEED_SALT_USER + 7 + (uint64_t)kind);
    switch (kind) {
    case 1: {
        time_t secs = (time_t)(ev->ts_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        return fr_buf_printf(out, "~%d-%05d-%02d", tm.tm_year + 1900,
                             (int)fr_feed_rng_range(&r, 10000, 99999),
                             (int)fr_feed_rng_range(&r, 1, 99));
    }
    case 2:
        return fr_buf_printf(out, "%d.%d.%d.%d", (int)fr_feed_rng_range(&r, 2, 223),
                             (int)fr_feed_rng_below(&r, 256), (int)fr_feed_rng_below(&r, 256),
                             (int)fr_feed_rng_range(&r, 1, 254));
    case 3:
        return fr_buf_printf(
            out, "2A02:%X:%X:%X:%X:%X:%X:%X", (unsigned)fr_feed_rng_below(&r, 0xFFFF),
            (unsigned)fr_feed_rng_below(&r, 0xFFFF), (unsigned)fr_feed_rng_below(&r, 0xFFFF),
            (unsigned)fr_feed_rng_below(&r, 0xFFFF), (unsigned)fr_feed_rng_below(&r, 0xFFFF),
            (unsigned)fr_feed_rng_below(&r, 0xFFFF), (unsigned)fr_feed_rng_below(&r, 0xFFFF));
    default:
        return fr_feed_text_user(out, ev->gen->seed, index, bot);
    }
}

const char *fr_feed_gen_project(const struct gen_ev *ev)
{
    const char *db = ev->wiki->db;
    switch (ev->wiki->family) {
    case FR_FEED_WIKT:
        return strcmp(ev->wiki->code, "fr") == 0 ? "Wiktionnaire" : "Wiktionary";
    case FR_FEED_WS:
        return "Wikisource";
    case FR_FEED_WB:
        return "Wikibooks";
    case FR_FEED_WQ:
        return "Wikiquote";
    case FR_FEED_WV:
        return "Wikivoyage";
    case FR_FEED_WN:
        return "Wikinews";
    case FR_FEED_COMMONS:
        return "Commons";
    case FR_FEED_WIKIDATA:
        return "Wikidata";
    case FR_FEED_META:
        return strncmp(db, "meta", 4) == 0      ? "Meta"
               : strncmp(db, "species", 7) == 0 ? "Wikispecies"
               : strncmp(db, "incub", 5) == 0   ? "Incubator"
                                                : "Project";
    default:
        return ev->lang->project ? ev->lang->project : "Wikipedia";
    }
}

/* Wikisource page namespace: number and name differ per language. */
static int gen_ws_page_ns(const struct gen_ev *ev, const char **name)
{
    const char *c = ev->wiki->code;
    if (strcmp(c, "hi") == 0) {
        *name = "पृष्ठ";
        return 250;
    }
    if (strcmp(c, "pl") == 0) {
        *name = "Strona";
        return 100;
    }
    if (strcmp(c, "de") == 0) {
        *name = "Seite";
        return 102;
    }
    *name = "Page";
    return 104;
}

static const char *gen_ext(struct fr_feed_rng *r)
{
    static const char *const ext[] = {"jpg", "jpg", "jpg", "jpg", "jpg",  "jpg", "JPG",
                                      "jpg", "png", "svg", "pdf", "jpeg", "tif", "webm",
                                      "jpg", "JPG", "ogg", "png", "jpg",  "jpg"};
    return ext[fr_feed_rng_below(r, sizeof ext / sizeof ext[0])];
}

const struct fr_feed_wiki *fr_feed_gen_wiki_of(const char *code)
{
    for (size_t i = 0; i < fr_feed_nwikis; i++) {
        if (fr_feed_wikis[i].family == FR_FEED_WP && strcmp(fr_feed_wikis[i].code, code) == 0) {
            return &fr_feed_wikis[i];
        }
    }
    return &fr_feed_wikis[2]; /* enwiki */
}

const struct fr_feed_wiki *fr_feed_gen_any_wiki(struct fr_feed_rng *r)
{
    for (;;) {
        const struct fr_feed_wiki *w = &fr_feed_wikis[fr_feed_wiki_pick(r, 0)];
        if (w->family == FR_FEED_WP) {
            return w;
        }
    }
}

/* A Commons file name: camera names, numbered series, scanned books,
 * Lingua Libre recordings, titles in other scripts. */
static int gen_file_name(struct gen_ev *ev, struct fr_buf *out, struct fr_feed_rng *stem)
{
    const struct fr_feed_wiki *en = fr_feed_gen_wiki_of("en");
    struct fr_feed_rng *r = &ev->r;
    int rc = FR_OK;
    double u = fr_feed_rng_unit(stem);
    if (u < 0.12) { /* camera names */
        time_t secs = (time_t)(ev->ts_ms / 1000 - (int64_t)fr_feed_rng_below(r, 86400 * 900));
        struct tm tm;
        gmtime_r(&secs, &tm);
        static const char *const cam[] = {"IMG_%04d%02d%02d_%02d%02d%02d",
                                          "PXL_%04d%02d%02d_%02d%02d%02d",
                                          "%04d%02d%02d_%02d%02d%02d"};
        rc = fr_buf_printf(out, cam[fr_feed_rng_below(stem, 3)], tm.tm_year + 1900, tm.tm_mon + 1,
                           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ".%s", fr_feed_rng_unit(stem) < 0.7 ? "jpg" : "JPG");
        }
    } else if (u < 0.4) { /* numbered series with a session-wide stem */
        rc = fr_feed_text_phrase(out, en, stem);
        if (rc == FR_OK && fr_feed_rng_unit(stem) < 0.5) {
            rc = fr_buf_putc(out, ' ');
            if (rc == FR_OK) {
                rc = fr_feed_text_phrase(out, en, stem);
            }
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, " %d.%s", (int)fr_feed_rng_range(r, 1, 400), gen_ext(stem));
        }
    } else if (u < 0.58) { /* scanned newspaper or book page (DPLA, Internet Archive) */
        static const char *const month[] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
        static const char *const day[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                          "Friday", "Saturday", "Sunday"};
        rc = fr_feed_text_phrase(out, en, stem);
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, " (");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(out, en, stem, 1);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(
                out,
                ", %c%c.), Vol. %d, No. %d, Ed. 1 %s, %s %d, %d - DPLA - %016llx%016llx (page "
                "%d).jpg",
                'A' + (int)fr_feed_rng_below(stem, 26), 'a' + (int)fr_feed_rng_below(stem, 26),
                (int)fr_feed_rng_range(stem, 1, 40), (int)fr_feed_rng_range(r, 1, 52),
                day[fr_feed_rng_below(r, 7)], month[fr_feed_rng_below(r, 12)],
                (int)fr_feed_rng_range(r, 1, 28), (int)fr_feed_rng_range(stem, 1850, 1960),
                (unsigned long long)fr_feed_rng_next(r), (unsigned long long)fr_feed_rng_next(r),
                (int)fr_feed_rng_range(r, 1, 24));
        }
    } else if (u < 0.65) { /* Lingua Libre recordings */
        const struct fr_feed_wiki *w = fr_feed_gen_any_wiki(stem);
        rc = fr_buf_printf(out, "LL-Q%d (%s)-", (int)fr_feed_rng_range(stem, 150, 40000), w->code);
        if (rc == FR_OK) {
            rc = fr_feed_text_user(out, ev->gen->seed, fr_feed_rng_zipf(stem, 5000), 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_putc(out, '-');
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_word(out, w, r, 0);
        }
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, ".wav");
        }
    } else if (u < 0.75) { /* photo-agency codes: "GDP-ISAF 140210-M-XI134-533.jpg" */
        rc = fr_buf_printf(
            out, "%c%c%c-%c%c%c%c %02d%02d%02d-%c-%c%c%03d-%03d.jpg",
            'A' + (int)fr_feed_rng_below(stem, 26), 'A' + (int)fr_feed_rng_below(stem, 26),
            'A' + (int)fr_feed_rng_below(stem, 26), 'A' + (int)fr_feed_rng_below(stem, 26),
            'A' + (int)fr_feed_rng_below(stem, 26), 'A' + (int)fr_feed_rng_below(stem, 26),
            'A' + (int)fr_feed_rng_below(stem, 26), (int)fr_feed_rng_range(stem, 0, 25),
            (int)fr_feed_rng_range(stem, 1, 12), (int)fr_feed_rng_range(stem, 1, 28),
            'A' + (int)fr_feed_rng_below(stem, 26), 'A' + (int)fr_feed_rng_below(stem, 26),
            'A' + (int)fr_feed_rng_below(stem, 26), (int)fr_feed_rng_below(stem, 1000),
            (int)fr_feed_rng_below(r, 1000));
    } else if (u < 0.87) { /* a title in another language */
        const struct fr_feed_wiki *w = fr_feed_gen_any_wiki(stem);
        rc = fr_feed_text_phrase(out, w, r);
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ".%s", gen_ext(r));
        }
    } else { /* Place, subject year */
        rc = fr_feed_text_phrase(out, en, r);
        if (rc == FR_OK) {
            rc = fr_buf_puts(out, ", ");
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(out, en, stem);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, " %d.%s", (int)fr_feed_rng_range(r, 1860, 2026), gen_ext(r));
        }
    }
    return rc;
}

int fr_feed_gen_prefix(struct fr_buf *out, const char *name)
{
    int rc = fr_buf_puts(out, name);
    return rc == FR_OK ? fr_buf_putc(out, ':') : rc;
}

/* Page title in namespace ns. stem varies per session (theme) or per event. */
static int gen_page(struct gen_ev *ev, struct fr_buf *out, int ns, struct fr_feed_rng *stem)
{
    const struct fr_feed_lang *lang = ev->lang;
    struct fr_feed_rng *r = &ev->r;
    static const struct fr_feed_wiki en = {.code = "en", .script = FR_FEED_LATIN};
    const struct fr_feed_wiki *w = ev->wiki;
    const struct fr_feed_wiki *text =
        w->family == FR_FEED_COMMONS || w->family == FR_FEED_WIKIDATA || w->family == FR_FEED_META
            ? &en
            : w;
    int rc = FR_OK;
    switch (ns) {
    case 0:
        if (w->family == FR_FEED_WIKIDATA) {
            return fr_buf_printf(out, "Q%lld",
                                 (long long)(ev->s.type == GEN_NEW
                                                 ? fr_feed_rng_range(r, 135000000, 136500000)
                                                 : fr_feed_rng_range(r, 1, 134000000)));
        }
        if (w->family == FR_FEED_WIKT) {
            return fr_feed_text_word(out, fr_feed_rng_unit(r) < 0.7 ? w : fr_feed_gen_any_wiki(r),
                                     r, 0);
        }
        if (w->family == FR_FEED_WS && fr_feed_rng_unit(r) < 0.5) {
            rc = fr_feed_text_phrase(out, text, stem);
            return rc == FR_OK ? fr_buf_printf(out, "/%d", (int)fr_feed_rng_range(r, 1, 60)) : rc;
        }
        return fr_feed_text_phrase(out, text, r);
    case 1:
        rc = fr_feed_gen_prefix(out, lang->talk);
        break;
    case 2:
    case 3:
        rc = fr_feed_gen_prefix(out, ns == 2 ? lang->user : lang->user_talk);
        if (rc == FR_OK) {
            rc = fr_feed_text_user(out, ev->gen->seed, fr_feed_rng_zipf(r, 300000), 0);
        }
        if (rc == FR_OK && ns == 2 && fr_feed_rng_unit(r) < 0.35) {
            rc = fr_buf_putc(out, '/');
            if (rc == FR_OK) {
                rc = fr_feed_text_phrase(out, text, r);
            }
        }
        return rc;
    case 4:
        rc = fr_feed_gen_prefix(out, fr_feed_gen_project(ev));
        break;
    case 6:
        rc = fr_feed_gen_prefix(out, lang->file);
        return rc == FR_OK ? gen_file_name(ev, out, stem) : rc;
    case 10:
        rc = fr_feed_gen_prefix(out, lang->tmpl);
        break;
    case 12:
        rc = fr_feed_gen_prefix(out, lang->help);
        break;
    case 14:
        rc = fr_feed_gen_prefix(out, lang->category);
        break;
    case 118:
        rc = fr_feed_gen_prefix(out, "Draft");
        break;
    case 120:
        return fr_buf_printf(out, "Property:P%d", (int)fr_feed_rng_range(r, 1, 13500));
    case 146:
        return fr_buf_printf(out, "Lexeme:L%d", (int)fr_feed_rng_range(r, 1, 1600000));
    case 640:
        return fr_buf_printf(out, "EntitySchema:E%d", (int)fr_feed_rng_range(r, 1, 500));
    case 828:
        rc = fr_feed_gen_prefix(out, "Module");
        break;
    default: {
        const char *name;
        int page_ns = gen_ws_page_ns(ev, &name);
        rc = fr_feed_gen_prefix(out, ns == page_ns + 2 ? "Index" : name);
        if (rc == FR_OK) {
            rc = fr_feed_text_phrase(out, text, stem);
        }
        if (rc == FR_OK) {
            rc = fr_buf_printf(out, ".%s", fr_feed_rng_unit(stem) < 0.6 ? "pdf" : "djvu");
        }
        if (rc == FR_OK && ns == page_ns) {
            rc = fr_buf_printf(out, "/%d", (int)fr_feed_rng_range(r, 1, 480));
        }
        return rc;
    }
    }
    if (rc == FR_OK) {
        rc = fr_feed_text_phrase(out, text, ns == 14 ? stem : r);
    }
    return rc;
}

static int gen_pick_ns(struct gen_ev *ev)
{
    struct fr_feed_rng *r = &ev->r;
    double u = fr_feed_rng_unit(r);
    int newp = ev->s.type == GEN_NEW;
    switch (ev->wiki->family) {
    case FR_FEED_WIKIDATA:
        return u < 0.94    ? 0
               : u < 0.965 ? 146
               : u < 0.97  ? 120
               : u < 0.98  ? 4
               : u < 0.99  ? 2
               : u < 0.995 ? 3
                           : 640;
    case FR_FEED_COMMONS:
        if (newp) {
            return u < 0.6 ? 14 : u < 0.8 ? 2 : 3;
        }
        return u < 0.88 ? 6 : u < 0.94 ? 14 : u < 0.965 ? 2 : u < 0.98 ? 4 : u < 0.99 ? 3 : 10;
    case FR_FEED_WIKT:
        return u < 0.92 ? 0 : u < 0.96 ? 2 : u < 0.98 ? 3 : 4;
    case FR_FEED_WS: {
        const char *name;
        int page = gen_ws_page_ns(ev, &name);
        return u < (newp ? 0.8 : 0.6) ? page : u < 0.9 ? 0 : u < 0.95 ? page + 2 : 2;
    }
    case FR_FEED_META:
        return u < 0.4 ? 0 : u < 0.6 ? 2 : u < 0.8 ? 4 : u < 0.9 ? 1 : 3;
    default:
        if (newp) {
            return u < 0.4                                          ? 0
                   : u < 0.6                                        ? 2
                   : u < 0.7                                        ? 1
                   : u < 0.85                                       ? 3
                   : u < 0.9 && strcmp(ev->wiki->db, "enwiki") == 0 ? 118
                                                                    : 14;
        }
        return u < 0.66   ? 0
               : u < 0.71 ? 1
               : u < 0.79 ? 2
               : u < 0.86 ? 3
               : u < 0.91 ? 4
               : u < 0.95 ? 10
               : u < 0.98 ? 14
               : u < 0.99 ? 828
                          : 12;
    }
}

int fr_feed_gen_category_name(struct gen_ev *ev, struct fr_buf *out, struct fr_feed_rng *r)
{
    int commons = ev->wiki->family == FR_FEED_COMMONS;
    const struct fr_feed_wiki *w = commons ? fr_feed_gen_wiki_of("en") : ev->wiki;
    int rc = fr_feed_text_phrase(out, w, r);
    if (rc == FR_OK && fr_feed_rng_unit(r) < (commons ? 0.5 : 0.3)) {
        static const char *const joins[] = {" in ", " of ", " by ", " from ", " named after "};
        if (commons || w->script == FR_FEED_LATIN) {
            rc = fr_buf_puts(out, joins[fr_feed_rng_below(r, 5)]);
        } else {
            rc = fr_feed_text_spaced(w->script) ? fr_buf_putc(out, ' ') : FR_OK;
        }
        if (rc == FR_OK) {
            rc = fr_feed_text_words(out, w, r, 1 + (int)fr_feed_rng_below(r, 2), 1);
        }
    }
    return rc;
}

static double gen_laplace(struct fr_feed_rng *r, double scale)
{
    double u = fr_feed_rng_unit(r) - 0.5;
    return (u < 0 ? 1 : -1) * scale * log(1 - 2 * fabs(u));
}

static int gen_edit_like(struct gen_ev *ev)
{
    struct fr_feed_rng *r = &ev->r;
    const struct fr_feed_wiki *w = ev->wiki;
    int rc;
    ev->ns = gen_pick_ns(ev);
    rc = gen_page(ev, &ev->title, ev->ns, &ev->th);
    if (rc < 0) {
        return rc;
    }
    ev->rev_new = gen_grow(ev, gen_rev_base(w), 0.7);
    rc = fr_feed_gen_comment(ev, &ev->comment);
    if (rc < 0) {
        return rc;
    }
    if (ev->s.type == GEN_NEW) {
        ev->len_new =
            (int64_t)fr_feed_rng_lognormal(r, w->family == FR_FEED_WIKIDATA ? 1200 : 900, 1.3);
        ev->minor = 0;
        ev->has_patrolled = (w->patrol & 2) != 0;
    } else {
        double median = w->family == FR_FEED_WIKIDATA  ? 9000
                        : w->family == FR_FEED_COMMONS ? 5000
                        : w->family == FR_FEED_WIKT    ? 3000
                        : w->family == FR_FEED_WS      ? 2500
                                                       : 12000;
        ev->len_old = (int64_t)fr_feed_rng_lognormal(r, median, 1.1) + 20;
        double u = fr_feed_rng_unit(r);
        double d = gen_laplace(r, u < 0.6 ? 40 : u < 0.9 ? 600 : 8000);
        ev->len_new = ev->len_old + (int64_t)d;
        if (ev->len_new < 0) {
            ev->len_new = 0;
        }
        u = fr_feed_rng_unit(r);
        int64_t gap = u < 0.35   ? fr_feed_rng_range(r, 1, 200)
                      : u < 0.55 ? fr_feed_rng_range(r, 200, 50000)
                      : u < 0.8  ? fr_feed_rng_range(r, 50000, 30000000)
                                 : fr_feed_rng_range(r, 30000000, ev->rev_new * 8 / 10 + 30000001);
        ev->rev_old = ev->rev_new - gap > 1 ? ev->rev_new - gap : 1;
        ev->minor = fr_feed_rng_unit(r) < (ev->s.bot ? 0.3 : 0.08);
        ev->has_patrolled = (w->patrol & 1) != 0;
    }
    ev->patrolled = ev->s.bot || fr_feed_rng_unit(r) < 0.75;
    return FR_OK;
}

/* Categorize events fan out: one edit or upload files its page into many
 * categories, so consecutive events of a session within GEN_FANOUT
 * positions share the member page, its revision and the request id. */
#define GEN_FANOUT 64

static int gen_categorize(struct gen_ev *ev)
{
    int rc;
    ev->ns = 14;
    ev->req_key = fr_feed_mix64(ev->s.theme ^ (uint64_t)(ev->pos / GEN_FANOUT)) | 1;
    struct fr_feed_rng own = ev->r;
    fr_feed_rng_seed(&ev->r, ev->gen->seed, ev->req_key, FR_FEED_SALT_EDIT);
    struct fr_feed_rng *r = &ev->r; /* the request's: same for the whole fan-out */
    /* The member page: a file on Commons, an article elsewhere. */
    int member_ns = ev->wiki->family == FR_FEED_COMMONS ? (fr_feed_rng_unit(r) < 0.92 ? 6 : 14)
                    : ev->wiki->family == FR_FEED_WS    ? 104
                                                        : (fr_feed_rng_unit(r) < 0.8 ? 0 : 2);
    if (member_ns == 104) {
        const char *name;
        member_ns = gen_ws_page_ns(ev, &name);
    }
    rc = gen_page(ev, &ev->tmp, member_ns, &ev->th);
    int removed = fr_feed_rng_unit(r) < 0.25;
    int wlh = fr_feed_rng_unit(r) < 0.1;
    ev->rev_new = gen_grow(ev, gen_rev_base(ev->wiki), 0.7);
    ev->rev_old =
        fr_feed_rng_unit(r) < 0.1 ? 0 : ev->rev_new - (int64_t)fr_feed_rng_below(r, 40000000);
    if (ev->rev_old < 0) {
        ev->rev_old = 0;
    }
    ev->r = own; /* the category is this event's own */
    r = &ev->r;
    if (rc == FR_OK) {
        rc = fr_feed_gen_prefix(&ev->title, ev->lang->category);
    }
    if (rc == FR_OK) {
        /* A session files pages into a handful of categories. */
        struct fr_feed_rng cat;
        fr_feed_rng_seed(&cat, ev->gen->seed, ev->s.theme, fr_feed_rng_below(r, 8));
        rc = fr_feed_gen_category_name(ev, &ev->title, fr_feed_rng_unit(r) < 0.8 ? &cat : r);
    }
    const char *fmt = removed ? ev->lang->cat_removed : ev->lang->cat_added;
    const char *page = fr_buf_cstr(&ev->tmp);
    if (rc == FR_OK) {
        rc = fr_buf_printf(&ev->comment, fmt, page);
    }
    if (rc == FR_OK && !removed && wlh && strcmp(ev->wiki->code, "en") == 0) {
        rc = fr_buf_printf(
            &ev->comment, ", [[Special:WhatLinksHere/%s|this page is included within other pages]]",
            page);
    }
    return rc;
}

static int gen_log(struct gen_ev *ev)
{
    struct fr_feed_rng *r = &ev->r;
    const struct fr_feed_wiki *w = ev->wiki;
    int rc = FR_OK;
    double u = fr_feed_rng_unit(&ev->th);
    enum { UPLOAD, ABUSE, PATROL, MOVE, NEWUSER, DELETE, BLOCK, PROTECT, REVIEW, MERGE } kind;
    if (w->family == FR_FEED_COMMONS) {
        kind = u < 0.45   ? UPLOAD
               : u < 0.8  ? ABUSE
               : u < 0.85 ? DELETE
               : u < 0.88 ? MOVE
               : u < 0.93 ? NEWUSER
               : u < 0.95 ? BLOCK
               : u < 0.96 ? PROTECT
                          : PATROL;
    } else if (w->family == FR_FEED_WIKIDATA) {
        kind = u < 0.4    ? ABUSE
               : u < 0.55 ? NEWUSER
               : u < 0.7  ? DELETE
               : u < 0.85 ? PATROL
               : u < 0.9  ? BLOCK
               : u < 0.93 ? MOVE
               : u < 0.95 ? PROTECT
                          : MERGE;
    } else {
        kind = u < 0.25   ? ABUSE
               : u < 0.45 ? PATROL
               : u < 0.6  ? NEWUSER
               : u < 0.7  ? MOVE
               : u < 0.8  ? DELETE
               : u < 0.87 ? BLOCK
               : u < 0.9  ? PROTECT
               : u < 0.93 ? UPLOAD
                          : REVIEW;
        if (kind == REVIEW && strcmp(w->code, "de") != 0) {
            kind = PATROL;
        }
    }
    int64_t log_base = gen_rc_base(w) / 8;
    ev->log_id = gen_grow(ev, log_base, 0.1);
    ev->has_rc = !(kind == ABUSE || kind == PATROL);
    struct fr_buf *t = &ev->title, *c = &ev->comment, *p = &ev->params, *a = &ev->lac;
    const char *title;
    char expiry[32];
    fr_time_format_ms((ev->ts_ms + 7 * 86400000) * 1000, expiry);
    switch (kind) {
    case UPLOAD: {
        ev->log_type = "upload";
        ev->log_action = "upload";
        ev->ns = 6;
        TRY(gen_page(ev, t, 6, &ev->th));
        double v = fr_feed_rng_unit(&ev->th);
        if (v < 0.5) {
            TRY(fr_buf_puts(c, "Uploaded own work with UploadWizard"));
        } else if (v < 0.65) {
            TRY(fr_buf_puts(c, "Upload with placejpg"));
        } else if (v < 0.8) {
            TRY(fr_buf_puts(c, "IA Query \"collection:"));
            TRY(fr_feed_text_word(c, &fr_feed_wikis[2], &ev->th, 0));
            TRY(fr_buf_puts(c, " AND mediatype:texts AND date:[* TO 1900]\" "));
            TRY(fr_feed_text_word(c, &fr_feed_wikis[2], r, 0));
        } else {
            /* Upload summaries carry whole description pages: a long tail
             * (the sample's largest event is a 34 kB upload). */
            double words = fr_feed_rng_lognormal(r, 25, 1.3);
            TRY(fr_buf_puts(c, "{{Information\n|description={{en|1="));
            TRY(fr_feed_text_words(c, &fr_feed_wikis[2], r, words > 2000 ? 2000 : (int)words + 3,
                                   1));
            TRY(fr_buf_puts(c, "}}\n|source={{own}}\n|author=[[User:"));
            TRY(fr_feed_gen_user_name(ev, c, 0, ev->s.user, 0));
            TRY(fr_buf_puts(c, "]]\n}}"));
        }
        char sha[32];
        for (int i = 0; i < 31; i++) {
            sha[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[fr_feed_rng_below(r, 36)];
        }
        sha[31] = 0;
        time_t secs = (time_t)(ev->ts_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        TRY(fr_buf_printf(p, "{\"img_sha1\":\"%s\",\"img_timestamp\":\"%04d%02d%02d%02d%02d%02d\"}",
                          sha, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                          tm.tm_sec));
        TRY(fr_buf_puts(a, "uploaded &quot;[["));
        TRY(fr_buf_append(a, t->data, t->len));
        TRY(fr_buf_puts(a, "]]&quot;: "));
        TRY(fr_feed_text_html_escape(a, (const char *)c->data, c->len));
        break;
    }
    case ABUSE: {
        ev->log_type = "abusefilter";
        ev->log_action = "hit";
        ev->log_id = 0;
        ev->ns = w->family == FR_FEED_COMMONS ? 6 : gen_pick_ns(ev);
        TRY(gen_page(ev, t, ev->ns, r));
        int filter = (int)fr_feed_rng_zipf(&ev->th, 400) + 1;
        static const char *const acts[] = {"", "", "tag", "warn", "disallow", "warn,tag"};
        const char *act = acts[fr_feed_rng_below(&ev->th, 6)];
        const char *action = w->family == FR_FEED_COMMONS ? "upload" : "edit";
        int64_t logno = gen_grow(ev, gen_rc_base(w) / 200, 0.02);
        TRY(fr_buf_printf(p,
                          "{\"action\":\"%s\",\"filter\":\"%d\",\"actions\":\"%s\",\"log\":%lld}",
                          action, filter, act, (long long)logno));
        TRY(fr_feed_gen_user_name(ev, &ev->tmp, ev->s.user_kind, ev->s.user, ev->s.bot));
        title = fr_buf_cstr(t);
        if (strcmp(w->code, "zh") == 0) {
            TRY(fr_buf_printf(a,
                              "%s在[[%s]]执行操作“%s”时触发了[[Special:AbuseFilter/%d|过滤器%d]]。"
                              "采取的行动：%s（[[Special:AbuseLog/%lld|详情]]）",
                              fr_buf_cstr(&ev->tmp), title, action, filter, filter,
                              *act ? act : "无", (long long)logno));
        } else {
            TRY(fr_buf_printf(
                a,
                "%s triggered [[Special:AbuseFilter/%d|filter %d]], performing the "
                "action \"%s\" on [[%s]]. Actions taken: %s ([[Special:AbuseLog/%lld|details]])",
                fr_buf_cstr(&ev->tmp), filter, filter, action, title, *act ? act : "none",
                (long long)logno));
        }
        break;
    }
    case PATROL: {
        ev->log_type = "patrol";
        ev->log_action = "patrol";
        ev->ns = gen_pick_ns(ev);
        TRY(gen_page(ev, t, ev->ns, r));
        long long cur =
            (long long)gen_grow(ev, gen_rev_base(w), 0.7) - (long long)fr_feed_rng_below(r, 5000);
        long long prev =
            fr_feed_rng_unit(r) < 0.3 ? 0 : cur - (long long)fr_feed_rng_range(r, 1, 900000);
        TRY(fr_buf_printf(p, "{\"curid\":\"%lld\",\"previd\":\"%lld\",\"auto\":0}", cur, prev));
        TRY(fr_buf_printf(a, "marked revision %lld of [[%s]] patrolled ", cur, fr_buf_cstr(t)));
        break;
    }
    case MOVE: {
        ev->log_type = "move";
        ev->log_action = "move";
        ev->ns = gen_pick_ns(ev);
        TRY(gen_page(ev, t, ev->ns, r));
        TRY(gen_page(ev, &ev->tmp, fr_feed_rng_unit(r) < 0.5 ? ev->ns : 2, r));
        TRY(fr_feed_text_words(c, w, r, (int)fr_feed_rng_range(r, 0, 9), 1));
        TRY(fr_buf_puts(p, "{\"target\":"));
        TRY(fr_buf_json_str(p, (const char *)ev->tmp.data, ev->tmp.len));
        TRY(fr_buf_puts(p, ",\"noredir\":\"0\"}"));
        TRY(fr_buf_printf(a, "moved [[%s]] to [[%s]]", fr_buf_cstr(t), fr_buf_cstr(&ev->tmp)));
        if (c->len) {
            TRY(fr_buf_puts(a, ": "));
            TRY(fr_buf_append(a, c->data, c->len));
        }
        break;
    }
    case NEWUSER: {
        int autoc = fr_feed_rng_unit(r) < 0.6;
        ev->log_type = "newusers";
        ev->log_action = autoc ? "autocreate" : "create";
        ev->ns = 2;
        ev->s.user_kind = 0;
        ev->s.bot = 0;
        ev->s.user = fr_feed_rng_range(r, 300000, 90000000);
        TRY(fr_feed_gen_prefix(t, ev->lang->user));
        TRY(fr_feed_gen_user_name(ev, t, 0, ev->s.user, 0));
        TRY(fr_buf_printf(p, "{\"userid\":\"%lld\"}",
                          (long long)gen_grow(ev, gen_rc_base(w) / 60, 0.01)));
        if (autoc) {
            TRY(fr_buf_puts(a, "User account [["));
            TRY(fr_buf_append(a, t->data, t->len));
            TRY(fr_buf_puts(a, "]] was created automatically"));
        } else {
            TRY(fr_buf_puts(a, "New user account"));
        }
        break;
    }
    case DELETE: {
        ev->log_type = "delete";
        ev->log_action = "delete";
        ev->ns = gen_pick_ns(ev);
        TRY(gen_page(ev, t, ev->ns, r));
        static const char *const why[] = {
            "[[WP:CSD#G11|G11]]: Unambiguous advertising or promotion",
            "[[WP:CSD#A7|A7]]: No credible indication of importance",
            "Copyright violation: [[Commons:Licensing|no permission]]",
            "Housekeeping",
            "Duplicate",
            "Vandalism",
            "[[WP:G7|G7]]: Author requested deletion"};
        TRY(fr_buf_puts(c, why[fr_feed_rng_below(r, sizeof why / sizeof why[0])]));
        TRY(fr_buf_puts(p, "[]"));
        TRY(fr_buf_puts(a, "deleted &quot;[["));
        TRY(fr_buf_append(a, t->data, t->len));
        TRY(fr_buf_puts(a, "]]&quot;: "));
        TRY(fr_feed_text_html_escape(a, (const char *)c->data, c->len));
        break;
    }
    case BLOCK: {
        ev->log_type = "block";
        ev->log_action = "block";
        ev->ns = 2;
        TRY(fr_feed_gen_user_name(ev, &ev->tmp, fr_feed_rng_unit(r) < 0.5 ? 1 : 0,
                                  fr_feed_rng_zipf(r, 300000), 0));
        TRY(fr_feed_gen_prefix(t, ev->lang->user));
        TRY(fr_buf_append(t, ev->tmp.data, ev->tmp.len));
        static const char *const dur[] = {"1 week", "31 hours", "infinite", "3 months", "1 day"};
        const char *d = dur[fr_feed_rng_below(r, 5)];
        TRY(fr_buf_puts(c, fr_feed_rng_unit(r) < 0.5 ? "[[WP:Vandalism|Vandalism]]"
                                                     : "Spam / advertising-only account"));
        TRY(fr_buf_printf(p, "{\"duration\":\"%s\",\"flags\":\"nocreate\",\"sitewide\":true}", d));
        TRY(fr_buf_printf(
            a, "blocked [[%s|%s]] with an expiration time of %s (account creation disabled): ",
            fr_buf_cstr(t), fr_buf_cstr(&ev->tmp), d));
        TRY(fr_buf_append(a, c->data, c->len));
        break;
    }
    case PROTECT: {
        ev->log_type = "protect";
        ev->log_action = "protect";
        ev->ns = gen_pick_ns(ev);
        TRY(gen_page(ev, t, ev->ns, r));
        TRY(fr_buf_puts(c, "Persistent [[WP:Vandalism|vandalism]]"));
        TRY(fr_buf_printf(
            p,
            "{\"description\":\"[edit=autoconfirmed] (expires %s)\",\"cascade\":false,"
            "\"details\":[{\"type\":\"edit\",\"level\":\"autoconfirmed\",\"expiry\":\"%s\","
            "\"cascade\":false}]}",
            expiry, expiry));
        TRY(fr_buf_puts(a, "protected &quot;[["));
        TRY(fr_buf_append(a, t->data, t->len));
        TRY(fr_buf_printf(a,
                          "]] [Edit=Allow only autoconfirmed users] (expires %s)&quot;: ", expiry));
        TRY(fr_buf_append(a, c->data, c->len));
        break;
    }
    case REVIEW: {
        ev->log_type = "review";
        ev->log_action = "approve-a";
        ev->ns = 0;
        TRY(gen_page(ev, t, 0, r));
        long long rev = (long long)gen_grow(ev, gen_rev_base(w), 0.7);
        TRY(fr_buf_printf(p, "[\"%lld\",\"%lld\",\"%04d%02d%02d%02d%02d%02d\"]", rev,
                          rev - (long long)fr_feed_rng_range(r, 1, 100000), 2026, 7, 10, 16, 5,
                          (int)fr_feed_rng_below(r, 60)));
        TRY(fr_buf_printf(a, "hat eine Version von „[[%s]]“ automatisch markiert", fr_buf_cstr(t)));
        break;
    }
    case MERGE: {
        ev->log_type = "merge";
        ev->log_action = "merge";
        ev->ns = 0;
        TRY(gen_page(ev, t, 0, r));
        TRY(gen_page(ev, &ev->tmp, 0, r));
        TRY(fr_buf_printf(p, "[\"%s\",\"%lld\"]", fr_buf_cstr(&ev->tmp),
                          (long long)gen_grow(ev, gen_rev_base(w), 0.7)));
        TRY(fr_buf_printf(a, "merged [[%s]] into [[%s]]", fr_buf_cstr(t), fr_buf_cstr(&ev->tmp)));
        break;
    }
    }
cleanup:
    return rc;
}

/* ---- JSON ------------------------------------------------------------ */

static int gen_key_str(struct fr_buf *out, const char *key, const void *s, size_t len)
{
    int rc = fr_buf_printf(out, ",\"%s\":", key);
    return rc == FR_OK ? fr_buf_json_str(out, s, len) : rc;
}

static int gen_url(struct fr_buf *out, const struct gen_ev *ev)
{
    int rc = fr_buf_printf(out, "https://%s/wiki/", ev->wiki->host);
    return rc == FR_OK ? fr_feed_text_urlencode(out, (const char *)ev->title.data, ev->title.len)
                       : rc;
}

static int gen_canary(const struct fr_feed_gen *gen, int64_t pos, int64_t ts_ms, struct fr_buf *out)
{
    char dt[32], id[37], req[37];
    fr_time_format_ms(ts_ms * 1000, dt);
    fr_feed_gen_meta_id(gen, pos, id);
    struct fr_feed_rng r;
    fr_feed_rng_seed(&r, gen->seed, (uint64_t)pos, FR_FEED_SALT_EVENT);
    fr_feed_uuid4(&r, req);
    return fr_buf_printf(
        out,
        "{\"$schema\":\"/mediawiki/recentchange/1.0.1\",\"meta\":{\"dt\":\"%s\","
        "\"stream\":\"mediawiki.recentchange\",\"domain\":\"canary\",\"id\":\"%s\","
        "\"request_id\":\"%s\",\"topic\":\"" FR_FEED_TOPIC "\",\"partition\":0,"
        "\"offset\":%lld}}",
        dt, id, req, (long long)(gen->offset_base + pos));
}

static int gen_write(struct gen_ev *ev, struct fr_buf *out)
{
    int rc;
    char dt[32], id[37], req[37];
    fr_time_format_ms(ev->ts_ms * 1000, dt);
    fr_feed_gen_meta_id(ev->gen, ev->pos, id);
    if (ev->req_key) {
        struct fr_feed_rng rr;
        fr_feed_rng_seed(&rr, ev->gen->seed, ev->req_key, FR_FEED_SALT_ID);
        fr_feed_uuid4(&rr, req);
    } else {
        fr_feed_uuid4(&ev->r, req);
    }
    const struct fr_feed_wiki *w = ev->wiki;
    const char *server = w->host;
    TRY(fr_buf_puts(out, "{\"$schema\":\"/mediawiki/recentchange/1.0.0\",\"meta\":{\"uri\":\""));
    TRY(gen_url(out, ev));
    TRY(fr_buf_printf(
        out,
        "\",\"request_id\":\"%s\",\"id\":\"%s\",\"domain\":\"%s\","
        "\"stream\":\"mediawiki.recentchange\",\"dt\":\"%s\",\"topic\":\"" FR_FEED_TOPIC
        "\",\"partition\":0,\"offset\":%lld}",
        req, id, server, dt, (long long)(ev->gen->offset_base + ev->pos)));
    if (ev->has_rc) {
        TRY(fr_buf_printf(out, ",\"id\":%lld", (long long)ev->rc_id));
    }
    TRY(fr_buf_printf(out, ",\"type\":\"%s\",\"namespace\":%d", gen_type_name[ev->s.type], ev->ns));
    TRY(gen_key_str(out, "title", ev->title.data, ev->title.len));
    TRY(fr_buf_puts(out, ",\"title_url\":\""));
    TRY(gen_url(out, ev));
    TRY(fr_buf_putc(out, '"'));
    TRY(gen_key_str(out, "comment", ev->comment.data, ev->comment.len));
    TRY(fr_buf_printf(out, ",\"timestamp\":%lld", (long long)ev->timestamp_s));
    if (ev->has_user) {
        TRY(gen_key_str(out, "user", ev->user.data, ev->user.len));
    }
    TRY(fr_buf_printf(out, ",\"bot\":%s", ev->s.bot ? "true" : "false"));
    int patrol_link = ev->has_patrolled;
    switch (ev->s.type) {
    case GEN_EDIT:
        TRY(fr_buf_printf(out, ",\"notify_url\":\"https://%s/w/index.php?diff=%lld&oldid=%lld",
                          server, (long long)ev->rev_new, (long long)ev->rev_old));
        if (patrol_link) {
            TRY(fr_buf_printf(out, "&rcid=%lld", (long long)ev->rc_id));
        }
        TRY(fr_buf_printf(out, "\",\"minor\":%s", ev->minor ? "true" : "false"));
        if (ev->has_patrolled) {
            TRY(fr_buf_printf(out, ",\"patrolled\":%s", ev->patrolled ? "true" : "false"));
        }
        TRY(fr_buf_printf(
            out, ",\"length\":{\"old\":%lld,\"new\":%lld},\"revision\":{\"old\":%lld,\"new\":%lld}",
            (long long)ev->len_old, (long long)ev->len_new, (long long)ev->rev_old,
            (long long)ev->rev_new));
        break;
    case GEN_NEW:
        TRY(fr_buf_printf(out, ",\"notify_url\":\"https://%s/w/index.php?oldid=%lld", server,
                          (long long)ev->rev_new));
        if (patrol_link) {
            TRY(fr_buf_printf(out, "&rcid=%lld", (long long)ev->rc_id));
        }
        TRY(fr_buf_puts(out, "\",\"minor\":false"));
        if (ev->has_patrolled) {
            TRY(fr_buf_printf(out, ",\"patrolled\":%s", ev->patrolled ? "true" : "false"));
        }
        TRY(fr_buf_printf(out, ",\"length\":{\"new\":%lld},\"revision\":{\"new\":%lld}",
                          (long long)ev->len_new, (long long)ev->rev_new));
        break;
    case GEN_CATEGORIZE:
        TRY(fr_buf_printf(out, ",\"notify_url\":\"https://%s/w/index.php?diff=%lld&oldid=%lld",
                          server, (long long)ev->rev_new, (long long)ev->rev_old));
        if (w->patrol & 1) {
            TRY(fr_buf_printf(out, "&rcid=%lld", (long long)ev->rc_id));
        }
        TRY(fr_buf_putc(out, '"'));
        break;
    default:
        TRY(fr_buf_printf(
            out, ",\"log_id\":%lld,\"log_type\":\"%s\",\"log_action\":\"%s\",\"log_params\":",
            (long long)ev->log_id, ev->log_type, ev->log_action));
        TRY(fr_buf_append(out, ev->params.data, ev->params.len));
        TRY(gen_key_str(out, "log_action_comment", ev->lac.data, ev->lac.len));
    }
    TRY(fr_buf_printf(out,
                      ",\"server_url\":\"https://%s\",\"server_name\":\"%s\","
                      "\"server_script_path\":\"/w\",\"wiki\":\"%s\"",
                      server, server, w->db));
    TRY(gen_key_str(out, "parsedcomment", ev->parsed.data, ev->parsed.len));
    TRY(fr_buf_putc(out, '}'));
cleanup:
    return rc;
}

int fr_feed_gen_render(const struct fr_feed_gen *gen, int64_t pos, int64_t ts_ms,
                       struct fr_buf *out)
{
    if (fr_feed_gen_is_canary(gen, pos)) {
        return gen_canary(gen, pos, ts_ms, out);
    }
    struct gen_ev ev;
    memset(&ev, 0, sizeof ev);
    ev.gen = gen;
    ev.pos = pos;
    ev.ts_ms = ts_ms;
    struct fr_buf *bufs[] = {&ev.title, &ev.comment, &ev.parsed, &ev.user,
                             &ev.lac,   &ev.params,  &ev.tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        fr_buf_init(bufs[i], GEN_FIELD_CAP);
    }
    fr_feed_rng_seed(&ev.r, gen->seed, (uint64_t)pos, FR_FEED_SALT_EVENT);
    gen_session_pick(gen, pos, &ev.r, &ev.s);
    fr_feed_rng_seed(&ev.th, gen->seed, ev.s.theme, FR_FEED_SALT_SESSION);
    ev.wiki = &fr_feed_wikis[ev.s.wiki];
    struct fr_feed_lang lang;
    fr_feed_lang_resolve(ev.wiki->ns_lang, &lang);
    ev.lang = &lang;
    int rc;
    switch (ev.s.type) {
    case GEN_CATEGORIZE:
        rc = gen_categorize(&ev);
        break;
    case GEN_LOG:
        rc = gen_log(&ev);
        break;
    default:
        rc = gen_edit_like(&ev);
    }
    if (rc < 0) {
        goto cleanup;
    }
    if (ev.s.type != GEN_LOG) {
        ev.has_rc = 1;
    }
    ev.rc_id = gen_grow(&ev, gen_rc_base(ev.wiki), 1.0);
    /* EventStreams deletes `user` on redacted pages (PROTOCOL.md §8). */
    ev.has_user = fr_feed_rng_unit(&ev.r) >= 0.001;
    TRY(fr_feed_gen_user_name(&ev, &ev.user, ev.s.user_kind, ev.s.user, ev.s.bot));
    double u = fr_feed_rng_unit(&ev.r);
    int lag = ev.s.type == GEN_CATEGORIZE ? (u < 0.53   ? 1
                                             : u < 0.87 ? 2
                                             : u < 0.94 ? 3
                                                        : (int)fr_feed_rng_range(&ev.r, 4, 8))
                                          : (u < 0.36   ? 0
                                             : u < 0.86 ? 1
                                             : u < 0.97 ? 2
                                                        : (int)fr_feed_rng_range(&ev.r, 3, 8));
    ev.timestamp_s = ts_ms / 1000 - lag;
    TRY(fr_feed_gen_parsed(&ev));
    TRY(gen_write(&ev, out));
cleanup:
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        fr_buf_free(bufs[i]);
    }
    return rc;
}
