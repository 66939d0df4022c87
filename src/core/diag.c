/*
 * diag.c — stderr diagnostics. One fprintf per line so lines from several
 * threads do not interleave mid-line (stdio locks the stream per call).
 */
#include "core/diag.h"

#include "core/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static enum fr_diag_level diag_level = FR_DIAG_INFO;

void fr_diag_set_level(enum fr_diag_level level) { diag_level = level; }
enum fr_diag_level fr_diag_get_level(void) { return diag_level; }

void fr_diag(enum fr_diag_level level, const char *component, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > diag_level) {
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char ts[32];
    fr_time_format_ms(fr_wall_us(), ts);
    fprintf(stderr, "%s freshet[%ld] %s: %s: %s\n", ts, (long)getpid(), component,
            names[level], msg);
}
