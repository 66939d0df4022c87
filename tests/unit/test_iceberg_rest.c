/*
 * test_iceberg_rest.c — unit tests for the REST catalog's update logic
 * (src/iceberg/rest_updates.c) and the namespace calls (catalog.c): every
 * requirement type passing and failing (a failure moves nothing), every
 * supported update's effect read back through the library's own loader,
 * unsupported actions and bad JSON refused by name, a multi-table change
 * all-or-nothing, requirements checked again after a lost race, create
 * from a CreateTableRequest, and namespaces with properties in the JDBC
 * table. Expected values are written out by hand from the request, never
 * computed by the code under test.
 */
#include "check.h"

#include "test_iceberg_util.c"

#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg_int.h"
#include "iceberg/rest.h"

#include <inttypes.h>
#include <stdarg.h>

static struct fr_ice_catalog *open_cat(const char *dir)
{
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = dir, .busy_timeout_ms = 2000};
    if (fr_ice_catalog_open(&o, &cat) < 0) {
        fprintf(stderr, "open: %s\n", fr_ice_errmsg());
    }
    return cat;
}

/* Commit one change to wiki.<name> given as printf JSON. */
static int commit(struct fr_ice_catalog *cat, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int commit(struct fr_ice_catalog *cat, const char *name, const char *fmt, ...)
{
    char json[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(json, sizeof json, fmt, ap);
    va_end(ap);
    struct fr_ice_rest_change ch = {TI_NS, name, json, strlen(json)};
    int rc = fr_ice_rest_commit(cat, &ch, 1, NULL);
    if (rc < 0 && getenv("FR_TEST_VERBOSE")) {
        fprintf(stderr, "commit %s: %s\n", name, fr_ice_errmsg());
    }
    return rc;
}

static char *location(struct fr_ice_catalog *cat, const char *name)
{
    struct fr_ice_table *t = NULL;
    if (fr_ice_table_load(cat, TI_NS, name, &t) < 0) {
        return NULL;
    }
    char *loc = strdup(fr_ice_table_metadata_file(t));
    fr_ice_table_free(t);
    return loc;
}

static struct fr_ice_table *load(struct fr_ice_catalog *cat, const char *name)
{
    struct fr_ice_table *t = NULL;
    if (fr_ice_table_load(cat, TI_NS, name, &t) < 0) {
        fprintf(stderr, "load %s: %s\n", name, fr_ice_errmsg());
    }
    return t;
}

/* An append marked as epoch first of pipeline pipe-1. */
static int append_p(struct fr_ice_catalog *cat, const char *name, int64_t first, int n,
                    bool partitioned)
{
    struct fr_ice_commit_info info = {"pipe-1", first, "x", NULL, 0};
    return ti_append(cat, name, first, n, partitioned, &info);
}

static int append(struct fr_ice_catalog *cat, const char *name, int64_t first, int n)
{
    return append_p(cat, name, first, n, false);
}

/* ------------------------------------------------------ requirements -- */

static void test_requirements(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_table_def def = ti_def(true, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    struct fr_ice_table *t = load(cat, "t");
    char uuid[37];
    snprintf(uuid, sizeof uuid, "%s", t->meta->uuid);
    fr_ice_table_free(t);

    /* each passing requirement (the table as ti_def makes it: 4 columns,
     * schema 0, spec 0 with one field 1000, sort order 0, no snapshot) */
    static const char *const pass[] = {
        "{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0}",
        "{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":4}",
        "{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":1000}",
        "{\"type\":\"assert-default-spec-id\",\"default-spec-id\":0}",
        "{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":0}",
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":null}",
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"audit\"}",
    };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++) {
        CHECK_EQ_INT(commit(cat, "t",
                            "{\"requirements\":[%s],\"updates\":[{\"action\":"
                            "\"set-properties\",\"updates\":{\"p%zu\":\"v\"}}]}",
                            pass[i], i),
                     FR_OK);
    }
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"}],"
                        "\"updates\":[]}",
                        uuid),
                 FR_OK);
    /* each failing one: 409 material, and the catalog row stays put */
    char *before = location(cat, "t");
    static const char *const fail[] = {
        "{\"type\":\"assert-create\"}",
        "{\"type\":\"assert-table-uuid\",\"uuid\":\"00000000-0000-4000-8000-000000000000\"}",
        "{\"type\":\"assert-current-schema-id\",\"current-schema-id\":1}",
        "{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":3}",
        "{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":999}",
        "{\"type\":\"assert-default-spec-id\",\"default-spec-id\":1}",
        "{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":1}",
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":42}",
    };
    for (size_t i = 0; i < sizeof fail / sizeof fail[0]; i++) {
        CHECK_EQ_INT(commit(cat, "t",
                            "{\"requirements\":[%s],\"updates\":[{\"action\":"
                            "\"set-properties\",\"updates\":{\"bad\":\"v\"}}]}",
                            fail[i]),
                     FR_EREQUIREMENT);
        CHECK(strstr(fr_ice_errmsg(), "requirement") != NULL);
    }
    char *after = location(cat, "t");
    CHECK_EQ_STR(after, before);
    /* main is at a snapshot after an append: null no longer passes */
    CHECK_EQ_INT(append_p(cat, "t", 0, 10, true), FR_OK);
    t = load(cat, "t");
    int64_t snap = fr_ice_table_snapshot_id(t);
    fr_ice_table_free(t);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
                        "\"snapshot-id\":null}],\"updates\":[]}"),
                 FR_EREQUIREMENT);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
                        "\"snapshot-id\":%" PRId64 "}],\"updates\":[]}",
                        snap),
                 FR_OK);
    /* an unknown requirement type is refused by name */
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-view-uuid\"}],"
                        "\"updates\":[]}"),
                 FR_EUNSUPPORTED);
    CHECK(strstr(fr_ice_errmsg(), "assert-view-uuid") != NULL);
    t = load(cat, "t");
    CHECK(ice_meta_prop(t->meta, "p0") && ice_meta_prop(t->meta, "p6"));
    CHECK(ice_meta_prop(t->meta, "bad") == NULL);
    fr_ice_table_free(t);
    free(before);
    free(after);
    fr_ice_catalog_close(cat);
}

