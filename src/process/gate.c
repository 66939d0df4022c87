/*
 * gate.c — decode + data-quality gate: one walk over a record's bytes that
 * validates the JSON (RFC 8259, nesting bound FR_JSON_MAX_DEPTH, the same
 * grammar as src/core/json.c), validates UTF-8, dispatches each member of
 * the known objects (top level, meta, length, revision) on its name, checks
 * its JSON type against the field table below and decodes the fields silver
 * keeps into the gate's arena. Nothing is rescanned: src/core/json.c's
 * fr_json_member walks the object once per field asked for, which measured
 * several times slower on real events (docs/adr/0007).
 *
 * Invariants:
 *   1. Every byte string gets exactly one verdict: a row or the first reason
 *      of FR_GATE_REASONS (process.h) that applies; the table order is the
 *      precedence, independent of where in the record the faults are.
 *   2. The walk never reads outside [json, json + len) and recursion is
 *      bounded by FR_JSON_MAX_DEPTH.
 *   3. Decoded strings never outgrow their raw bytes (an escape is at least
 *      as long as the UTF-8 it stands for), and every occurrence of a kept
 *      field consumes distinct input bytes, so the arena of max_event_bytes
 *      can never overflow; the guard in gate_keep is defensive.
 *   4. A row's strings are valid UTF-8 (any invalid string, kept or not,
 *      makes the record bad_utf8).
 *
 * Owned by one thread at a time (the arena is reused by every decode).
 */
#include "process/process_int.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/json.h"
#include "core/utf8.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Reason table                                                               */
/* ------------------------------------------------------------------------ */

static const char *const gate_reason_names[FR_GATE_REASON_COUNT] = {
    "ok",
#define GATE_REASON_NAME(id, name, desc) name,
    FR_GATE_REASONS(GATE_REASON_NAME)
#undef GATE_REASON_NAME
};

static const char *const gate_reason_descs[FR_GATE_REASON_COUNT] = {
    "accepted",
#define GATE_REASON_DESC(id, name, desc) desc,
    FR_GATE_REASONS(GATE_REASON_DESC)
#undef GATE_REASON_DESC
};

const char *fr_gate_reason_name(enum fr_gate_reason reason)
{
    return (unsigned)reason < FR_GATE_REASON_COUNT ? gate_reason_names[reason] : "?";
}

const char *fr_gate_reason_desc(enum fr_gate_reason reason)
{
    return (unsigned)reason < FR_GATE_REASON_COUNT ? gate_reason_descs[reason] : "?";
}

int fr_gate_reason_from_name(const char *name, size_t len)
{
    for (int r = 1; r < FR_GATE_REASON_COUNT; r++) {
        if (strlen(gate_reason_names[r]) == len && memcmp(gate_reason_names[r], name, len) == 0) {
            return r;
        }
    }
    return -1;
}

const char *fr_proc_type_name(enum fr_proc_type type)
{
    switch (type) {
    case FR_TYPE_EDIT:
        return "edit";
    case FR_TYPE_NEW:
        return "new";
    case FR_TYPE_LOG:
        return "log";
    case FR_TYPE_CATEGORIZE:
        return "categorize";
    case FR_TYPE_EXTERNAL:
        return "external";
    }
    return "?";
}

/* ------------------------------------------------------------------------ */
/* Field table                                                                */
/* ------------------------------------------------------------------------ */

enum gate_obj { GO_TOP, GO_META, GO_LENGTH, GO_REVISION, GO_COUNT };

enum gate_expect {
    GE_STRING,      /* string */
    GE_STRING_NULL, /* string or null (null = absent) */
    GE_INT32,       /* integer in int32 */
    GE_INT64,       /* integer in int64 */
    GE_INT64_NULL,  /* integer in int64 or null */
    GE_BOOL,        /* true or false */
    GE_OBJECT,      /* object, walked with its own field table */
    GE_ANY,         /* any JSON value */
    GE_UUID,        /* meta.id: required UUID string */
    GE_TIME,        /* meta.dt: required RFC 3339 string */
    GE_WIKI,        /* wiki: required non-empty string */
    GE_TYPE         /* type: required enumerated string */
};

static const char *const gate_expect_text[] = {"string",
                                               "string or null",
                                               "integer (32-bit)",
                                               "integer (64-bit)",
                                               "integer (64-bit) or null",
                                               "boolean",
                                               "object",
                                               "any",
                                               "string: UUID 8-4-4-4-12 hex",
                                               "string: RFC 3339 timestamp",
                                               "string: 1..255 bytes",
                                               "string: edit, new, log, categorize or external"};

/* X(ENUM, object, key, display name, expected, silver column or NULL) */
#define GATE_FIELDS(X)                                                                             \
    X(SCHEMA, GO_TOP, "$schema", "$schema", GE_STRING, NULL)                                       \
    X(META, GO_TOP, "meta", "meta", GE_OBJECT, NULL)                                               \
    X(ID, GO_TOP, "id", "id", GE_INT64_NULL, "rc_id")                                              \
    X(TYPE, GO_TOP, "type", "type", GE_TYPE, "type")                                               \
    X(NAMESPACE, GO_TOP, "namespace", "namespace", GE_INT32, "namespace")                          \
    X(TITLE, GO_TOP, "title", "title", GE_STRING, "title")                                         \
    X(TITLE_URL, GO_TOP, "title_url", "title_url", GE_STRING, NULL)                                \
    X(COMMENT, GO_TOP, "comment", "comment", GE_STRING, "comment")                                 \
    X(PARSEDCOMMENT, GO_TOP, "parsedcomment", "parsedcomment", GE_STRING, NULL)                    \
    X(TIMESTAMP, GO_TOP, "timestamp", "timestamp", GE_INT64, NULL)                                 \
    X(USER, GO_TOP, "user", "user", GE_STRING, "user")                                             \
    X(BOT, GO_TOP, "bot", "bot", GE_BOOL, "bot")                                                   \
    X(NOTIFY_URL, GO_TOP, "notify_url", "notify_url", GE_STRING, NULL)                             \
    X(MINOR, GO_TOP, "minor", "minor", GE_BOOL, "minor")                                           \
    X(PATROLLED, GO_TOP, "patrolled", "patrolled", GE_BOOL, "patrolled")                           \
    X(LENGTH, GO_TOP, "length", "length", GE_OBJECT, NULL)                                         \
    X(REVISION, GO_TOP, "revision", "revision", GE_OBJECT, NULL)                                   \
    X(LOG_ID, GO_TOP, "log_id", "log_id", GE_INT64_NULL, "log_id")                                 \
    X(LOG_TYPE, GO_TOP, "log_type", "log_type", GE_STRING_NULL, "log_type")                        \
    X(LOG_ACTION, GO_TOP, "log_action", "log_action", GE_STRING_NULL, "log_action")                \
    X(LOG_PARAMS, GO_TOP, "log_params", "log_params", GE_ANY, NULL)                                \
    X(LOG_ACTION_COMMENT, GO_TOP, "log_action_comment", "log_action_comment", GE_STRING_NULL,      \
      NULL)                                                                                        \
    X(SERVER_URL, GO_TOP, "server_url", "server_url", GE_STRING, NULL)                             \
    X(SERVER_NAME, GO_TOP, "server_name", "server_name", GE_STRING, "server_name")                 \
    X(SERVER_SCRIPT_PATH, GO_TOP, "server_script_path", "server_script_path", GE_STRING, NULL)     \
    X(WIKI, GO_TOP, "wiki", "wiki", GE_WIKI, "wiki")                                               \
    X(CHANNEL, GO_TOP, "channel", "channel", GE_STRING, NULL)                                      \
    X(M_URI, GO_META, "uri", "meta.uri", GE_STRING, NULL)                                          \
    X(M_REQUEST_ID, GO_META, "request_id", "meta.request_id", GE_STRING, NULL)                     \
    X(M_ID, GO_META, "id", "meta.id", GE_UUID, "meta_id")                                          \
    X(M_DT, GO_META, "dt", "meta.dt", GE_TIME, "event_time")                                       \
    X(M_DOMAIN, GO_META, "domain", "meta.domain", GE_STRING, NULL)                                 \
    X(M_STREAM, GO_META, "stream", "meta.stream", GE_STRING, NULL)                                 \
    X(M_TOPIC, GO_META, "topic", "meta.topic", GE_STRING, NULL)                                    \
    X(M_PARTITION, GO_META, "partition", "meta.partition", GE_INT64, NULL)                         \
    X(M_OFFSET, GO_META, "offset", "meta.offset", GE_INT64, NULL)                                  \
    X(M_KEY, GO_META, "key", "meta.key", GE_ANY, NULL)                                             \
    X(M_SCHEMA_URI, GO_META, "schema_uri", "meta.schema_uri", GE_STRING, NULL)                     \
    X(L_OLD, GO_LENGTH, "old", "length.old", GE_INT64_NULL, "length_old")                          \
    X(L_NEW, GO_LENGTH, "new", "length.new", GE_INT64_NULL, "length_new")                          \
    X(R_OLD, GO_REVISION, "old", "revision.old", GE_INT64_NULL, "revision_old")                    \
    X(R_NEW, GO_REVISION, "new", "revision.new", GE_INT64_NULL, "revision_new")

