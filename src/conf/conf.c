/*
 * conf.c — loading and checking configuration against the option table.
 * Integers accept an optional binary suffix (k, m, g: 4m = 4 MiB).
 */
#include "conf/conf.h"

#include "core/err.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum conf_type { CONF_INT, CONF_STR };

struct conf_opt {
    const char *section;
    const char *key;
    enum conf_type type;
    const char *def;
    int64_t lo, hi;
    int flags;
    const char *help;
    size_t offset;
};

static const struct conf_opt conf_opts[] = {
#define FR_CONF_ROW(sec, key, type, def, lo, hi, flags, help)                              \
    {#sec, #key, CONF_##type, def, (lo), (hi), (flags), help, offsetof(struct fr_conf, sec##_##key)},
    FR_CONF_TABLE(FR_CONF_ROW)
#undef FR_CONF_ROW
};
#define CONF_NOPTS (sizeof conf_opts / sizeof conf_opts[0])
_Static_assert(CONF_NOPTS <= 128, "grow fr_conf.origin");

static const struct conf_opt *conf_find(const char *section, const char *key, size_t *index)
{
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        if (strcmp(conf_opts[i].section, section) == 0 && strcmp(conf_opts[i].key, key) == 0) {
            *index = i;
            return &conf_opts[i];
        }
    }
    return NULL;
}

static int conf_parse_int(const char *text, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno) {
        return FR_ECONFIG;
    }
    int64_t mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = FR_KiB; end++; break;
    case 'm': mult = FR_MiB; end++; break;
    case 'g': mult = FR_GiB; end++; break;
    default: break;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    if (*end) {
        return FR_ECONFIG;
    }
    if (v > INT64_MAX / mult || v < INT64_MIN / mult) {
        return FR_ECONFIG;
    }
    *out = (int64_t)v * mult;
    return FR_OK;
}

static int conf_assign(struct fr_conf *conf, size_t index, const char *value,
                       enum fr_conf_origin origin, char *err, size_t errlen)
{
    const struct conf_opt *opt = &conf_opts[index];
    char *field = (char *)conf + opt->offset;
    if (opt->type == CONF_INT) {
        int64_t v;
        if (conf_parse_int(value, &v) < 0) {
            snprintf(err, errlen, "%s.%s: \"%s\" is not an integer", opt->section, opt->key,
                     value);
            return FR_ECONFIG;
        }
        if (v < opt->lo || v > opt->hi) {
            snprintf(err, errlen, "%s.%s: %lld is out of range [%lld, %lld]", opt->section,
                     opt->key, (long long)v, (long long)opt->lo, (long long)opt->hi);
            return FR_ECONFIG;
        }
        memcpy(field, &v, sizeof v);
    } else {
        char *copy = strdup(value);
        if (!copy) {
            return FR_ENOMEM;
        }
        char *old;
        memcpy(&old, field, sizeof old);
        free(old);
        memcpy(field, &copy, sizeof copy);
    }
    conf->origin[index] = origin;
    return FR_OK;
}

int fr_conf_init(struct fr_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    char err[256];
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        int rc = conf_assign(conf, i, conf_opts[i].def, FR_CONF_DEFAULT, err, sizeof err);
        if (rc < 0) {
            return rc; /* a default outside its own range: a bug caught by the unit test */
        }
    }
    return FR_OK;
}

void fr_conf_free(struct fr_conf *conf)
{
    if (!conf) {
        return;
    }
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        if (conf_opts[i].type == CONF_STR) {
            char **field = (char **)((char *)conf + conf_opts[i].offset);
            free(*field);
            *field = NULL;
        }
    }
}

static void conf_env_name(const struct conf_opt *opt, char *out, size_t outlen)
{
    snprintf(out, outlen, "FRESHET_%s_%s", opt->section, opt->key);
    for (char *p = out; *p; p++) {
        *p = (char)toupper((unsigned char)*p);
    }
}

struct conf_ini_ctx {
    struct fr_conf *conf;
    const char *path;
    char *err;
    size_t errlen;
    int rc;
};

/* Debian's inih is built without INI_HANDLER_LINENO, so errors name the
 * file and the key but not the line. */