/* ------------------------------------------------------------ updates -- */

static void test_schema_spec_order_props(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    CHECK_EQ_INT(
        commit(cat, "t",
               "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
               "\"schema-id\":7,\"fields\":["
               "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
               "{\"id\":2,\"name\":\"wiki\",\"required\":false,\"type\":\"string\"},"
               "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
               "{\"id\":4,\"name\":\"delta\",\"required\":false,\"type\":\"int\"},"
               "{\"id\":5,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\","
               "\"element-id\":6,\"element\":\"string\",\"element-required\":false}}]}},"
               "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
               "{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":3,\"name\":"
               "\"ts_day\",\"transform\":\"day\"}]}},"
               "{\"action\":\"set-default-spec\",\"spec-id\":-1},"
               "{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":5,\"fields\":[{"
               "\"transform\":\"identity\",\"source-id\":1,\"direction\":\"desc\","
               "\"null-order\":\"nulls-last\"}]}},"
               "{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1},"
               "{\"action\":\"set-properties\",\"updates\":{\"a\":\"1\",\"b\":\"2\"}},"
               "{\"action\":\"remove-properties\",\"removals\":[\"a\",\"absent\"]},"
               "{\"action\":\"upgrade-format-version\",\"format-version\":2}]}"),
        FR_OK);
    struct fr_ice_table *t = load(cat, "t");
    CHECK(t != NULL);
    if (t) {
        const struct ice_meta *m = t->meta;
        CHECK_EQ_INT(m->nschemas, 2);
        CHECK_EQ_INT(m->current_schema_id, 1); /* max + 1, not the 7 asked for (as Java) */
        CHECK_EQ_INT(m->last_column_id, 6);    /* the list's element id counts */
        uint32_t n;
        const struct fr_ice_field *f = fr_ice_table_fields(t, &n);
        CHECK_EQ_INT(n, 5);
        CHECK_EQ_STR(f[4].name, "tags");
        CHECK_EQ_INT(m->nspecs, 2);
        CHECK_EQ_INT(m->default_spec_id, 1);
        uint32_t np;
        const struct fr_ice_part_field *p = fr_ice_table_parts(t, &np);
        CHECK_EQ_INT(np, 1);
        CHECK_EQ_INT(p[0].source_id, 3);
        CHECK_EQ_INT(p[0].transform, FR_ICE_DAY);
        CHECK_EQ_INT(m->last_partition_id, 1000);
        CHECK_EQ_INT(m->default_sort_order_id, 1);
        CHECK(strstr(m->sort_orders_raw,
                     "\"order-id\":1,\"fields\":[{\"transform\":"
                     "\"identity\",\"source-id\":1,\"direction\":\"desc\"") != NULL);
        CHECK(ice_meta_prop(m, "a") == NULL);
        CHECK_EQ_STR(ice_meta_prop(m, "b"), "2");
        CHECK_EQ_INT(m->nmetadata_log, 1);
    }
    fr_ice_table_free(t);
    /* the same schema again is reused, not added */
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
                        "\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":"
                        "\"long\"},{\"id\":2,\"name\":\"wiki\",\"required\":false,\"type\":"
                        "\"string\"},{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":"
                        "\"timestamptz\"},{\"id\":4,\"name\":\"delta\",\"required\":false,"
                        "\"type\":\"int\"}]}},{\"action\":\"set-current-schema\",\"schema-id\":"
                        "-1}]}"),
                 FR_OK);
    t = load(cat, "t");
    CHECK_EQ_INT(t->meta->nschemas, 2);
    CHECK_EQ_INT(t->meta->current_schema_id, 0);
    fr_ice_table_free(t);
    /* refused by name: nothing pretended */
    char *before = location(cat, "t");
    CHECK_EQ_INT(commit(cat, "t", "{\"updates\":[{\"action\":\"set-statistics\"}]}"),
                 FR_EUNSUPPORTED);
    CHECK(strstr(fr_ice_errmsg(), "set-statistics") != NULL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"upgrade-format-version\","
                        "\"format-version\":3}]}"),
                 FR_EUNSUPPORTED);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"upgrade-format-version\","
                        "\"format-version\":1}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"assign-uuid\",\"uuid\":"
                        "\"00000000-0000-4000-8000-000000000000\"}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"set-location\",\"location\":"
                        "\"file:///elsewhere\"}]}"),
                 FR_EUNSUPPORTED);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"set-current-schema\","
                        "\"schema-id\":9}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"set-current-schema\","
                        "\"schema-id\":-1}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"add-spec\",\"spec\":{"
                        "\"fields\":[{\"source-id\":99,\"name\":\"x\",\"transform\":"
                        "\"identity\"}]}}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{"
                        "\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                        "\"required\":true,\"type\":\"long\"},{\"id\":1,\"name\":\"b\","
                        "\"required\":true,\"type\":\"long\"}]}}]}"),
                 FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "t", "{\"updates\":[{\"action\":\"set-properties\""), FR_EJSON);
    CHECK_EQ_INT(commit(cat, "t", "{\"updates\":{}}"), FR_EINVAL);
    CHECK_EQ_INT(commit(cat, "nope", "{\"updates\":[]}"), FR_ENOTFOUND);
    char *after = location(cat, "t");
    CHECK_EQ_STR(after, before);
    free(before);
    free(after);
    /* a change far larger than the table's metadata still fits */
    size_t big = 300 * 1000;
    char *json = malloc(big + 200);
    int n = snprintf(json, 200,
                     "{\"updates\":[{\"action\":\"set-properties\",\"updates\":"
                     "{\"big\":\"");
    memset(json + n, 'x', big);
    snprintf(json + n + big, 100, "\"}}]}");
    struct fr_ice_rest_change ch = {TI_NS, "t", json, strlen(json)};
    CHECK_EQ_INT(fr_ice_rest_commit(cat, &ch, 1, NULL), FR_OK);
    struct fr_ice_table *tb = load(cat, "t");
    CHECK(tb && ice_meta_prop(tb->meta, "big") && strlen(ice_meta_prop(tb->meta, "big")) == big);
    fr_ice_table_free(tb);
    free(json);
    fr_ice_catalog_close(cat);
}