enum gate_field {
#define GATE_FIELD_ENUM(id, obj, key, display, expect, col) GF_##id,
    GATE_FIELDS(GATE_FIELD_ENUM)
#undef GATE_FIELD_ENUM
        GF_COUNT
};
static_assert(GF_COUNT <= 64, "seen-field bitmask is 64 bits");

struct gate_field_def {
    uint8_t obj;
    uint8_t expect;
    uint8_t key_len;
    const char *key;
    const char *display;
    const char *column;
};

static const struct gate_field_def gate_fields[GF_COUNT] = {
#define GATE_FIELD_DEF(id, o, k, d, e, c) {(o), (e), sizeof(k) - 1, (k), (d), (c)},
    GATE_FIELDS(GATE_FIELD_DEF)
#undef GATE_FIELD_DEF
};

#define GATE_KEY_MAX 18  /* longest key in the table */
#define GATE_KEY_SLOTS 6 /* fields of one object sharing a key length */
#define GATE_KEY_WORDS 3 /* 8-byte words that hold GATE_KEY_MAX bytes */
static_assert(GATE_KEY_MAX <= 8 * GATE_KEY_WORDS, "keys fit their words");
static_assert(GATE_KEY_MAX + 1 <= 31, "a key and its quote fit gate_key_at's 32 bytes and mask");

/* ------------------------------------------------------------------------ */
/* Index: one vector pass before the walk                                     */
/* ------------------------------------------------------------------------ */

/*
 * The walk used to scan strings 16 bytes at a time, stopping at every
 * non-ASCII byte to check its sequence (about 2,700 of its ~8,800
 * instructions a record on generated events; ADR 0032). gate_index
 * instead reads the whole record once, 64 bytes per step with AVX2, and
 *   - sets bit i of sbits when byte i is '"' or '\\', so gate_string jumps
 *     from one to the next (gate_string_indexed);
 *   - checks that no byte is below 0x20 (a control byte is a syntax error
 *     in a string and whitespace outside one; either way the record takes
 *     the byte scan, which finds and reports it);
 *   - checks that the bytes are valid UTF-8 (RFC 3629), so no string needs
 *     its own check. Quotes and backslashes are ASCII and never inside a
 *     multi-byte sequence, so every string of a valid record is valid.
 * A record that fails either check, or is longer than FR_GATE_INDEX_MAX,
 * is walked byte by byte as before; the verdict, detail and row are the
 * same both ways (the unit tests and fuzz_gate compare them).
 *
 * UTF-8 by nibble tables (after Keiser and Lemire, "Validating UTF-8 in
 * less than one instruction per byte", 2021). For each byte b and the byte
 * a before it, every error that two adjacent bytes can show is a product
 * of three conditions: on a's high nibble, a's low nibble and b's high
 * nibble. gate_u8_rules lists them, one bit each; three 16-entry tables
 * (built from the rules at first use) hold, per nibble value, the rules
 * that nibble allows, and a pair is an error when some bit survives the
 * AND of its three lookups. The one rule that needs more context is
 * "a continuation follows a continuation": legal exactly when the byte two
 * back is a 3- or 4-byte lead (>= 0xE0) or the byte three back is a 4-byte
 * lead (>= 0xF0), which is tested with saturating subtractions.
 */
/* What gate_index needs when the CPU has AVX2: the x86-64 compilers (gcc,
 * clang) compile the function for it alone and the gate picks it at run
 * time; elsewhere every record takes the byte scan. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define GATE_U8_TWO_CONTS 0x80 /* the rule checked against the leads behind */

static const struct gate_u8_rule {
    uint8_t bit;
    uint16_t a_hi, a_lo, b_hi; /* bit n set: that nibble value matches */
} gate_u8_rules[] = {
    {0x01, 0xF000, 0xFFFF, 0xF0FF},              /* a lead (C..F) not followed by a continuation */
    {0x02, 0x00FF, 0xFFFF, 0x0F00},              /* a continuation after ASCII */
    {0x04, 0x1000, 0x0003, 0x0F00},              /* C0, C1: an overlong 2-byte form */
    {0x08, 0x4000, 0x0001, 0x0300},              /* E0 80..9F: an overlong 3-byte form */
    {0x10, 0x4000, 0x2000, 0x0C00},              /* ED A0..BF: a surrogate */
    {0x20, 0x8000, 0xFFE1, 0x0100},              /* F0 80..8F overlong; F5..FF 80..8F too large */
    {0x40, 0x8000, 0xFFF0, 0x0E00},              /* F4..FF 90..BF: past U+10FFFF */
    {GATE_U8_TWO_CONTS, 0x0F00, 0xFFFF, 0x0F00}, /* a continuation after one */
};

static uint8_t gate_u8_tab[3][16]; /* a_hi, a_lo, b_hi: rule bits per nibble */
static pthread_once_t gate_u8_once = PTHREAD_ONCE_INIT;

static void gate_u8_build(void)
{
    for (size_t r = 0; r < sizeof gate_u8_rules / sizeof gate_u8_rules[0]; r++) {
        const struct gate_u8_rule *rule = &gate_u8_rules[r];
        for (int n = 0; n < 16; n++) {
            gate_u8_tab[0][n] |= (uint8_t)(rule->a_hi >> n & 1 ? rule->bit : 0);
            gate_u8_tab[1][n] |= (uint8_t)(rule->a_lo >> n & 1 ? rule->bit : 0);
            gate_u8_tab[2][n] |= (uint8_t)(rule->b_hi >> n & 1 ? rule->bit : 0);
        }
    }
}

static int gate_index_supported(void)
{
    if (!__builtin_cpu_supports("avx2")) {
        return 0;
    }
    pthread_once(&gate_u8_once, gate_u8_build);
    return 1;
}

#define GATE_AVX2 __attribute__((target("avx2")))

/* The UTF-8 errors of the 32 bytes v, given the 32 before them. */
GATE_AVX2 static inline __m256i gate_u8_errors(__m256i v, __m256i prev, const __m256i tab[3])
{
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i joined = _mm256_permute2x128_si256(prev, v, 0x21); /* prev's high half, v's low */
    __m256i prev1 = _mm256_alignr_epi8(v, joined, 15);
    __m256i prev2 = _mm256_alignr_epi8(v, joined, 14);
    __m256i prev3 = _mm256_alignr_epi8(v, joined, 13);
    __m256i a_hi = _mm256_shuffle_epi8(tab[0], _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low4));
    __m256i a_lo = _mm256_shuffle_epi8(tab[1], _mm256_and_si256(prev1, low4));
    __m256i b_hi = _mm256_shuffle_epi8(tab[2], _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
    __m256i rules = _mm256_and_si256(_mm256_and_si256(a_hi, a_lo), b_hi);
    /* 0x80 where a continuation must follow: two back >= 0xE0, or three
     * back >= 0xF0 (a saturating subtraction leaves >= 0x80 exactly then) */
    __m256i must = _mm256_or_si256(_mm256_subs_epu8(prev2, _mm256_set1_epi8(0xE0 - 0x80)),
                                   _mm256_subs_epu8(prev3, _mm256_set1_epi8(0xF0 - 0x80)));
    must = _mm256_and_si256(must, _mm256_set1_epi8((char)GATE_U8_TWO_CONTS));
    return _mm256_xor_si256(rules, must);
}