static int conf_ini_handler(void *user, const char *section, const char *key, const char *value)
{
    struct conf_ini_ctx *ctx = user;
    size_t index;
    const struct conf_opt *opt = conf_find(section, key, &index);
    if (!opt) {
        snprintf(ctx->err, ctx->errlen, "%s: unknown key %s.%s", ctx->path,
                 section[0] ? section : "(no section)", key);
        ctx->rc = FR_ECONFIG;
        return 0;
    }
    if (opt->flags & FR_CONF_SECRET) {
        char name[128];
        conf_env_name(opt, name, sizeof name);
        snprintf(ctx->err, ctx->errlen,
                 "%s: %s.%s is a secret and may not be in a file; set %s in the environment",
                 ctx->path, section, key, name);
        ctx->rc = FR_ECONFIG;
        return 0;
    }
    char msg[256];
    int rc = conf_assign(ctx->conf, index, value, FR_CONF_FILE, msg, sizeof msg);
    if (rc < 0) {
        snprintf(ctx->err, ctx->errlen, "%s: %s", ctx->path, msg);
        ctx->rc = rc;
        return 0;
    }
    return 1;
}

/* inih reads a line into a buffer of INI_MAX_LINE bytes and parses what
 * did not fit as the next line, so the tail of a long value could set
 * another key; it also stops a line at a NUL byte. The file is therefore
 * read whole (bounded) and refused, naming the line, when a line would not
 * fit or holds a NUL, before inih sees it. */
#define CONF_FILE_MAX (1 << 20)
#define CONF_LINE_MAX (INI_MAX_LINE - 3) /* inih: '\r', '\n' and '\0' */

static int conf_check_lines(const char *text, size_t len, const char *path, char *err,
                            size_t errlen)
{
    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == 0) {
            snprintf(err, errlen, "%s:%d: NUL byte in the file", path, line);
            return FR_ECONFIG;
        }
        if (i == len || text[i] == '\n') {
            size_t n = i - start;
            if (n > 0 && text[i - 1] == '\r') {
                n--;
            }
            if (n > CONF_LINE_MAX) {
                snprintf(err, errlen, "%s:%d: line longer than %d bytes", path, line,
                         CONF_LINE_MAX);
                return FR_ECONFIG;
            }
            line++;
            start = i + 1;
        }
    }
    return FR_OK;
}

int fr_conf_load_file(struct fr_conf *conf, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = FR_OK;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return FR_ECONFIG;
    }
    text = malloc(CONF_FILE_MAX + 1);
    if (!text) {
        rc = FR_ENOMEM;
        goto cleanup;
    }
    len = fread(text, 1, CONF_FILE_MAX + 1, f);
    if (ferror(f) || len > CONF_FILE_MAX) {
        snprintf(err, errlen, "%s: %s", path,
                 ferror(f) ? "read error" : "larger than 1 MiB, not a configuration file");
        rc = FR_ECONFIG;
        goto cleanup;
    }
    text[len] = 0;
    rc = conf_check_lines(text, len, path, err, errlen);
    if (rc < 0) {
        goto cleanup;
    }
    struct conf_ini_ctx ctx = {conf, path, err, errlen, FR_OK};
    int line = ini_parse_string(text, conf_ini_handler, &ctx);
    if (ctx.rc < 0) {
        rc = ctx.rc;
    } else if (line != 0) {
        snprintf(err, errlen, "%s:%d: syntax error", path, line);
        rc = FR_ECONFIG;
    }

cleanup:
    free(text);
    fclose(f);
    return rc;
}

int fr_conf_load_env(struct fr_conf *conf, char *err, size_t errlen)
{
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        if (!(conf_opts[i].flags & FR_CONF_SECRET)) {
            continue;
        }
        char name[128];
        conf_env_name(&conf_opts[i], name, sizeof name);
        const char *value = getenv(name);
        if (value) {
            int rc = conf_assign(conf, i, value, FR_CONF_ENV, err, errlen);
            if (rc < 0) {
                return rc;
            }
        }
    }
    return FR_OK;
}