static void test_snapshots_and_refs(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    CHECK_EQ_INT(append(cat, "t", 0, 10), FR_OK);
    CHECK_EQ_INT(append(cat, "t", 10, 5), FR_OK);
    struct fr_ice_table *t = load(cat, "t");
    uint32_t ns;
    const struct fr_ice_snapshot *s = fr_ice_table_snapshots(t, &ns);
    CHECK_EQ_INT(ns, 2);
    int64_t first = s[0].snapshot_id, second = s[1].snapshot_id;
    char mlist[4096];
    snprintf(mlist, sizeof mlist, "%s", s[1].manifest_list);
    fr_ice_table_free(t);
    /* a snapshot written elsewhere: the second one's files again, as
     * "replace" (same rows), at sequence 3, made current; a tag on the first */
    const int64_t added = 4242424242;
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":"
                        "\"main\",\"snapshot-id\":%" PRId64 "}],\"updates\":["
                        "{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":%" PRId64
                        ",\"parent-snapshot-id\":%" PRId64 ",\"sequence-number\":3,"
                        "\"timestamp-ms\":1790000000000,\"manifest-list\":\"%s\","
                        "\"summary\":{\"operation\":\"replace\",\"by\":\"rest\"},"
                        "\"schema-id\":0}},"
                        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":"
                        "\"branch\",\"snapshot-id\":%" PRId64 "},"
                        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"first\",\"type\":"
                        "\"tag\",\"snapshot-id\":%" PRId64 ",\"max-ref-age-ms\":1000}]}",
                        second, added, second, mlist, added, first),
                 FR_OK);
    t = load(cat, "t");
    CHECK_EQ_INT(fr_ice_table_snapshot_id(t), added);
    CHECK_EQ_INT(fr_ice_table_sequence(t), 3);
    CHECK_EQ_INT(t->meta->nrefs, 1);
    CHECK_EQ_STR(t->meta->refs[0].name, "first");
    CHECK(strstr(t->meta->refs[0].raw, "\"max-ref-age-ms\":1000") != NULL);
    CHECK_EQ_INT(t->meta->snapshot_log[t->meta->nsnapshot_log - 1].snapshot_id, added);
    struct fr_ice_file_list list = {0};
    CHECK_EQ_INT(fr_ice_files(cat, t, -1, true, &list), FR_OK);
    CHECK_EQ_INT(list.total_records, 15);
    fr_ice_file_list_free(&list);
    fr_ice_table_free(t);
    /* a sequence number not above the table's is refused */
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":"
                        "7,\"sequence-number\":3,\"timestamp-ms\":1,\"manifest-list\":\"%s\","
                        "\"summary\":{\"operation\":\"append\"}}}]}",
                        mlist),
                 FR_EREQUIREMENT);
    /* remove the tag, then the first snapshot */
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"remove-snapshot-ref\",\"ref-name\":"
                        "\"first\"},{\"action\":\"remove-snapshots\",\"snapshot-ids\":[%" PRId64
                        "]}]}",
                        first),
                 FR_OK);
    t = load(cat, "t");
    CHECK_EQ_INT(t->meta->nrefs, 0);
    CHECK_EQ_INT(t->meta->nsnapshots, 2);
    CHECK(ice_meta_snapshot(t->meta, first) == NULL);
    for (uint32_t i = 0; i < t->meta->nsnapshot_log; i++) {
        CHECK(t->meta->snapshot_log[i].snapshot_id != first);
    }
    fr_ice_table_free(t);
    /* removing main's snapshot leaves the table without a current one */
    CHECK_EQ_INT(
        commit(cat, "t",
               "{\"updates\":[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"main\"}]}"),
        FR_OK);
    t = load(cat, "t");
    CHECK_EQ_INT(fr_ice_table_snapshot_id(t), -1);
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

