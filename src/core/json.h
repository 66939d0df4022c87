/*
 * json.h — a small strict JSON scanner over a byte range, no allocation.
 *
 * It validates as it skips (RFC 8259 grammar: strings with escapes and no
 * raw control characters, numbers, literals, nesting up to FR_JSON_MAX_DEPTH)
 * and finds members of objects, so a caller can pull a few fields out of
 * an event in one pass without building a tree. Strings are returned raw
 * (between the quotes, escapes intact); fr_json_unescape decodes them.
 * Pure functions: thread-safe.
 */
#ifndef FR_JSON_H
#define FR_JSON_H

#include <stddef.h>
#include <stdint.h>

#define FR_JSON_MAX_DEPTH 64

enum fr_json_type {
    FR_JSON_NONE = 0, FR_JSON_NULL, FR_JSON_FALSE, FR_JSON_TRUE,
    FR_JSON_NUMBER, FR_JSON_STRING, FR_JSON_ARRAY, FR_JSON_OBJECT
};

/* A value: [start, end) covers the whole token; for strings, the bytes
 * between the quotes (raw). */
struct fr_json_val {
    enum fr_json_type type;
    const char *start;
    const char *end;
};

/* Skip whitespace. */
const char *fr_json_ws(const char *p, const char *end);
/* Parse the value at p (after whitespace) into val; return the byte after
 * it, or NULL when the text is not valid JSON. */
const char *fr_json_value(const char *p, const char *end, struct fr_json_val *val);
/* Validate that [p, end) is exactly one JSON value (with whitespace around). */
int fr_json_validate(const char *p, const char *end);
/* In the object val, find member key (compared against the raw member name).
 * Returns 1 and fills out when found, 0 when absent, FR_EJSON when invalid. */
int fr_json_member(const struct fr_json_val *obj, const char *key, struct fr_json_val *out);
/* Decode the raw string of val into out (at most outcap bytes, UTF-8).
 * Returns the decoded length, or FR_EJSON / FR_ETOOBIG. Lone surrogates
 * are an error. */
int fr_json_unescape(const struct fr_json_val *val, char *out, size_t outcap);
/* fr_json_unescape into a C string: at most outcap - 1 bytes and a NUL
 * (fr_json_unescape itself does not terminate). Returns the length, or
 * FR_EJSON / FR_ETOOBIG (then out is ""); outcap 0 is FR_ETOOBIG. */
int fr_json_cstr(const struct fr_json_val *val, char *out, size_t outcap);
/* Parse an integer value exactly (no fraction, no exponent, fits int64). */
int fr_json_int64(const struct fr_json_val *val, int64_t *out);
/* Compare a string value with a plain C string (no escapes in val). */
int fr_json_str_eq(const struct fr_json_val *val, const char *s);

#endif