/* Non-zero bytes where v ends inside a multi-byte sequence: its last byte
 * is a lead, or the one before is a 3- or 4-byte lead, or the one before
 * that a 4-byte lead. */
GATE_AVX2 static inline __m256i gate_u8_unfinished(__m256i v)
{
    const __m256i limit = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm256_subs_epu8(v, limit);
}

/* Index json[0..len), len <= FR_GATE_INDEX_MAX, into sbits, and copy it to
 * copy (unless NULL) on the way: the vectors the index loads are stored
 * again, so a caller that needs the record in its own memory does not read
 * it twice. Returns 1 when the record has no control bytes and is valid
 * UTF-8 (the walk may use the index), else 0; the copy is whole either way. */
GATE_AVX2 static int gate_index(const char *json, size_t len, uint64_t *sbits, char *copy)
{
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\');
    const __m256i ctl = _mm256_set1_epi8(0x1F);
    const __m256i tab[3] = {
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const void *)gate_u8_tab[0])),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const void *)gate_u8_tab[1])),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const void *)gate_u8_tab[2]))};
    __m256i bad_ctl = _mm256_setzero_si256(), bad_u8 = _mm256_setzero_si256();
    __m256i prev = _mm256_setzero_si256(), unfinished = _mm256_setzero_si256();
    char tail[64];
    for (size_t at = 0, w = 0; at < len; at += 64, w++) {
        const char *p = json + at;
        if (len - at < 64) {
            /* spaces: not special, not control, ASCII */
            memset(tail, ' ', sizeof tail);
            memcpy(tail, p, len - at);
            if (copy) {
                memcpy(copy + at, p, len - at);
            }
            p = tail;
        }
        __m256i half[2] = {_mm256_loadu_si256((const void *)p),
                           _mm256_loadu_si256((const void *)(p + 32))};
        if (copy && p != tail) {
            _mm256_storeu_si256((void *)(copy + at), half[0]);
            _mm256_storeu_si256((void *)(copy + at + 32), half[1]);
        }
        uint64_t bits[2];
        for (int h = 0; h < 2; h++) {
            __m256i v = half[h];
            __m256i sp = _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bslash));
            bits[h] = (uint32_t)_mm256_movemask_epi8(sp);
            bad_ctl = _mm256_or_si256(bad_ctl, _mm256_cmpeq_epi8(_mm256_min_epu8(v, ctl), v));
            if (_mm256_movemask_epi8(v) == 0) {
                /* ASCII: an error only if the bytes before left a
                 * sequence unfinished */
                bad_u8 = _mm256_or_si256(bad_u8, unfinished);
                unfinished = _mm256_setzero_si256();
            } else {
                bad_u8 = _mm256_or_si256(bad_u8, gate_u8_errors(v, prev, tab));
                unfinished = gate_u8_unfinished(v);
            }
            prev = v;
        }
        sbits[w] = bits[0] | bits[1] << 32;
    }
    bad_u8 = _mm256_or_si256(bad_u8, unfinished); /* the record ends mid-sequence */
    return _mm256_testz_si256(bad_ctl, bad_ctl) && _mm256_testz_si256(bad_u8, bad_u8);
}
#else
static int gate_index_supported(void)
{
    return 0;
}
static int gate_index(const char *json, size_t len, uint64_t *sbits, char *copy)
{
    (void)json, (void)len, (void)sbits, (void)copy;
    return 0;
}
#endif

struct fr_gate {
    struct fr_gate_opts opts;
    char *arena; /* max_event_bytes, reused by every decode */
    /* lookup[obj][key length] = up to GATE_KEY_SLOTS field ids + 1, 0 ends */
    uint8_t lookup[GO_COUNT][GATE_KEY_MAX + 1][GATE_KEY_SLOTS];
    /* each field's key as 8-byte words (memcpy'd), zero past its length,
     * so a member name is matched with three compares, not a memcmp */
    uint64_t key_words[GF_COUNT][GATE_KEY_WORDS];
    /* len_mask[n]: the words' bits that hold a name's first n bytes
     * (little-endian loads) */
    uint64_t len_mask[GATE_KEY_MAX + 1][GATE_KEY_WORDS];
    /* each field's key then '"', zero after (gate_key_at's 16-byte
     * compares), and the bits of those key_len + 1 bytes */
    _Alignas(16) char key_quoted[GF_COUNT][32];
    uint32_t key_quoted_mask[GF_COUNT];
    /* Member-name prediction: next[f] is the field id + 1 of the member
     * that followed field f the last time (next[GF_COUNT + obj]: the first
     * member of obj), 0 when none yet. Producers write members in a fixed
     * order, so a name is usually matched in place (gate_key_at) without
     * scanning it as a string or looking it up. Only speed depends on it:
     * a wrong guess falls back to the scan and the lookup. */
    uint8_t next[GF_COUNT + GO_COUNT];
    int indexed;                            /* gate_index in use (AVX2, not forced off) */
    struct fr_gate_paths paths;             /* records per walk */
    uint64_t sbits[FR_GATE_INDEX_MAX / 64]; /* the current record's index */
};

int fr_gate_create(const struct fr_gate_opts *opts, struct fr_gate **out)
{
    *out = NULL;
    if (!opts || opts->max_event_bytes < 64 || opts->max_event_bytes > ((size_t)64 << 20) ||
        opts->max_future_ms < 0 || opts->max_future_ms > INT64_C(366) * 86400000) {
        return FR_EINVAL;
    }
    struct fr_gate *gate = calloc(1, sizeof *gate);
    if (!gate) {
        return FR_ENOMEM;
    }
    gate->opts = *opts;
    gate->indexed = gate_index_supported();
    gate->arena = malloc(opts->max_event_bytes);
    if (!gate->arena) {
        free(gate);
        return FR_ENOMEM;
    }
    for (int f = 0; f < GF_COUNT; f++) {
        const struct gate_field_def *def = &gate_fields[f];
        uint8_t *slot = gate->lookup[def->obj][def->key_len];
        int i = 0;
        while (i < GATE_KEY_SLOTS - 1 && slot[i]) {
            i++;
        }
        if (i == GATE_KEY_SLOTS - 1) {
            /* The field table outgrew the lookup: a build bug, caught by
             * every test that creates a gate. */
            fr_gate_destroy(gate);
            return FR_ESTATE;
        }
        slot[i] = (uint8_t)(f + 1);
        memcpy(gate->key_words[f], def->key, def->key_len); /* calloc'ed: zero after */
        memcpy(gate->key_quoted[f], def->key, def->key_len);
        gate->key_quoted[f][def->key_len] = '"';
        gate->key_quoted_mask[f] = (UINT32_C(1) << (def->key_len + 1)) - 1;
    }
    for (size_t n = 0; n <= GATE_KEY_MAX; n++) {
        for (size_t i = 0; i < GATE_KEY_WORDS; i++) {
            size_t have = n > 8 * i ? n - 8 * i : 0; /* bytes of the name in word i */
            gate->len_mask[n][i] = have >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * have)) - 1;
        }
    }
    *out = gate;
    return FR_OK;
}

void fr_gate_destroy(struct fr_gate *gate)
{
    if (!gate) {
        return;
    }
    free(gate->arena);
    free(gate);
}

/* ------------------------------------------------------------------------ */
/* Decoder state                                                              */
/* ------------------------------------------------------------------------ */

/* State of a required field. */
enum { REQ_ABSENT = 0, REQ_OK, REQ_BAD };

struct gate_ctx {
    struct fr_gate *gate;
    const char *base, *end;
    struct fr_row *row;
    char *arena; /* where kept strings go: the gate's, or the caller's */
    size_t arena_cap;
    size_t arena_len;
    int arena_full;
    int in_place; /* strings without escapes point into the record itself */
    /* first fault of each kind */
    int syntax;
    size_t syntax_at;
    int utf8; /* 0 none, 1 invalid bytes, 2 lone surrogate escape */
    size_t utf8_at;
    uint64_t seen;
    int dup_field; /* -1: none */
    int bad_field; /* -1: none */
    const char *bad_why;
    int canary;
    /* The record's index (gate_index): bit i of sbits is set when byte i
     * is '"' or '\\'. NULL: the byte-at-a-time scan (gate_string). */
    const uint64_t *sbits;
    size_t swords;
    uint8_t meta, id, dt, wiki, type; /* REQ_ */
    const char *meta_why, *id_why, *dt_why, *wiki_why, *type_why;
};