/* ------------------------------------------------------ transactions -- */

static void test_multi_table(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "a", &def, NULL), FR_OK);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "b", &def, NULL), FR_OK);
    char *a0 = location(cat, "a"), *b0 = location(cat, "b");
    static const char ok[] = "{\"requirements\":[{\"type\":\"assert-current-schema-id\","
                             "\"current-schema-id\":0}],\"updates\":[{\"action\":"
                             "\"set-properties\",\"updates\":{\"x\":\"1\"}}]}";
    static const char bad[] = "{\"requirements\":[{\"type\":\"assert-current-schema-id\","
                              "\"current-schema-id\":5}],\"updates\":[{\"action\":"
                              "\"set-properties\",\"updates\":{\"x\":\"1\"}}]}";
    struct fr_ice_rest_change chs[2] = {{TI_NS, "a", ok, strlen(ok)},
                                        {TI_NS, "b", bad, strlen(bad)}};
    CHECK_EQ_INT(fr_ice_rest_commit(cat, chs, 2, NULL), FR_EREQUIREMENT);
    char *a1 = location(cat, "a"), *b1 = location(cat, "b");
    CHECK_EQ_STR(a1, a0); /* a's change was fine, but the transaction is one */
    CHECK_EQ_STR(b1, b0);
    chs[1].json = ok;
    chs[1].len = strlen(ok);
    CHECK_EQ_INT(fr_ice_rest_commit(cat, chs, 2, NULL), FR_OK);
    char *a2 = location(cat, "a"), *b2 = location(cat, "b");
    CHECK(strcmp(a2, a0) != 0 && strstr(a2, "/00002-") != NULL);
    CHECK(strcmp(b2, b0) != 0 && strstr(b2, "/00002-") != NULL);
    /* the same table twice in one transaction is refused */
    chs[1].name = "a";
    CHECK_EQ_INT(fr_ice_rest_commit(cat, chs, 2, NULL), FR_EINVAL);
    free(a0), free(b0), free(a1), free(b1), free(a2), free(b2);
    fr_ice_catalog_close(cat);
}

