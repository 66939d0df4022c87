/*
 * rest_schema.c — schema evolution of a table behind an Iceberg REST
 * catalog (fr_ice_rest_evolve, rest.h): the columns a table definition
 * declares after the table's last one are appended with their declared
 * field ids, the REST counterpart of fr_ice_add_column (ADR 0057, 0059).
 *
 * Invariants:
 *   1. A column keeps its field id: a declared column present under another
 *      id, a missing required column, or a missing column whose declared id
 *      is not the next the table would assign (last-column-id + 1, + 2 ...)
 *      is refused (FR_ECONFIG) before anything is sent.
 *   2. All the missing columns arrive in one commit, as one new schema that
 *      becomes current, so no reader sees half of them.
 *   3. The commit is a compare-and-swap on the schema the plan was made
 *      from (assert-current-schema-id, assert-last-assigned-field-id), so
 *      a racing writer's change makes it 409, never a second schema.
 *
 *   LOAD ─► PLAN ─ nothing missing ─────────────────────────────► FR_OK
 *             │ refused (invariant 1) ─────────────────────────► FR_ECONFIG
 *             ▼
 *           COMMIT add-schema + set-current-schema ─200─────────► FR_OK
 *             ├─409 (another writer moved the table) ─► LOAD again (backoff)
 *             ├─5xx / lost after sending (outcome unknown) ─► LOAD again:
 *             │      the plan finds the columns there, or commits again
 *             └─other errors ──────────────────────────────────► that code
 *
 * One thread at a time per client (as the rest of src/iceberg).
 */
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define EVOLVE_ATTEMPTS 8           /* commits, after lost races or unknown outcomes */
#define EVOLVE_BODY_CAP (64u << 20) /* one LoadTableResult */

/* The metadata of a LoadTableResult into *m. */
static int load_meta(const struct fr_buf *load, const char *ns, const char *name,
                     struct ice_meta **m)
{
    struct fr_json_val root, meta;
    const char *p = (const char *)load->data;
    if (!p || !fr_json_value(p, p + load->len, &root) || root.type != FR_JSON_OBJECT ||
        fr_json_member(&root, "metadata", &meta) != 1 || meta.type != FR_JSON_OBJECT) {
        return ice_err(FR_EPROTO, "rest: LoadTableResult of %s.%s has no metadata", ns, name);
    }
    return ice_meta_parse(meta.start, (size_t)(meta.end - meta.start), m);
}

/* Compare m's current schema with def. *missing: a bit per def field to
 * add (0: nothing to do). When some are missing, the CommitTableRequest
 * that adds them goes to body. */