static const char *gate_fail(struct gate_ctx *ctx, const char *p)
{
    if (!ctx->syntax) {
        ctx->syntax = 1;
        ctx->syntax_at = (size_t)(p - ctx->base);
    }
    return NULL;
}

static const char *gate_ws(const char *p, const char *end)
{
    /* every JSON whitespace byte is <= ' ': one test for any other byte */
    while (p < end && (unsigned char)*p <= ' ' &&
           (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    return p;
}

static int gate_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c |= 0x20;
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

static int gate_hex4(const char *s)
{
    int a = gate_hex((unsigned char)s[0]), b = gate_hex((unsigned char)s[1]);
    int c = gate_hex((unsigned char)s[2]), d = gate_hex((unsigned char)s[3]);
    if ((a | b | c | d) < 0) {
        return -1;
    }
    return a << 12 | b << 8 | c << 4 | d;
}

/* Length of the valid UTF-8 sequence at s (2..4), or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t gate_utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0];
    size_t left = (size_t)(end - s);
    if (c < 0xC2 || c > 0xF4) {
        return 0;
    }
    if (c < 0xE0) {
        return left >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    }
    if (c < 0xF0) {
        if (left < 3 || (s[2] & 0xC0) != 0x80) {
            return 0;
        }
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi ? 3 : 0;
    }
    if (left < 4 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) {
        return 0;
    }
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return s[1] >= lo && s[1] <= hi ? 4 : 0;
}

/* Non-zero when one of the 8 bytes in x is '"', '\\', < 0x20 or >= 0x80.
 * Borrows can only raise false hits above a true one, so a zero result is
 * exact and a non-zero one sends the block to the byte loop. */
static inline uint64_t gate_special8(uint64_t x)
{
    const uint64_t ones = UINT64_C(0x0101010101010101);
    const uint64_t highs = UINT64_C(0x8080808080808080);
    uint64_t q = x ^ (ones * '"');
    uint64_t b = x ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x) | x;
    return hit & highs;
}

static inline int gate_special1(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
}

/* Bit i set when byte i of the 16 at p is '"', '\\', < 0x20 or >= 0x80:
 * exact, unlike gate_special8. SSE2 is part of x86-64; elsewhere the
 * 8-byte blocks above do the same work. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define GATE_HAVE_SPECIAL16 1
static inline unsigned gate_special16(const char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i ctl = _mm_set1_epi8(0x1F);
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v)); /* v <= 0x1F */
    return (unsigned)_mm_movemask_epi8(hit) | (unsigned)_mm_movemask_epi8(v); /* | v >= 0x80 */
}
#else
#define GATE_HAVE_SPECIAL16 0
static inline unsigned gate_special16(const char *p)
{
    (void)p;
    return 0;
}
#endif

/* The first byte in [p, end) that gate_special1 picks out, or end. */
static inline const char *gate_skip_plain(const char *p, const char *end)
{
    while (GATE_HAVE_SPECIAL16 && end - p >= 16) {
        unsigned m = gate_special16(p);
        if (m) {
            return p + __builtin_ctz(m);
        }
        p += 16;
    }
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        if (gate_special8(x)) {
            break; /* the byte loop below finds it inside this block */
        }
        p += 8;
    }
    while (p < end && !gate_special1((unsigned char)*p)) {
        p++;
    }
    return p;
}

/* p at a backslash inside a string. Returns the byte after the escape, or
 * NULL on a syntax error. A lone surrogate (\uD800..\uDFFF not in a pair)
 * is a UTF-8 fault, recorded in ctx; the scan goes on. */
static const char *gate_escape(struct gate_ctx *ctx, const char *p)
{
    const char *end = ctx->end;
    if (end - p < 2) {
        return gate_fail(ctx, p);
    }
    char e = p[1];
    if (e != 'u') {
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't') {
            return gate_fail(ctx, p);
        }
        return p + 2;
    }
    int cp = end - p >= 6 ? gate_hex4(p + 2) : -1;
    if (cp < 0) {
        return gate_fail(ctx, p);
    }
    const char *at = p;
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        int lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? gate_hex4(p + 2) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            return p + 6;
        }
    } else if (cp < 0xDC00 || cp > 0xDFFF) {
        return p;
    }
    if (!ctx->utf8) {
        ctx->utf8 = 2;
        ctx->utf8_at = (size_t)(at - ctx->base);
    }
    return p;
}

/* The first byte at or after i (a byte offset) whose bit is set in the
 * record's index, or SIZE_MAX. Bits past the record are zero. */
static inline size_t gate_next_special(const struct gate_ctx *ctx, size_t i)
{
    size_t w = i >> 6;
    if (w >= ctx->swords) {
        return SIZE_MAX;
    }
    uint64_t m = ctx->sbits[w] & (UINT64_MAX << (i & 63));
    while (!m) {
        if (++w >= ctx->swords) {
            return SIZE_MAX;
        }
        m = ctx->sbits[w];
    }
    return (w << 6) + (size_t)__builtin_ctzll(m);
}

/* gate_string over an indexed record (gate_index passed it: no control
 * bytes, valid UTF-8): it jumps from quote or backslash to the next one
 * through the index instead of testing the bytes between. The same
 * closing quote, escape checks and faults as the byte scan. */
static inline const char *gate_string_indexed(struct gate_ctx *ctx, const char *p, int *esc)
{
    size_t i = (size_t)(p - ctx->base);
    *esc = 0;
    for (;;) {
        size_t j = gate_next_special(ctx, i);
        if (j == SIZE_MAX) {
            return gate_fail(ctx, ctx->end);
        }
        p = ctx->base + j;
        if (*p == '"') {
            return p;
        }
        *esc = 1;
        p = gate_escape(ctx, p);
        if (!p) {
            return NULL;
        }
        i = (size_t)(p - ctx->base);
    }
}

/* gate_string byte by byte (16 at a time where SSE2 is), for a record
 * without an index. UTF-8 faults are recorded in ctx and the scan goes on
 * (not_json outranks bad_utf8). */
static __attribute__((noinline)) const char *gate_string_scan(struct gate_ctx *ctx, const char *p,
                                                              int *esc)
{
    const char *end = ctx->end;
    *esc = 0;
    for (;;) {
        p = gate_skip_plain(p, end);
        if (p >= end) {
            return gate_fail(ctx, p);
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            return p;
        }
        if (c >= 0x80) {
            size_t n = gate_utf8_seq((const unsigned char *)p, (const unsigned char *)end);
            if (n == 0) {
                if (!ctx->utf8) {
                    ctx->utf8 = 1;
                    ctx->utf8_at = (size_t)(p - ctx->base);
                }
                n = 1;
            }
            p += n;
            continue;
        }
        if (c < 0x20) {
            return gate_fail(ctx, p);
        }
        if (c != '\\') {
            p++;
            continue;
        }
        *esc = 1;
        p = gate_escape(ctx, p);
        if (!p) {
            return NULL;
        }
    }
}

/* p is just after an opening quote. Returns the closing quote, or NULL on a
 * syntax error; *esc tells whether the string holds escapes. */
static inline __attribute__((always_inline)) const char *gate_string(struct gate_ctx *ctx,
                                                                     const char *p, int *esc)
{
    return ctx->sbits ? gate_string_indexed(ctx, p, esc) : gate_string_scan(ctx, p, esc);
}

/* Decode the raw string [s, e), already validated by gate_string, into out
 * (room for e - s bytes). A lone surrogate is written as its 3-byte form;
 * the record is bad_utf8 then and the bytes are never used. */
static size_t gate_unescape(const char *s, const char *e, char *out)
{
    size_t n = 0;
    while (s < e) {
        const char *bs = memchr(s, '\\', (size_t)(e - s));
        size_t run = (size_t)((bs ? bs : e) - s);
        memcpy(out + n, s, run);
        n += run;
        if (!bs) {
            break;
        }
        s = bs + 2;
        switch (bs[1]) {
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'u': {
            uint32_t cp = (uint32_t)gate_hex4(bs + 2);
            s = bs + 6;
            if (cp >= 0xD800 && cp <= 0xDBFF && e - s >= 6 && s[0] == '\\' && s[1] == 'u') {
                uint32_t lo = (uint32_t)gate_hex4(s + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    s += 6;
                }
            }
            n += fr_utf8_put(out + n, cp);
            break;
        }
        default:
            out[n++] = bs[1];
            break; /* '"', '\\', '/' */
        }
    }
    return n;
}