/* A writer that lands between our metadata file and our swap. */
struct racer {
    const char *dir;
    int fired;
    int appends;
};
static struct racer racer;

static void race_step(void *ctx, enum fr_ice_step step, const char *detail)
{
    (void)ctx;
    (void)detail;
    if (step == FR_ICE_STEP_METADATA && !racer.fired) {
        racer.fired = 1;
        struct fr_ice_catalog *other = open_cat(racer.dir);
        CHECK_EQ_INT(append(other, "t", 100 + racer.appends++ * 10, 3), FR_OK);
        fr_ice_catalog_close(other);
    }
}

static void test_race_rechecks_requirements(void)
{
    racer.dir = check_tmpdir();
    struct fr_ice_io_ops ops = *fr_ice_io_posix();
    ops.step = race_step;
    struct fr_ice_io io = {&ops, NULL};
    struct fr_ice_catalog *cat = NULL;
    struct fr_ice_catalog_opts o = {.data_dir = racer.dir, .busy_timeout_ms = 2000, .io = &io};
    CHECK_EQ_INT(fr_ice_catalog_open(&o, &cat), FR_OK);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    /* main is empty when we start; the racer's append moves it */
    racer.fired = 0;
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":"
                        "\"main\",\"snapshot-id\":null}],\"updates\":[{\"action\":"
                        "\"set-properties\",\"updates\":{\"k\":\"v\"}}]}"),
                 FR_EREQUIREMENT);
    CHECK_EQ_INT(racer.fired, 1);
    struct fr_ice_table *t = load(cat, "t");
    CHECK(ice_meta_prop(t->meta, "k") == NULL);
    CHECK(fr_ice_table_snapshot_id(t) >= 0); /* the racer's append is kept */
    fr_ice_table_free(t);
    /* without a requirement the retry applies on top of the racer's */
    racer.fired = 0;
    CHECK_EQ_INT(commit(cat, "t",
                        "{\"updates\":[{\"action\":\"set-properties\",\"updates\":"
                        "{\"k\":\"v\"}}]}"),
                 FR_OK);
    CHECK_EQ_INT(racer.fired, 1);
    t = load(cat, "t");
    CHECK_EQ_STR(ice_meta_prop(t->meta, "k"), "v");
    uint32_t ns;
    fr_ice_table_snapshots(t, &ns);
    CHECK_EQ_INT(ns, 2);
    fr_ice_table_free(t);
    fr_ice_catalog_close(cat);
}