int fr_conf_set(struct fr_conf *conf, const char *assignment, enum fr_conf_origin origin,
                char *err, size_t errlen)
{
    const char *dot = strchr(assignment, '.');
    const char *eq = strchr(assignment, '=');
    if (!dot || !eq || dot > eq) {
        snprintf(err, errlen, "\"%s\": expected section.key=value", assignment);
        return FR_ECONFIG;
    }
    char section[64], key[64];
    size_t slen = (size_t)(dot - assignment), klen = (size_t)(eq - dot - 1);
    if (slen >= sizeof section || klen >= sizeof key) {
        snprintf(err, errlen, "\"%s\": key too long", assignment);
        return FR_ECONFIG;
    }
    memcpy(section, assignment, slen);
    section[slen] = 0;
    memcpy(key, dot + 1, klen);
    key[klen] = 0;
    size_t index;
    const struct conf_opt *opt = conf_find(section, key, &index);
    if (!opt) {
        snprintf(err, errlen, "unknown key %s.%s", section, key);
        return FR_ECONFIG;
    }
    if (opt->flags & FR_CONF_SECRET) {
        char name[128];
        conf_env_name(opt, name, sizeof name);
        snprintf(err, errlen, "%s.%s is a secret: set %s in the environment", section, key, name);
        return FR_ECONFIG;
    }
    return conf_assign(conf, index, eq + 1, origin, err, errlen);
}

void fr_conf_print(const struct fr_conf *conf, FILE *out)
{
    static const char *origins[] = {"default", "file", "environment", "flag"};
    const char *section = "";
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        const struct conf_opt *opt = &conf_opts[i];
        if (strcmp(section, opt->section) != 0) {
            fprintf(out, "%s[%s]\n", i ? "\n" : "", opt->section);
            section = opt->section;
        }
        const char *field = (const char *)conf + opt->offset;
        if (opt->type == CONF_INT) {
            int64_t v;
            memcpy(&v, field, sizeof v);
            fprintf(out, "%s = %lld", opt->key, (long long)v);
        } else {
            const char *s;
            memcpy(&s, field, sizeof s);
            if (opt->flags & FR_CONF_SECRET) {
                fprintf(out, "# %s = %s", opt->key, s && *s ? "(set)" : "(unset)");
            } else {
                fprintf(out, "%s = %s", opt->key, s ? s : "");
            }
        }
        fprintf(out, "    ; %s\n", origins[conf->origin[i]]);
    }
}

void fr_conf_print_markdown(FILE *out)
{
    fprintf(out, "# Configuration\n\n"
                 "Generated from `src/conf/conf_table.h` by `freshet config --markdown`; "
                 "a test fails when this file drifts from the table.\n\n"
                 "freshet reads one INI file (`--config FILE`), then the environment for "
                 "secrets, then command-line overrides (`--set section.key=value` and the "
                 "commands' own flags), in that order. Unknown keys and out-of-range values are "
                 "errors that name the key; so is a line of the file longer than 197 bytes. Integers take an optional `k`, `m` or `g` suffix "
                 "(powers of 1024). `freshet config` prints the effective configuration and "
                 "where each value came from.\n");
    const char *section = "";
    for (size_t i = 0; i < CONF_NOPTS; i++) {
        const struct conf_opt *opt = &conf_opts[i];
        if (strcmp(section, opt->section) != 0) {
            fprintf(out, "\n## [%s]\n\n| key | type | default | range | description |\n"
                         "|---|---|---|---|---|\n",
                    opt->section);
            section = opt->section;
        }
        char range[64] = "";
        if (opt->type == CONF_INT) {
            snprintf(range, sizeof range, "%lld … %lld", (long long)opt->lo, (long long)opt->hi);
        }
        char env[128] = "";
        if (opt->flags & FR_CONF_SECRET) {
            conf_env_name(opt, env, sizeof env);
        }
        fprintf(out, "| `%s` | %s | %s%s%s | %s | %s%s%s%s |\n", opt->key,
                opt->type == CONF_INT ? "integer" : "string", opt->def[0] ? "`" : "",
                opt->def[0] ? opt->def : "(empty)", opt->def[0] ? "`" : "", range, opt->help,
                env[0] ? " Set with `" : "", env, env[0] ? "`." : "");
    }
}