/* The raw string [s, e) as a row string: in place when it has no escapes
 * and the record outlives the row (fr_gate_decode_to), else copied (and
 * unescaped) into the arena. */
static int gate_keep(struct gate_ctx *ctx, const char *s, const char *e, int esc,
                     struct fr_proc_str *out)
{
    size_t raw = (size_t)(e - s);
    if (!esc && ctx->in_place) {
        out->s = s;
        out->len = (uint32_t)raw;
        return 0;
    }
    if (raw > ctx->arena_cap - ctx->arena_len) {
        ctx->arena_full = 1;
        out->s = "";
        out->len = 0;
        return -1;
    }
    char *dst = ctx->arena + ctx->arena_len;
    size_t n = raw;
    if (esc) {
        n = gate_unescape(s, e, dst);
    } else if (raw) {
        memcpy(dst, s, raw);
    }
    ctx->arena_len += n;
    out->s = dst;
    out->len = (uint32_t)n;
    return 0;
}

/* p at the first byte of a number. Returns the byte after it or NULL.
 * *is_int: no fraction or exponent; *in_range: fits int64. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GATE_SWAR_DIGITS 1 /* gate_parse8 reads the first digit from the low byte */
#else
#define GATE_SWAR_DIGITS 0
#endif

/* Whether the 8 bytes of x (memory order) are all ASCII digits: each
 * byte's high nibble is 3, and adding 6 to it does not carry into that
 * nibble (the low nibble is at most 9). */
static inline int gate_digits8(uint64_t x)
{
    const uint64_t hi = UINT64_C(0xF0F0F0F0F0F0F0F0), threes = UINT64_C(0x3030303030303030);
    return (x & hi) == threes && ((x + UINT64_C(0x0606060606060606)) & hi) == threes;
}

/* The value of 8 ASCII digits loaded little-endian (the first digit in
 * the low byte): pairs, then quads, then the eight, each step one
 * multiply. */
static inline uint64_t gate_parse8(uint64_t x)
{
    x -= UINT64_C(0x3030303030303030);
    x = (x * 10 + (x >> 8)) & UINT64_C(0x00FF00FF00FF00FF);
    x = (x * 100 + (x >> 16)) & UINT64_C(0x0000FFFF0000FFFF);
    return (x * 10000 + (x >> 32)) & UINT64_C(0xFFFFFFFF);
}

/* Inlined into both callers: the call itself was a fifth of its cost. */
static inline __attribute__((always_inline)) const char *
gate_number(struct gate_ctx *ctx, const char *p, int *is_int, int *in_range, int64_t *out)
{
    const char *end = ctx->end;
    const char *start = p;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9') {
        return gate_fail(ctx, start);
    }
    uint64_t v = 0;
    int over = 0;
    if (*p == '0') {
        p++;
    } else {
        /* Eight digits at a time while the value has at most 11 digits
         * before them (19 after: below 2^64, no overflow check needed). */
        const char *first = p;
        while (GATE_SWAR_DIGITS && end - p >= 8 && p - first <= 11) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (!gate_digits8(x)) {
                break;
            }
            v = v * 100000000u + gate_parse8(x);
            p += 8;
        }
        while (p < end && *p >= '0' && *p <= '9') {
            uint64_t d = (uint64_t)(*p - '0');
            if (v > (UINT64_MAX - d) / 10) {
                over = 1;
            } else {
                v = v * 10 + d;
            }
            p++;
        }
    }
    *is_int = 1;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == d) {
            return gate_fail(ctx, p);
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == d) {
            return gate_fail(ctx, p);
        }
    }
    *in_range = !over && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX);
    *out = *in_range ? (neg ? (int64_t)(0 - v) : (int64_t)v) : 0;
    return p;
}

static const char *gate_literal(struct gate_ctx *ctx, const char *p, const char *word, size_t n)
{
    if ((size_t)(ctx->end - p) < n || memcmp(p, word, n) != 0) {
        return gate_fail(ctx, p);
    }
    return p + n;
}

static const char *gate_kind(char c)
{
    switch (c) {
    case '"':
        return "string";
    case '{':
        return "object";
    case '[':
        return "array";
    case 't':
    case 'f':
        return "boolean";
    case 'n':
        return "null";
    default:
        return "number";
    }
}

static const char *gate_skip(struct gate_ctx *ctx, const char *p, int depth);

/* A container nobody reads (an unknown member, log_params, meta.key). */
static const char *gate_skip_container(struct gate_ctx *ctx, const char *p, int depth)
{
    const char *end = ctx->end;
    int is_obj = *p == '{';
    char close = is_obj ? '}' : ']';
    p = gate_ws(p + 1, end);
    if (p < end && *p == close) {
        return p + 1;
    }
    for (;;) {
        if (is_obj) {
            if (p >= end || *p != '"') {
                return gate_fail(ctx, p);
            }
            int esc;
            const char *q = gate_string(ctx, p + 1, &esc);
            if (!q) {
                return NULL;
            }
            p = gate_ws(q + 1, end);
            if (p >= end || *p != ':') {
                return gate_fail(ctx, p);
            }
            p = gate_ws(p + 1, end);
        }
        p = gate_skip(ctx, p, depth + 1);
        if (!p) {
            return NULL;
        }
        p = gate_ws(p, end);
        if (p >= end) {
            return gate_fail(ctx, p);
        }
        if (*p == close) {
            return p + 1;
        }
        if (*p != ',') {
            return gate_fail(ctx, p);
        }
        p = gate_ws(p + 1, end);
    }
}