/* ------------------------------------------------------------- create -- */

static void test_create(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    static const char req[] =
        "{\"name\":\"ev\",\"schema\":{\"type\":\"struct\",\"schema-id\":3,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true},"
        "{\"id\":2,\"name\":\"at\",\"type\":\"timestamptz\",\"required\":false},"
        "{\"id\":3,\"name\":\"m\",\"type\":{\"type\":\"map\",\"key-id\":4,\"key\":\"string\","
        "\"value-id\":5,\"value\":\"long\",\"value-required\":false},\"required\":false}]},"
        "\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"name\":\"at_hour\","
        "\"transform\":\"hour\"}]},\"write-order\":{\"order-id\":1,\"fields\":[{\"transform\":"
        "\"identity\",\"source-id\":1,\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]},"
        "\"properties\":{\"owner\":\"rest\"}}";
    struct fr_buf out;
    fr_buf_init(&out, 1 << 20);
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", req, strlen(req), &out), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_ice_ns_create(cat, "ns1", NULL, 0), FR_OK);
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", req, strlen(req), &out), FR_OK);
    CHECK(strstr(fr_buf_cstr(&out), "\"metadata-location\":\"file://") != NULL);
    CHECK(strstr(fr_buf_cstr(&out), "\"config\":{}") != NULL);
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", req, strlen(req), NULL), FR_EEXIST);
    struct fr_ice_table *t = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, "ns1", "ev", &t), FR_OK);
    if (t) {
        CHECK_EQ_INT(t->meta->last_column_id, 5);
        CHECK_EQ_INT(t->meta->current_schema_id, 0);
        CHECK_EQ_INT(t->meta->default_sort_order_id, 1);
        CHECK_EQ_INT(t->meta->last_partition_id, 1000);
        CHECK_EQ_STR(ice_meta_prop(t->meta, "owner"), "rest");
        uint32_t np;
        const struct fr_ice_part_field *p = fr_ice_table_parts(t, &np);
        CHECK_EQ_INT(np, 1);
        CHECK_EQ_INT(p[0].transform, FR_ICE_HOUR);
    }
    fr_ice_table_free(t);
    static const char staged[] = "{\"name\":\"s\",\"stage-create\":true,\"schema\":{\"type\":"
                                 "\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"type\":"
                                 "\"int\",\"required\":false}]}}";
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", staged, strlen(staged), NULL), FR_EUNSUPPORTED);
    static const char badname[] =
        "{\"name\":\"a-b\",\"schema\":{\"type\":\"struct\",\"fields\":[]}}";
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", badname, strlen(badname), NULL), FR_EINVAL);
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", "{", 1, NULL), FR_EJSON);
    static const char nofields[] =
        "{\"name\":\"empty\",\"schema\":{\"type\":\"struct\",\"fields\":[]}}";
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", nofields, strlen(nofields), NULL), FR_EINVAL);
    static const char foreign[] =
        "{\"name\":\"f\",\"location\":\"s3://bucket/f\",\"schema\":{\"type\":\"struct\","
        "\"fields\":[{\"id\":1,\"name\":\"a\",\"type\":\"int\",\"required\":false}]}}";
    CHECK_EQ_INT(fr_ice_rest_create(cat, "ns1", foreign, strlen(foreign), NULL), FR_EUNSUPPORTED);
    struct fr_ice_table *none = NULL;
    CHECK_EQ_INT(fr_ice_table_load(cat, "ns1", "empty", &none), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_ice_table_load(cat, "ns1", "f", &none), FR_ENOTFOUND);
    fr_buf_free(&out);
    fr_ice_catalog_close(cat);
}

/* A CreateTableRequest built from a table definition makes, through the
 * REST create, the table fr_ice_table_create makes from the same def. */
