/*
 * json.c — the validating scanner behind json.h. Recursive descent with a
 * depth bound, so hostile input cannot exhaust the stack. Never reads past
 * `end`.
 */
#include "core/json.h"

#include "core/err.h"
#include "core/utf8.h"

#include <string.h>

const char *fr_json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }
    return p;
}

static int json_hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* p is just after the opening quote; return the closing quote or NULL. */
/* Nonzero when one of the 8 bytes in w is '"', '\\' or below 0x20 (may also
 * flag a byte after such a one: a filter, the byte loop decides). */
static inline uint64_t json_word_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    return ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs) | ((w - ones * 0x20) & ~w & highs);
}

static const char *json_string_end(const char *p, const char *end)
{
    while (p < end) {
        /* Ordinary bytes 8 at a time: strings are most of an event. */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, sizeof w);
            if (json_word_special(w)) {
                break;
            }
            p += 8;
        }
        if (p >= end) {
            break;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            return p;
        }
        if (c < 0x20) {
            return NULL;
        }
        if (c != '\\') {
            p++;
            continue;
        }
        if (p + 1 >= end) {
            return NULL;
        }
        char e = p[1];
        if (e == 'u') {
            if (end - p < 6 || json_hex(p[2]) < 0 || json_hex(p[3]) < 0 || json_hex(p[4]) < 0 ||
                json_hex(p[5]) < 0) {
                return NULL;
            }
            p += 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                   e == 'r' || e == 't') {
            p += 2;
        } else {
            return NULL;
        }
    }
    return NULL;
}

static const char *json_number_end(const char *p, const char *end)
{
    if (p < end && *p == '-') {
        p++;
    }
    if (p >= end) {
        return NULL;
    }
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        p++;
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == d) {
            return NULL;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == d) {
            return NULL;
        }
    }
    return p;
}

static const char *json_value_depth(const char *p, const char *end, struct fr_json_val *val,
                                    int depth);

static const char *json_container(const char *p, const char *end, int is_obj, int depth)
{
    char close = is_obj ? '}' : ']';
    p = fr_json_ws(p + 1, end);
    if (p < end && *p == close) {
        return p + 1;
    }
    for (;;) {
        struct fr_json_val v;
        if (is_obj) {
            if (p >= end || *p != '"') {
                return NULL;
            }
            const char *q = json_string_end(p + 1, end);
            if (!q) {
                return NULL;
            }
            p = fr_json_ws(q + 1, end);
            if (p >= end || *p != ':') {
                return NULL;
            }
            p = fr_json_ws(p + 1, end);
        }
        p = json_value_depth(p, end, &v, depth + 1);
        if (!p) {
            return NULL;
        }
        p = fr_json_ws(p, end);
        if (p >= end) {
            return NULL;
        }
        if (*p == close) {
            return p + 1;
        }
        if (*p != ',') {
            return NULL;
        }
        p = fr_json_ws(p + 1, end);
    }
}

static const char *json_value_depth(const char *p, const char *end, struct fr_json_val *val,
                                    int depth)
{
    if (depth > FR_JSON_MAX_DEPTH || p >= end) {
        return NULL;
    }
    const char *q;
    val->start = p;
    switch (*p) {
    case '{':
    case '[':
        val->type = *p == '{' ? FR_JSON_OBJECT : FR_JSON_ARRAY;
        q = json_container(p, end, *p == '{', depth);
        val->end = q;
        return q;
    case '"':
        q = json_string_end(p + 1, end);
        if (!q) {
            return NULL;
        }
        val->type = FR_JSON_STRING;
        val->start = p + 1;
        val->end = q;
        return q + 1;
    case 't':
        if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
            val->type = FR_JSON_TRUE;
            val->end = p + 4;
            return p + 4;
        }
        return NULL;
    case 'f':
        if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
            val->type = FR_JSON_FALSE;
            val->end = p + 5;
            return p + 5;
        }
        return NULL;
    case 'n':
        if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
            val->type = FR_JSON_NULL;
            val->end = p + 4;
            return p + 4;
        }
        return NULL;
    default:
        q = json_number_end(p, end);
        if (!q) {
            return NULL;
        }
        val->type = FR_JSON_NUMBER;
        val->end = q;
        return q;
    }
}

const char *fr_json_value(const char *p, const char *end, struct fr_json_val *val)
{
    return json_value_depth(fr_json_ws(p, end), end, val, 0);
}