/* Validate and step over any value at p (after whitespace). */
static const char *gate_skip(struct gate_ctx *ctx, const char *p, int depth)
{
    if (depth > FR_JSON_MAX_DEPTH || p >= ctx->end) {
        return gate_fail(ctx, p);
    }
    int esc, is_int, in_range;
    int64_t v;
    const char *q;
    switch (*p) {
    case '{':
    case '[':
        return gate_skip_container(ctx, p, depth);
    case '"':
        q = gate_string(ctx, p + 1, &esc);
        return q ? q + 1 : NULL;
    case 't':
        return gate_literal(ctx, p, "true", 4);
    case 'f':
        return gate_literal(ctx, p, "false", 5);
    case 'n':
        return gate_literal(ctx, p, "null", 4);
    default:
        return gate_number(ctx, p, &is_int, &in_range, &v);
    }
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GATE_LITTLE_ENDIAN 1 /* the masks below keep a word's first bytes */
#else
#define GATE_LITTLE_ENDIAN 0
#endif

static inline uint64_t gate_load64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int gate_lookup(const struct fr_gate *gate, int obj, const char *k, size_t n,
                       const char *end);

/* gate_lookup for a name with escapes: decoded first. */
static __attribute__((noinline)) int gate_lookup_escaped(const struct fr_gate *gate, int obj,
                                                         const char *k, size_t n)
{
    /* An escaped name decodes to at most its raw length; names in the
     * table are <= GATE_KEY_MAX bytes, i.e. <= 12 raw bytes per byte. */
    char tmp[GATE_KEY_MAX * 12 + 1];
    if (n > sizeof tmp - 1) {
        return -1;
    }
    n = gate_unescape(k, k + n, tmp);
    return gate_lookup(gate, obj, tmp, n, tmp + n);
}

/* Field id for the member name [k, k + n) (no escapes) of object obj, or
 * -1. end: the end of the readable bytes at k (the record's). */
static int gate_lookup(const struct fr_gate *gate, int obj, const char *k, size_t n,
                       const char *end)
{
    if (n == 0 || n > GATE_KEY_MAX) {
        return -1;
    }
    const uint8_t *slot = gate->lookup[obj][n];
    if (!slot[0]) {
        return -1;
    }
    /* The name as words loaded like key_words, zero past n: straight from
     * the record when 24 bytes are there (the quote, the colon and the
     * value follow a name, so they nearly always are) and the host is
     * little-endian, else through a zeroed copy. */
    uint64_t w0, w1, w2;
    if (GATE_LITTLE_ENDIAN && end - k >= 8 * GATE_KEY_WORDS) {
        const uint64_t *m = gate->len_mask[n];
        w0 = gate_load64(k) & m[0];
        w1 = gate_load64(k + 8) & m[1];
        w2 = gate_load64(k + 16) & m[2];
    } else {
        char pad[8 * GATE_KEY_WORDS] = {0};
        memcpy(pad, k, n);
        w0 = gate_load64(pad);
        w1 = gate_load64(pad + 8);
        w2 = gate_load64(pad + 16);
    }
    for (int i = 0; slot[i]; i++) {
        const uint64_t *kw = gate->key_words[slot[i] - 1];
        if (w0 == kw[0] && w1 == kw[1] && w2 == kw[2]) {
            return slot[i] - 1;
        }
    }
    return -1;
}

static void gate_bad_field(struct gate_ctx *ctx, int field, const char *why)
{
    if (ctx->bad_field < 0) {
        ctx->bad_field = field;
        ctx->bad_why = why;
    }
}

static const char *gate_object(struct gate_ctx *ctx, const char *p, int depth, int obj);

/* The value of a known field at p (after whitespace). */
static const char *gate_field(struct gate_ctx *ctx, const char *p, int depth, int field)
{
    if (depth > FR_JSON_MAX_DEPTH || p >= ctx->end) {
        return gate_fail(ctx, p);
    }
    uint64_t bit = UINT64_C(1) << field;
    if ((ctx->seen & bit) && ctx->dup_field < 0) {
        ctx->dup_field = field;
    }
    ctx->seen |= bit;

    struct fr_row *row = ctx->row;
    const struct gate_field_def *def = &gate_fields[field];
    const char *q;
    int esc, is_int, in_range;
    int64_t v;
    struct fr_proc_str str;

    switch ((enum gate_expect)def->expect) {
    case GE_OBJECT:
        if (*p == '{') {
            if (field == GF_META) {
                ctx->meta = REQ_OK;
            }
            return gate_object(ctx, p, depth,
                               field == GF_META     ? GO_META
                               : field == GF_LENGTH ? GO_LENGTH
                                                    : GO_REVISION);
        }
        if (field == GF_META) {
            if (ctx->meta != REQ_OK) {
                ctx->meta = REQ_BAD;
                ctx->meta_why = gate_kind(*p);
            }
        } else {
            gate_bad_field(ctx, field, gate_kind(*p));
        }
        return gate_skip(ctx, p, depth);

    case GE_ANY:
        return gate_skip(ctx, p, depth);

    case GE_STRING:
    case GE_STRING_NULL:
        if (*p == 'n' && def->expect == GE_STRING_NULL) {
            return gate_literal(ctx, p, "null", 4);
        }
        if (*p != '"') {
            gate_bad_field(ctx, field, gate_kind(*p));
            return gate_skip(ctx, p, depth);
        }
        q = gate_string(ctx, p + 1, &esc);
        if (!q) {
            return NULL;
        }
        switch (field) {
        case GF_TITLE:
            row->has |= FR_ROW_TITLE;
            gate_keep(ctx, p + 1, q, esc, &row->title);
            break;
        case GF_USER:
            row->has |= FR_ROW_USER;
            gate_keep(ctx, p + 1, q, esc, &row->user);
            break;
        case GF_COMMENT:
            row->has |= FR_ROW_COMMENT;
            gate_keep(ctx, p + 1, q, esc, &row->comment);
            break;
        case GF_SERVER_NAME:
            row->has |= FR_ROW_SERVER_NAME;
            gate_keep(ctx, p + 1, q, esc, &row->server_name);
            break;
        case GF_LOG_TYPE:
            row->has |= FR_ROW_LOG_TYPE;
            gate_keep(ctx, p + 1, q, esc, &row->log_type);
            break;
        case GF_LOG_ACTION:
            row->has |= FR_ROW_LOG_ACTION;
            gate_keep(ctx, p + 1, q, esc, &row->log_action);
            break;
        case GF_M_DOMAIN:
            if (!esc) {
                ctx->canary = q - p - 1 == 6 && memcmp(p + 1, "canary", 6) == 0;
            } else if (q - p - 1 <= 72) {
                char tmp[72];
                size_t n = gate_unescape(p + 1, q, tmp);
                ctx->canary = n == 6 && memcmp(tmp, "canary", 6) == 0;
            } else {
                ctx->canary = 0;
            }
            break;
        default:
            break;
        }
        return q + 1;

    case GE_INT32:
    case GE_INT64:
    case GE_INT64_NULL:
        if (*p == 'n' && def->expect == GE_INT64_NULL) {
            return gate_literal(ctx, p, "null", 4);
        }
        if (*p != '-' && (*p < '0' || *p > '9')) {
            gate_bad_field(ctx, field, gate_kind(*p));
            return gate_skip(ctx, p, depth);
        }
        q = gate_number(ctx, p, &is_int, &in_range, &v);
        if (!q) {
            return NULL;
        }
        if (!is_int) {
            gate_bad_field(ctx, field, "a number with a fraction or exponent");
            return q;
        }
        if (!in_range || (def->expect == GE_INT32 && (v < INT32_MIN || v > INT32_MAX))) {
            gate_bad_field(ctx, field, "an integer out of range");
            return q;
        }
        switch (field) {
        case GF_ID:
            row->has |= FR_ROW_RC_ID;
            row->rc_id = v;
            break;
        case GF_NAMESPACE:
            row->has |= FR_ROW_NAMESPACE;
            row->ns = (int32_t)v;
            break;
        case GF_LOG_ID:
            row->has |= FR_ROW_LOG_ID;
            row->log_id = v;
            break;
        case GF_L_OLD:
            row->has |= FR_ROW_LENGTH_OLD;
            row->length_old = v;
            break;
        case GF_L_NEW:
            row->has |= FR_ROW_LENGTH_NEW;
            row->length_new = v;
            break;
        case GF_R_OLD:
            row->has |= FR_ROW_REVISION_OLD;
            row->revision_old = v;
            break;
        case GF_R_NEW:
            row->has |= FR_ROW_REVISION_NEW;
            row->revision_new = v;
            break;
        default:
            break;
        }
        return q;

    case GE_BOOL:
        if (*p != 't' && *p != 'f') {
            gate_bad_field(ctx, field, gate_kind(*p));
            return gate_skip(ctx, p, depth);
        }
        q = *p == 't' ? gate_literal(ctx, p, "true", 4) : gate_literal(ctx, p, "false", 5);
        switch (field) {
        case GF_BOT:
            row->has |= FR_ROW_BOT;
            row->bot = *p == 't';
            break;
        case GF_MINOR:
            row->has |= FR_ROW_MINOR;
            row->minor = *p == 't';
            break;
        case GF_PATROLLED:
            row->has |= FR_ROW_PATROLLED;
            row->patrolled = *p == 't';
            break;
        default:
            break;
        }
        return q;

    case GE_UUID:
    case GE_TIME:
    case GE_WIKI:
    case GE_TYPE: {
        uint8_t *state = field == GF_M_ID   ? &ctx->id
                         : field == GF_M_DT ? &ctx->dt
                         : field == GF_WIKI ? &ctx->wiki
                                            : &ctx->type;
        const char **why = field == GF_M_ID   ? &ctx->id_why
                           : field == GF_M_DT ? &ctx->dt_why
                           : field == GF_WIKI ? &ctx->wiki_why
                                              : &ctx->type_why;
        if (*p != '"') {
            *state = REQ_BAD;
            *why = gate_kind(*p);
            return gate_skip(ctx, p, depth);
        }
        q = gate_string(ctx, p + 1, &esc);
        if (!q) {
            return NULL;
        }
        *state = REQ_BAD;
        *why = NULL;
        if (field == GF_M_ID) {
            if (gate_keep(ctx, p + 1, q, esc, &row->meta_id) == 0 &&
                fr_gate_uuid(row->meta_id.s, row->meta_id.len, row->key) == FR_OK) {
                *state = REQ_OK;
            }
        } else if (field == GF_M_DT) {
            size_t mark = ctx->arena_len;
            if (gate_keep(ctx, p + 1, q, esc, &str) == 0 &&
                fr_time_parse_rfc3339(str.s, str.len, &row->event_us) == FR_OK) {
                *state = REQ_OK;
            }
            ctx->arena_len = mark; /* not kept: event_us is */
        } else if (field == GF_WIKI) {
            if (gate_keep(ctx, p + 1, q, esc, &row->wiki) == 0 && row->wiki.len >= 1 &&
                row->wiki.len <= FR_PROC_WIKI_MAX) {
                *state = REQ_OK;
            }
        } else {
            size_t mark = ctx->arena_len;
            if (gate_keep(ctx, p + 1, q, esc, &str) == 0) {
                static const char *const names[] = {"edit", "new", "log", "categorize",
                                                    "external"};
                for (int t = 0; t < 5; t++) {
                    if (strlen(names[t]) == str.len && memcmp(names[t], str.s, str.len) == 0) {
                        row->type = (enum fr_proc_type)(FR_TYPE_EDIT + t);
                        *state = REQ_OK;
                    }
                }
            }
            ctx->arena_len = mark; /* not kept: the enum is */
        }
        return q + 1;
    }
    }
    return gate_skip(ctx, p, depth);
}

/* Whether field f's name, then its closing quote, is at k: the name is
 * plain ASCII without quotes or backslashes, so those bytes are exactly
 * the member name gate_string and gate_lookup would have found. */
static inline int gate_key_at(const struct fr_gate *gate, int f, const char *k, const char *end)
{
#if GATE_HAVE_SPECIAL16
    /* two 16-byte compares against the key and its quote */
    if (end - k >= 32) {
        const __m128i *want = (const __m128i *)(const void *)gate->key_quoted[f];
        __m128i lo = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)k), want[0]);
        __m128i hi =
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(k + 16)), want[1]);
        uint32_t same = (uint32_t)_mm_movemask_epi8(lo) | (uint32_t)_mm_movemask_epi8(hi) << 16;
        return (same & gate->key_quoted_mask[f]) == gate->key_quoted_mask[f];
    }