static void test_create_request(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_kv props[] = {{"write.format.default", "parquet"}, {"owner", "fre\"shet"}};
    struct fr_ice_table_def def = ti_def(true, props, 2);
    struct fr_buf req;
    fr_buf_init(&req, 1 << 20);
    CHECK_EQ_INT(fr_ice_rest_create_request("viarest", &def, &req), FR_OK);
    CHECK_EQ_INT(fr_ice_ns_create(cat, TI_NS, NULL, 0), FR_OK);
    CHECK_EQ_INT(fr_ice_rest_create(cat, TI_NS, (const char *)req.data, req.len, NULL), FR_OK);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "direct", &def, NULL), FR_OK);
    struct fr_ice_table *a = load(cat, "viarest"), *b = load(cat, "direct");
    CHECK(a && b);
    if (a && b) {
        struct fr_buf ja, jb;
        fr_buf_init(&ja, 1 << 20);
        fr_buf_init(&jb, 1 << 20);
        CHECK_EQ_STR(fr_ice_table_schema_json(a), fr_ice_table_schema_json(b));
        CHECK_EQ_INT(ice_spec_fields_json(ice_meta_spec(a->meta, 0), &ja), FR_OK);
        CHECK_EQ_INT(ice_spec_fields_json(ice_meta_spec(b->meta, 0), &jb), FR_OK);
        CHECK_EQ_STR(fr_buf_cstr(&ja), fr_buf_cstr(&jb));
        CHECK_EQ_STR(fr_buf_cstr(&ja), "[{\"name\":\"ts_day\",\"transform\":\"day\","
                                       "\"source-id\":3,\"field-id\":1000}]");
        CHECK_EQ_INT(a->meta->last_column_id, 4);
        CHECK_EQ_INT(a->meta->last_partition_id, b->meta->last_partition_id);
        CHECK_EQ_STR(ice_meta_prop(a->meta, "owner"), "fre\"shet");
        CHECK_EQ_STR(a->meta->sort_orders_raw, b->meta->sort_orders_raw);
        fr_buf_free(&ja);
        fr_buf_free(&jb);
    }
    fr_ice_table_free(a);
    fr_ice_table_free(b);
    fr_buf_free(&req);
    fr_ice_catalog_close(cat);
}

/* --------------------------------------------------------- namespaces -- */

static int collect(void *arg, const char *s)
{
    struct fr_buf *b = arg;
    return fr_buf_printf(b, "%s;", s);
}

static int collect_kv(void *arg, const char *k, const char *v)
{
    struct fr_buf *b = arg;
    return fr_buf_printf(b, "%s=%s;", k, v);
}

static void test_namespaces(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_buf b;
    fr_buf_init(&b, 4096);
    struct fr_ice_kv props[] = {{"owner", "me"}, {"team", "x"}};
    CHECK_EQ_INT(fr_ice_ns_create(cat, "a", props, 2), FR_OK);
    CHECK_EQ_INT(fr_ice_ns_create(cat, "a", NULL, 0), FR_EEXIST);
    CHECK_EQ_INT(fr_ice_ns_create(cat, "a.b", NULL, 0), FR_OK);
    CHECK_EQ_INT(fr_ice_ns_create(cat, "bad..name", NULL, 0), FR_EINVAL);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, "c", "t", &def, NULL), FR_OK); /* implicit */
    CHECK_EQ_INT(fr_ice_ns_list(cat, NULL, collect, &b), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "a;c;");
    fr_buf_reset(&b);
    CHECK_EQ_INT(fr_ice_ns_list(cat, "a", collect, &b), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "a.b;");
    fr_buf_reset(&b);
    CHECK_EQ_INT(fr_ice_ns_exists(cat, "a.b"), 1);
    CHECK_EQ_INT(fr_ice_ns_exists(cat, "zz"), 0);
    CHECK_EQ_INT(fr_ice_ns_props(cat, "a", collect_kv, &b), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "owner=me;team=x;");
    fr_buf_reset(&b);
    struct fr_ice_kv up[] = {{"team", "y"}, {"new", "1"}};
    const char *rm[] = {"owner", "never"};
    CHECK_EQ_INT(fr_ice_ns_update(cat, "a", up, 2, rm, 2, collect, &b), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "never;");
    fr_buf_reset(&b);
    CHECK_EQ_INT(fr_ice_ns_props(cat, "a", collect_kv, &b), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&b), "new=1;team=y;");
    fr_buf_reset(&b);
    CHECK_EQ_INT(fr_ice_ns_update(cat, "zz", up, 1, NULL, 0, NULL, NULL), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_ice_ns_props(cat, "zz", collect_kv, &b), FR_ENOTFOUND);
    /* dropping: not while a table is in it; props rows gone after */
    CHECK_EQ_INT(fr_ice_ns_create(cat, "c", NULL, 0), FR_EEXIST);
    CHECK_EQ_INT(fr_ice_ns_drop(cat, "c"), FR_ENOTEMPTY);
    CHECK_EQ_INT(fr_ice_ns_drop(cat, "a.b"), FR_OK);
    CHECK_EQ_INT(fr_ice_ns_exists(cat, "a.b"), 0);
    CHECK_EQ_INT(fr_ice_ns_drop(cat, "a.b"), FR_ENOTFOUND);
    fr_buf_free(&b);
    fr_ice_catalog_close(cat);
}

