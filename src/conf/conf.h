/*
 * conf.h — freshet's configuration: a typed struct generated from the
 * option table in conf_table.h, loaded from defaults, then an INI file
 * (libinih), then the environment (secrets), then command-line overrides,
 * in that order. Unknown keys and out-of-range values are errors that name
 * the key. Loaded once by main before any thread starts; read-only after.
 */
#ifndef FR_CONF_H
#define FR_CONF_H

#include "conf/conf_table.h"

#include <stdint.h>
#include <stdio.h>

#define FR_CONF_SECRET 1

enum fr_conf_origin { FR_CONF_DEFAULT = 0, FR_CONF_FILE, FR_CONF_ENV, FR_CONF_FLAG };

struct fr_conf {
#define FR_CONF_FIELD_INT(sec, key, type, def, lo, hi, flags, help) int64_t sec##_##key;
#define FR_CONF_FIELD_STR(sec, key, type, def, lo, hi, flags, help) char *sec##_##key;
#define FR_CONF_FIELD(sec, key, type, def, lo, hi, flags, help) \
    FR_CONF_FIELD_##type(sec, key, type, def, lo, hi, flags, help)
    FR_CONF_TABLE(FR_CONF_FIELD)
#undef FR_CONF_FIELD
#undef FR_CONF_FIELD_INT
#undef FR_CONF_FIELD_STR
    enum fr_conf_origin origin[128]; /* per option, in table order */
};

/* Fill conf with the defaults. Strings are owned by conf. */
int fr_conf_init(struct fr_conf *conf);
/* Release the strings. Accepts NULL. */
void fr_conf_free(struct fr_conf *conf);
/* Apply an INI file. On error writes a message naming the file, line and
 * key into err (errlen bytes) and returns FR_ECONFIG. */
int fr_conf_load_file(struct fr_conf *conf, const char *path, char *err, size_t errlen);
/* Apply FRESHET_<SECTION>_<KEY> variables for secret options. */
int fr_conf_load_env(struct fr_conf *conf, char *err, size_t errlen);
/* Apply one "section.key=value" override (from --set or a dedicated flag). */
int fr_conf_set(struct fr_conf *conf, const char *assignment, enum fr_conf_origin origin,
                char *err, size_t errlen);
/* Print the effective configuration as INI, with each value's origin;
 * secrets print as "(set)" or "(unset)", never their value. */
void fr_conf_print(const struct fr_conf *conf, FILE *out);
/* Print docs/CONFIGURATION.md generated from the table. */
void fr_conf_print_markdown(FILE *out);

#endif