#endif
    size_t n = gate_fields[f].key_len;
    if (!GATE_LITTLE_ENDIAN || end - k < 8 * GATE_KEY_WORDS || k[n] != '"') {
        return 0;
    }
    const uint64_t *m = gate->len_mask[n], *kw = gate->key_words[f];
    return (gate_load64(k) & m[0]) == kw[0] && (gate_load64(k + 8) & m[1]) == kw[1] &&
           (gate_load64(k + 16) & m[2]) == kw[2];
}

/* Walk a known object (p at '{'), dispatching each member on its name. */
static const char *gate_object(struct gate_ctx *ctx, const char *p, int depth, int obj)
{
    const char *end = ctx->end;
    p = gate_ws(p + 1, end);
    if (p < end && *p == '}') {
        return p + 1;
    }
    uint8_t *guess = &ctx->gate->next[GF_COUNT + obj];
    for (;;) {
        if (p >= end || *p != '"') {
            return gate_fail(ctx, p);
        }
        const char *k = p + 1, *q;
        int field;
        if (*guess && gate_key_at(ctx->gate, *guess - 1, k, end)) {
            field = *guess - 1;
            q = k + gate_fields[field].key_len;
        } else {
            int esc;
            q = gate_string(ctx, k, &esc);
            if (!q) {
                return NULL;
            }
            field = esc ? gate_lookup_escaped(ctx->gate, obj, k, (size_t)(q - k))
                        : gate_lookup(ctx->gate, obj, k, (size_t)(q - k), end);
            if (field >= 0) {
                *guess = (uint8_t)(field + 1);
            }
        }
        if (field >= 0) {
            guess = &ctx->gate->next[field];
        }
        /* Compact JSON (no whitespace around ':' and ',') takes the two
         * short tests; anything else the general path, to the same result. */
        p = q + 1;
        if (end - p >= 2 && p[0] == ':' && (unsigned char)p[1] > ' ') {
            p++;
        } else {
            p = gate_ws(p, end);
            if (p >= end || *p != ':') {
                return gate_fail(ctx, p);
            }
            p = gate_ws(p + 1, end);
        }
        p = field < 0 ? gate_skip(ctx, p, depth + 1) : gate_field(ctx, p, depth + 1, field);
        if (!p) {
            return NULL;
        }
        if (end - p >= 2 && p[0] == ',' && p[1] == '"') {
            p++;
            continue;
        }
        p = gate_ws(p, end);
        if (p >= end) {
            return gate_fail(ctx, p);
        }
        if (*p == '}') {
            return p + 1;
        }
        if (*p != ',') {
            return gate_fail(ctx, p);
        }
        p = gate_ws(p + 1, end);
    }
}

/* ------------------------------------------------------------------------ */
/* Verdict                                                                    */
/* ------------------------------------------------------------------------ */

/* A hex digit's value plus one, 0 for any other byte: a table lookup per
 * digit, and one test of all 32 at the end instead of a branch each. */
#define GATE_HEXV(c, v) [c] = (v) + 1
static const uint8_t gate_hexv[256] = {
    GATE_HEXV('0', 0),   GATE_HEXV('1', 1),   GATE_HEXV('2', 2),   GATE_HEXV('3', 3),
    GATE_HEXV('4', 4),   GATE_HEXV('5', 5),   GATE_HEXV('6', 6),   GATE_HEXV('7', 7),
    GATE_HEXV('8', 8),   GATE_HEXV('9', 9),   GATE_HEXV('a', 10),  GATE_HEXV('b', 11),
    GATE_HEXV('c', 12),  GATE_HEXV('d', 13),  GATE_HEXV('e', 14),  GATE_HEXV('f', 15),
    GATE_HEXV('A', 10),  GATE_HEXV('B', 11),  GATE_HEXV('C', 12),  GATE_HEXV('D', 13),
    GATE_HEXV('E', 14),  GATE_HEXV('F', 15),
};
#undef GATE_HEXV

int fr_gate_uuid(const char *s, size_t len, uint8_t key[16])
{
    if (len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') {
        return FR_EINVAL;
    }
    /* the byte offsets of the 16 digit pairs: 8-4-4-4-12 */
    static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
    const unsigned char *u = (const unsigned char *)s;
    unsigned bad = 0;
    for (int k = 0; k < 16; k++) {
        unsigned hi = gate_hexv[u[at[k]]], lo = gate_hexv[u[at[k] + 1]];
        bad |= (hi - 1) | (lo - 1); /* a 0 entry wraps to all ones */
        key[k] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    return bad > 15 ? FR_EINVAL : FR_OK;
}

static enum fr_gate_reason gate_required(uint8_t state, const char *why, const char *name,
                                         enum fr_gate_reason missing, enum fr_gate_reason bad,
                                         const char *value_rule, char *detail)
{
    if (state == REQ_ABSENT) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "%s is absent", name);
        return missing;
    }
    if (why) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "%s: expected string, got %s", name, why);
    } else {
        snprintf(detail, FR_GATE_DETAIL_MAX, "%s: %s", name, value_rule);
    }
    return bad;
}