/* Damaged requests: every truncation and seeded byte flips of a valid
 * change. Each answer is FR_OK or a negative code, a refused one moves
 * nothing, and the table always loads afterwards. */
static void test_damaged_requests(void)
{
    const char *dir = check_tmpdir();
    struct fr_ice_catalog *cat = open_cat(dir);
    struct fr_ice_table_def def = ti_def(false, NULL, 0);
    CHECK_EQ_INT(fr_ice_table_create(cat, TI_NS, "t", &def, NULL), FR_OK);
    static const char good[] =
        "{\"requirements\":[{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0},"
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":null}],"
        "\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":9,\"name\":\"z\",\"required\":false,\"type\":{\"type\":\"list\","
        "\"element-id\":10,\"element\":\"int\",\"element-required\":false}}]}},"
        "{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":1,\"name\":\"b\","
        "\"transform\":\"bucket[4]\"}]}},"
        "{\"action\":\"add-sort-order\",\"sort-order\":{\"fields\":[{\"transform\":"
        "\"identity\",\"source-id\":1,\"direction\":\"asc\",\"null-order\":\"nulls-last\"}]}},"
        "{\"action\":\"remove-snapshots\",\"snapshot-ids\":[1,2]},"
        "{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\\u00e9\"}}]}";
    char buf[sizeof good];
    int ok = 0, refused = 0;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (size_t round = 0; round < sizeof good - 1 + 400; round++) {
        size_t len = sizeof good - 1;
        memcpy(buf, good, len);
        if (round < sizeof good - 1) {
            len = round ? round : len; /* the whole, then every truncation */
        } else {
            for (int k = 0; k < 1 + (int)(round % 3); k++) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                static const char alphabet[] = "{}[],:\"0-19e.\\ antx";
                buf[seed % len] = alphabet[(seed >> 32) % (sizeof alphabet - 1)];
            }
        }
        char *before = location(cat, "t");
        struct fr_ice_rest_change ch = {TI_NS, "t", buf, len};
        int rc = fr_ice_rest_commit(cat, &ch, 1, NULL);
        char *after = location(cat, "t");
        CHECK(rc <= 0);
        CHECK(after != NULL); /* the table always loads */
        if (rc < 0) {
            refused++;
            CHECK(before && after && strcmp(before, after) == 0);
        } else {
            ok++;
        }
        free(before);
        free(after);
    }
    CHECK(refused > 0);
    CHECK(ok > 0); /* at least the undamaged one */
    fprintf(stderr, "damaged requests: %d applied, %d refused\n", ok, refused);
    fr_ice_catalog_close(cat);
}

int main(void)
{
    RUN(test_requirements);
    RUN(test_schema_spec_order_props);
    RUN(test_snapshots_and_refs);
    RUN(test_multi_table);
    RUN(test_race_rechecks_requirements);
    RUN(test_create);
    RUN(test_create_request);
    RUN(test_namespaces);
    RUN(test_damaged_requests);
    return check_report();
}
