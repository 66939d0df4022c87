/*
 * utf8.h — UTF-8 encoding and validation shared by the JSON scanner, the
 * quality gate and the table writers. Pure functions: thread-safe.
 */
#ifndef FR_UTF8_H
#define FR_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Encode code point cp (<= 0x10FFFF) into out (room for 4 bytes); returns
 * the number of bytes written. Surrogates are encoded as their 3-byte form;
 * callers that must reject them check first. */
size_t fr_utf8_put(char *out, uint32_t cp);
/* 1 when s[0..len) is valid UTF-8 (no overlong forms, no surrogates,
 * nothing past U+10FFFF), else 0. */
int fr_utf8_valid(const unsigned char *s, size_t len);

#endif