static enum fr_gate_reason gate_verdict(struct gate_ctx *ctx, int is_object, const char *top_kind,
                                        const struct fr_proc_pos *pos, int64_t max_future_ms,
                                        char *detail)
{
    if (ctx->syntax) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "syntax error at byte %zu", ctx->syntax_at);
        return FR_GATE_NOT_JSON;
    }
    if (ctx->utf8) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "%s at byte %zu",
                 ctx->utf8 == 1 ? "invalid UTF-8" : "lone surrogate escape", ctx->utf8_at);
        return FR_GATE_BAD_UTF8;
    }
    if (!is_object) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "top-level value is %s, not an object", top_kind);
        return FR_GATE_NOT_OBJECT;
    }
    if (ctx->canary) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "meta.domain is \"canary\"");
        return FR_GATE_CANARY;
    }
    if (ctx->meta != REQ_OK) {
        if (ctx->meta == REQ_ABSENT) {
            snprintf(detail, FR_GATE_DETAIL_MAX, "meta is absent");
        } else {
            snprintf(detail, FR_GATE_DETAIL_MAX, "meta: expected object, got %s", ctx->meta_why);
        }
        return FR_GATE_MISSING_META;
    }
    if (ctx->id != REQ_OK) {
        return gate_required(ctx->id, ctx->id_why, "meta.id", FR_GATE_MISSING_META_ID,
                             FR_GATE_BAD_META_ID, "not a UUID (8-4-4-4-12 hex)", detail);
    }
    if (ctx->dt != REQ_OK) {
        return gate_required(ctx->dt, ctx->dt_why, "meta.dt", FR_GATE_MISSING_META_DT,
                             FR_GATE_BAD_META_DT, "not an RFC 3339 timestamp", detail);
    }
    if (ctx->wiki != REQ_OK) {
        return gate_required(ctx->wiki, ctx->wiki_why, "wiki", FR_GATE_MISSING_WIKI,
                             FR_GATE_BAD_WIKI, "empty or longer than 255 bytes", detail);
    }
    if (ctx->type != REQ_OK) {
        return gate_required(ctx->type, ctx->type_why, "type", FR_GATE_MISSING_TYPE,
                             FR_GATE_BAD_TYPE, "not one of edit, new, log, categorize, external",
                             detail);
    }
    if (ctx->dup_field >= 0) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "field %s appears twice",
                 gate_fields[ctx->dup_field].display);
        return FR_GATE_DUPLICATE_FIELD;
    }
    if (ctx->bad_field >= 0) {
        const struct gate_field_def *def = &gate_fields[ctx->bad_field];
        snprintf(detail, FR_GATE_DETAIL_MAX, "field %s: expected %s, got %s", def->display,
                 gate_expect_text[def->expect], ctx->bad_why);
        return FR_GATE_BAD_FIELD_TYPE;
    }
    if (ctx->arena_full) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "decoded strings exceed the arena");
        return FR_GATE_OVERSIZE;
    }
    /* Saturating: limit = ingest time + max_future, in microseconds. */
    int64_t limit = INT64_MAX;
    if (pos->ingest_ms < INT64_MAX / 1000 - max_future_ms && pos->ingest_ms > INT64_MIN / 1000) {
        limit = (pos->ingest_ms + max_future_ms) * 1000;
    }
    if (ctx->row->event_us > limit) {
        char when[32];
        fr_time_format_ms(ctx->row->event_us, when);
        snprintf(detail, FR_GATE_DETAIL_MAX,
                 "event time %s is %lld ms ahead of ingest time (max %lld)", when,
                 (long long)((ctx->row->event_us - limit) / 1000 + max_future_ms),
                 (long long)max_future_ms);
        return FR_GATE_FUTURE_EVENT;
    }
    detail[0] = 0;
    return FR_GATE_OK;
}

/* copy_to, when not NULL: where the record's bytes are copied as the walk
 * starts; the walk then reads the copy, so the row points into it. */
static enum fr_gate_reason gate_decode(struct fr_gate *gate, const struct fr_proc_pos *pos,
                                       const char *src, size_t len, struct fr_row *row,
                                       char detail[FR_GATE_DETAIL_MAX], char *arena,
                                       size_t arena_cap, int in_place, char *copy_to)
{
    int index = gate->indexed && len <= FR_GATE_INDEX_MAX && len <= gate->opts.max_event_bytes;
    if (copy_to && !index && len) {
        memcpy(copy_to, src, len);
    }
    const char *json = copy_to ? copy_to : src;
    memset(row, 0, sizeof *row);
    row->partition = pos->partition;
    row->offset = pos->offset;
    row->ingest_ms = pos->ingest_ms;
    if (len > gate->opts.max_event_bytes) {
        snprintf(detail, FR_GATE_DETAIL_MAX, "record is %zu bytes, cap %zu", len,
                 gate->opts.max_event_bytes);
        return FR_GATE_OVERSIZE;
    }
    struct gate_ctx ctx = {.gate = gate,
                           .base = json,
                           .end = json + len,
                           .row = row,
                           .arena = arena,
                           .arena_cap = arena_cap,
                           .in_place = in_place,
                           .dup_field = -1,
                           .bad_field = -1};
    if (index && gate_index(src, len, gate->sbits, copy_to)) {
        ctx.sbits = gate->sbits;
        ctx.swords = (len + 63) / 64;
        gate->paths.indexed++;
    } else {
        gate->paths.scalar++;
    }
    const char *p = gate_ws(json, ctx.end);
    int is_object = p < ctx.end && *p == '{';
    const char *top_kind = p < ctx.end ? gate_kind(*p) : "nothing";
    p = is_object ? gate_object(&ctx, p, 0, GO_TOP) : gate_skip(&ctx, p, 0);
    if (p && gate_ws(p, ctx.end) != ctx.end) {
        gate_fail(&ctx, gate_ws(p, ctx.end));
    }
    return gate_verdict(&ctx, is_object, top_kind, pos, gate->opts.max_future_ms, detail);
}

enum fr_gate_reason fr_gate_decode(struct fr_gate *gate, const struct fr_proc_pos *pos,
                                   const char *json, size_t len, struct fr_row *row,
                                   char detail[FR_GATE_DETAIL_MAX])
{
    return gate_decode(gate, pos, json, len, row, detail, gate->arena, gate->opts.max_event_bytes,
                       0, NULL);
}

enum fr_gate_reason fr_gate_decode_to(struct fr_gate *gate, const struct fr_proc_pos *pos,
                                      const char *json, size_t len, struct fr_row *row,
                                      char detail[FR_GATE_DETAIL_MAX], char *arena)
{
    /* Decoded strings never outgrow their raw bytes (invariant 3), so len
     * bytes of arena always suffice; strings without escapes are not even
     * copied: they point into json, which the caller keeps with the row. */
    return gate_decode(gate, pos, json, len, row, detail, arena, len, 1, NULL);
}

enum fr_gate_reason fr_gate_copy_decode_to(struct fr_gate *gate, const struct fr_proc_pos *pos,
                                           const char *src, char *dst, size_t len,
                                           struct fr_row *row, char detail[FR_GATE_DETAIL_MAX],
                                           char *arena)
{
    return gate_decode(gate, pos, src, len, row, detail, arena, len, 1, dst);
}

int fr_gate_set_indexed(struct fr_gate *gate, int on)
{
    gate->indexed = on && gate_index_supported();
    return gate->indexed;
}

struct fr_gate_paths fr_gate_paths(const struct fr_gate *gate)
{
    return gate->paths;
}

/* ------------------------------------------------------------------------ */
/* docs/QUALITY.md                                                            */
/* ------------------------------------------------------------------------ */

int fr_gate_quality_md(struct fr_buf *out)
{
    int rc = fr_buf_puts(
        out,
        "# Data quality: why a record goes to `dlq`\n"
        "\n"
        "<!-- Generated from FR_GATE_REASONS and the field table in src/process/gate.c\n"
        "     by fr_gate_quality_md(); a unit test fails when this file drifts. -->\n"
        "\n"
        "Every log record passes the gate in `src/process/gate.c` once. It either becomes a\n"
        "typed row (bronze, then silver or late_arrivals) or goes to `dlq` with one reason\n"
        "from the table below and a short detail (`field namespace: expected integer (32-bit),\n"
        "got string`). When a record breaks several rules, the reason is the **first row of\n"
        "the table** that applies, wherever the faults sit in the record. The reason names\n"
        "are a contract (the `dlq.reason` column, metric labels, checkpoints); rows are added,\n"
        "never renamed.\n"
        "\n"
        "| # | reason | when |\n"
        "|---|---|---|\n");
    for (int r = 1; rc == FR_OK && r < FR_GATE_REASON_COUNT; r++) {
        rc = fr_buf_printf(out, "| %d | `%s` | %s |\n", r, gate_reason_names[r],
                           gate_reason_descs[r]);
    }
    if (rc == FR_OK) {
        rc = fr_buf_puts(
            out, "\n"
                 "## Fields checked\n"
                 "\n"
                 "Unknown members are allowed anywhere (`additionalProperties: true`); they are\n"
                 "only checked to be valid JSON and UTF-8. A member of the table below with\n"
                 "another JSON type is `bad_field_type` (the four required fields have their own\n"
                 "reasons). Where the table allows null, null means the same as absent. Every\n"
                 "field except the required four may be absent; the silver column is then null.\n"
                 "\n"
                 "| field | JSON type | silver column |\n"
                 "|---|---|---|\n");
    }
    for (int f = 0; rc == FR_OK && f < GF_COUNT; f++) {
        const struct gate_field_def *def = &gate_fields[f];
        int required = def->expect >= GE_UUID || f == GF_META;
        rc = fr_buf_printf(out, "| `%s` | %s%s | %s |\n", def->display,
                           gate_expect_text[def->expect], required ? ", **required**" : "",
                           def->column ? def->column : "-");
    }
    return rc;
}