static int plan(struct ice_meta *m, const char *ns, const char *name,
                const struct fr_ice_table_def *def, uint64_t *missing, struct fr_buf *body)
{
    const struct ice_schema *cur = ice_meta_schema(m, m->current_schema_id);
    *missing = 0;
    if (!cur) {
        return ice_err(FR_ECORRUPT, "table %s.%s: no current schema %d", ns, name,
                       (int)m->current_schema_id);
    }
    int32_t last = m->last_column_id;
    uint32_t nnew = 0;
    for (uint32_t i = 0; i < def->nfields; i++) {
        const struct fr_ice_field *want = &def->fields[i];
        const struct fr_ice_field *have = NULL;
        for (uint32_t k = 0; k < cur->nfields && !have; k++) {
            have = strcmp(cur->fields[k].name, want->name) == 0 ? &cur->fields[k] : NULL;
        }
        if (have && have->id != want->id) {
            return ice_err(FR_ECONFIG, "table %s.%s: column %s has field id %d, freshet writes %d",
                           ns, name, want->name, (int)have->id, (int)want->id);
        }
        if (have) {
            continue;
        }
        if (want->required) {
            return ice_err(FR_ECONFIG, "table %s.%s: required column %s (field id %d) is missing",
                           ns, name, want->name, (int)want->id);
        }
        if (want->id != last + 1) {
            return ice_err(FR_ECONFIG,
                           "table %s.%s: column %s would get field id %d (the table's last is "
                           "%d), freshet writes %d",
                           ns, name, want->name, (int)last + 1, (int)last, (int)want->id);
        }
        last = want->id;
        *missing |= (uint64_t)1 << i;
        nnew++;
    }
    if (!nnew) {
        return FR_OK;
    }
    /* the next schema: the current one's fields (other engines' type text
     * kept), then the missing ones in def's order */
    struct ice_schema next = {0, cur->nfields + nnew, NULL, NULL};
    next.fields = ice_alloc(m->arena, sizeof *next.fields * next.nfields);
    next.type_names = ice_alloc(m->arena, sizeof *next.type_names * next.nfields);
    if (!next.fields || !next.type_names) {
        return FR_ENOMEM;
    }
    memcpy(next.fields, cur->fields, sizeof *next.fields * cur->nfields);
    memcpy(next.type_names, cur->type_names, sizeof *next.type_names * cur->nfields);
    uint32_t at = cur->nfields;
    for (uint32_t i = 0; i < def->nfields; i++) {
        if (*missing & ((uint64_t)1 << i)) {
            next.fields[at] = def->fields[i];
            next.type_names[at] =
                ice_sprintf(m->arena, "\"%s\"", ice_type_name(def->fields[i].type));
            if (!next.type_names[at]) {
                return FR_ENOMEM;
            }
            at++;
        }
    }
    for (uint32_t i = 0; i < m->nschemas; i++) {
        next.schema_id = m->schemas[i].schema_id >= next.schema_id ? m->schemas[i].schema_id + 1
                                                                   : next.schema_id;
    }
    int rc = fr_buf_printf(body,
                           "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"},"
                           "{\"type\":\"assert-current-schema-id\",\"current-schema-id\":%d},"
                           "{\"type\":\"assert-last-assigned-field-id\","
                           "\"last-assigned-field-id\":%d}],"
                           "\"updates\":[{\"action\":\"add-schema\",\"schema\":",
                           m->uuid, (int)m->current_schema_id, (int)m->last_column_id);
    if (rc == FR_OK) {
        rc = ice_schema_json(&next, body);
    }
    if (rc == FR_OK) {
        rc = fr_buf_printf(body,
                           ",\"last-column-id\":%d},"
                           "{\"action\":\"set-current-schema\",\"schema-id\":-1}]}",
                           (int)last);
    }
    return rc;
}

int fr_ice_rest_evolve(struct fr_ice_rest *rest, const char *ns, const char *name,
                       const struct fr_ice_table_def *def, uint64_t *added)
{
    struct fr_buf load, body;
    uint64_t mine = 0;
    int rc = FR_OK;
    ice_err_clear();
    if (added) {
        *added = 0;
    }
    if (!def || def->nfields == 0 || def->nfields > 64) {
        return ice_err(FR_EINVAL, "rest: evolve %s.%s: 1 to 64 declared columns", ns, name);
    }
    fr_buf_init(&load, EVOLVE_BODY_CAP);
    fr_buf_init(&body, EVOLVE_BODY_CAP);
    for (int attempt = 0;; attempt++) {
        struct ice_meta *m = NULL;
        uint64_t missing = 0;
        if (attempt) {
            fr_sleep_backoff(attempt, 10, 6); /* 10-20 ms, doubling to 320-640 ms */
        }
        fr_buf_reset(&load);
        fr_buf_reset(&body);
        rc = fr_ice_rest_load_table(rest, ns, name, &load);
        if (rc == FR_OK) {
            rc = load_meta(&load, ns, name, &m);
        }
        if (rc == FR_OK) {
            rc = plan(m, ns, name, def, &missing, &body);
        }
        ice_meta_free(m);
        if (rc < 0 || !missing) {
            break; /* refused, unreadable, or every column there (maybe by us: unknown outcome) */
        }
        if (attempt >= EVOLVE_ATTEMPTS) {
            rc = ice_err(FR_ECONFLICT,
                         "rest: %s.%s: the schema changed under %d attempts to add "
                         "columns",
                         ns, name, attempt);
            break;
        }
        struct fr_ice_rest_change change = {ns, name, (const char *)body.data, body.len};
        rc = fr_ice_rest_commit_table(rest, &change, NULL);
        if (rc == FR_OK) {
            mine = missing;
            break;
        }
        if (rc != FR_EREQUIREMENT && rc != FR_EUNKNOWN) {
            break;
        }
    }
    fr_buf_free(&body);
    fr_buf_free(&load);
    if (added) {
        *added = mine;
    }
    return rc;
}
