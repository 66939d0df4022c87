/*
 * diag.h — diagnostic messages on stderr, one line each:
 *   2026-11-29T15:04:05.123Z freshet[1234] ingest: warn: reconnecting in 1.2 s
 * The level threshold is process-wide, set once by main before threads start.
 * Never pass secrets to these functions.
 */
#ifndef FR_DIAG_H
#define FR_DIAG_H

enum fr_diag_level { FR_DIAG_ERROR = 0, FR_DIAG_WARN, FR_DIAG_INFO, FR_DIAG_DEBUG };

void fr_diag_set_level(enum fr_diag_level level);
enum fr_diag_level fr_diag_get_level(void);
void fr_diag(enum fr_diag_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define fr_error(comp, ...) fr_diag(FR_DIAG_ERROR, (comp), __VA_ARGS__)
#define fr_warn(comp, ...) fr_diag(FR_DIAG_WARN, (comp), __VA_ARGS__)
#define fr_info(comp, ...) fr_diag(FR_DIAG_INFO, (comp), __VA_ARGS__)
#define fr_debug(comp, ...) fr_diag(FR_DIAG_DEBUG, (comp), __VA_ARGS__)

#endif