int fr_json_validate(const char *p, const char *end)
{
    struct fr_json_val v;
    const char *q = fr_json_value(p, end, &v);
    if (!q || fr_json_ws(q, end) != end) {
        return FR_EJSON;
    }
    return FR_OK;
}

int fr_json_member(const struct fr_json_val *obj, const char *key, struct fr_json_val *out)
{
    if (obj->type != FR_JSON_OBJECT) {
        return FR_EJSON;
    }
    size_t klen = strlen(key);
    const char *end = obj->end;
    const char *p = fr_json_ws(obj->start + 1, end);
    if (p < end && *p == '}') {
        return 0;
    }
    while (p < end) {
        if (*p != '"') {
            return FR_EJSON;
        }
        const char *q = json_string_end(p + 1, end);
        if (!q) {
            return FR_EJSON;
        }
        int match = (size_t)(q - p - 1) == klen && memcmp(p + 1, key, klen) == 0;
        p = fr_json_ws(q + 1, end);
        if (p >= end || *p != ':') {
            return FR_EJSON;
        }
        struct fr_json_val v;
        p = fr_json_value(p + 1, end, &v);
        if (!p) {
            return FR_EJSON;
        }
        if (match) {
            *out = v;
            return 1;
        }
        p = fr_json_ws(p, end);
        if (p < end && *p == ',') {
            p = fr_json_ws(p + 1, end);
            continue;
        }
        break;
    }
    return 0;
}


static uint32_t json_hex4(const char *s)
{
    return (uint32_t)(json_hex(s[0]) << 12 | json_hex(s[1]) << 8 | json_hex(s[2]) << 4 |
                      json_hex(s[3]));
}

int fr_json_unescape(const struct fr_json_val *val, char *out, size_t outcap)
{
    if (val->type != FR_JSON_STRING) {
        return FR_EJSON;
    }
    size_t n = 0;
    for (const char *p = val->start; p < val->end;) {
        if (*p != '\\') {
            const char *bs = memchr(p, '\\', (size_t)(val->end - p));
            size_t run = (size_t)((bs ? bs : val->end) - p);
            if (n + run > outcap) {
                return FR_ETOOBIG;
            }
            memcpy(out + n, p, run);
            n += run;
            p += run;
            continue;
        }
        char e = p[1];
        char tmp[4];
        size_t len = 1;
        switch (e) {
        case '"': tmp[0] = '"'; break;
        case '\\': tmp[0] = '\\'; break;
        case '/': tmp[0] = '/'; break;
        case 'b': tmp[0] = '\b'; break;
        case 'f': tmp[0] = '\f'; break;
        case 'n': tmp[0] = '\n'; break;
        case 'r': tmp[0] = '\r'; break;
        case 't': tmp[0] = '\t'; break;
        case 'u': {
            uint32_t cp = json_hex4(p + 2);
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (val->end - p < 6 || p[0] != '\\' || p[1] != 'u') {
                    return FR_EJSON;
                }
                uint32_t lo = json_hex4(p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    return FR_EJSON;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return FR_EJSON;
            }
            len = fr_utf8_put(tmp, cp);
            if (n + len > outcap) {
                return FR_ETOOBIG;
            }
            memcpy(out + n, tmp, len);
            n += len;
            continue;
        }
        default: return FR_EJSON;
        }
        if (n + 1 > outcap) {
            return FR_ETOOBIG;
        }
        out[n++] = tmp[0];
        p += 2;
    }
    return (int)n;
}

int fr_json_int64(const struct fr_json_val *val, int64_t *out)
{
    if (val->type != FR_JSON_NUMBER) {
        return FR_EJSON;
    }
    const char *p = val->start;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    uint64_t v = 0;
    for (; p < val->end; p++) {
        if (*p < '0' || *p > '9') {
            return FR_ERANGE; /* fraction or exponent */
        }
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return FR_ERANGE;
        }
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) {
        return FR_ERANGE;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return FR_OK;
}

int fr_json_str_eq(const struct fr_json_val *val, const char *s)
{
    size_t len = strlen(s);
    return val->type == FR_JSON_STRING && (size_t)(val->end - val->start) == len &&
           memcmp(val->start, s, len) == 0;
}

int fr_json_cstr(const struct fr_json_val *val, char *out, size_t outcap)
{
    if (outcap == 0) {
        return FR_ETOOBIG;
    }
    int n = fr_json_unescape(val, out, outcap - 1);
    out[n < 0 ? 0 : n] = 0;
    return n;
}
