/*
 * verify_cut.c — `freshet verify`: the consistent cut. Bronze's newest epoch
 * (or, in the scale-out mode, each shard's) fixes it; every other table is
 * read at the newest snapshot of its lineage inside it (verify.c's header
 * and docs/VERIFY.md). One thread; read-only.
 */
#include "pipeline/verify_int.h"

/* ----------------------------------------------------------------- cut */

const char *vf_summary_get(const struct fr_ice_snapshot *s, const char *key)
{
    for (uint32_t i = 0; i < s->nsummary; i++) {
        if (strcmp(s->summary[i].key, key) == 0) {
            return s->summary[i].value;
        }
    }
    return NULL;
}

int vf_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) {
        return FR_EINVAL;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) {
        return FR_EINVAL;
    }
    *out = v;
    return FR_OK;
}

/* This pipeline's epoch marker on s, or -1. */
static int64_t snap_marker(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *p = vf_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    int64_t e;
    if (!p || strcmp(p, vf->conf->general_pipeline_id) != 0 ||
        vf_parse_i64(vf_summary_get(s, FR_ICE_SUMMARY_EPOCH), &e) < 0 || e < 0) {
        return -1;
    }
    return e;
}

/* The scale-out shard marker on s ("<id>-p<N>", epoch): 1 with *part and
 * *epoch, or 0. */
static int shard_marker(const struct vf *vf, const struct fr_ice_snapshot *s, uint32_t *part,
                        int64_t *epoch)
{
    const char *p = vf_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    size_t n = strlen(vf->conf->general_pipeline_id);
    if (!p || strncmp(p, vf->conf->general_pipeline_id, n) != 0 || p[n] != '-' || p[n + 1] != 'p') {
        return 0;
    }
    char *end;
    long k = strtol(p + n + 2, &end, 10);
    if (*end || end == p + n + 2 || k < 0 || k >= FR_CK_MAX_PARTS ||
        vf_parse_i64(vf_summary_get(s, FR_ICE_SUMMARY_EPOCH), epoch) < 0 || *epoch < 0) {
        return 0;
    }
    *part = (uint32_t)k;
    return 1;
}

/* Whether s carries the finalizer's marker ("<id>-gold"). */
static int final_marker(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *p = vf_summary_get(s, FR_ICE_SUMMARY_PIPELINE);
    size_t n = strlen(vf->conf->general_pipeline_id);
    return p && strncmp(p, vf->conf->general_pipeline_id, n) == 0 &&
           strcmp(p + n, FR_PIPE_FINAL_SUFFIX) == 0;
}

/* Whether every shard epoch a finalizer snapshot consumed ("shard/0:4-9,
 * ...", ends exclusive) is inside the cut. */
static int final_in_cut(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    const char *text = vf_summary_get(s, FR_ICE_SUMMARY_OFFSETS);
    struct fr_ck_range r;
    if (!text || fr_ck_range_parse(text, FR_PIPE_FINAL_RANGE, 0, &r) < 0) {
        return 0;
    }
    for (uint32_t p = 0; p < r.nparts; p++) {
        if (r.end[p] > r.start[p] && r.end[p] - 1 > vf->shard_epoch[p]) {
            return 0;
        }
    }
    return 1;
}

/* The lineage of a table's current snapshot, newest first (one backward
 * sweep: snapshots are listed in commit order; an expired ancestor ends
 * it), with the largest epoch marker at or below each. *chain and *eff are
 * malloc'd (free them). */
static int lineage(const struct vf *vf, const struct fr_ice_table *table, uint32_t **chain,
                   int64_t **eff, uint32_t *n)
{
    *chain = NULL;
    *eff = NULL;
    *n = 0;
    uint32_t nsnap = 0;
    const struct fr_ice_snapshot *snaps = table ? fr_ice_table_snapshots(table, &nsnap) : NULL;
    if (nsnap == 0) {
        return FR_OK; /* not created yet, or no snapshot */
    }
    *chain = malloc(sizeof **chain * nsnap);
    *eff = malloc(sizeof **eff * nsnap);
    if (!*chain || !*eff) {
        return FR_ENOMEM;
    }
    int64_t id = fr_ice_table_snapshot_id(table);
    for (uint32_t i = nsnap; id >= 0 && i-- > 0;) {
        if (snaps[i].snapshot_id == id) {
            (*chain)[(*n)++] = i;
            id = snaps[i].parent_id;
        }
    }
    int64_t e = -1;
    for (uint32_t k = *n; k-- > 0;) {
        int64_t m = snap_marker(vf, &snaps[(*chain)[k]]);
        e = m > e ? m : e;
        (*eff)[k] = e;
    }
    return FR_OK;
}

/* "recentchange/0:100-200,recentchange/1:7-9": the sum of the ends. */
static int parse_offsets(const char *s, int64_t *sum)
{
    *sum = 0;
    if (!s) {
        return FR_EINVAL;
    }
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        if (!comma) {
            comma = p + strlen(p);
        }
        const char *colon = memchr(p, ':', (size_t)(comma - p));
        if (!colon) {
            return FR_EINVAL;
        }
        char *end;
        errno = 0;
        long long a = strtoll(colon + 1, &end, 10);
        if (*end != '-' || errno) {
            return FR_EINVAL;
        }
        long long b = strtoll(end + 1, &end, 10);
        if (end != comma || errno || a < 0 || b < a || b > INT64_MAX - *sum) {
            return FR_EINVAL;
        }
        *sum += b;
        p = *comma ? comma + 1 : comma;
    }
    return FR_OK;
}

/* Bronze in the scale-out mode: each shard's newest epoch, the sum of
 * their end offsets, and each shard's history (complete when its markers,
 * newest first, are E, E-1, ..., 0). The watermark comes from gold's cut
 * (vf_cut_table). */
static int cut_shards(struct vf *vf)
{
    struct vf_tab *tab = &vf->tab[FR_TBL_BRONZE];
    uint32_t nsnap = 0, n;
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    int64_t next[FR_CK_MAX_PARTS], records = 0;
    int complete = 1;
    vf->consumed = 0;
    vf->consumed_ok = 1;
    vf->epoch = -1;
    tab->snap = tab->current;
    vf->replays = calloc(n ? n : 1, sizeof *vf->replays);
    rc = rc == FR_OK && !vf->replays ? FR_ENOMEM : rc;
    for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        uint32_t p;
        int64_t e, r, end;
        if (!shard_marker(vf, s, &p, &e)) {
            continue;
        }
        if (vf->shard_epoch[p] < 0) {
            vf->shard_epoch[p] = e;
            next[p] = e;
            vf->epoch = e > vf->epoch ? e : vf->epoch;
            vf->consumed_ok &=
                parse_offsets(vf_summary_get(s, FR_ICE_SUMMARY_OFFSETS), &end) == FR_OK;
            vf->consumed += vf->consumed_ok ? end : 0;
        }
        if (e != next[p] || vf_parse_i64(vf_summary_get(s, FR_SUMMARY_RECORDS), &r) < 0 || r < 0) {
            complete = 0;
        } else {
            records += r;
        }
        next[p] = e - 1;
        vf->history_epochs++;
    }
    size_t at = 0;
    for (uint32_t p = 0; p < FR_CK_MAX_PARTS && at < sizeof vf->offsets; p++) {
        if (vf->shard_epoch[p] >= 0) {
            complete &= next[p] == -1;
            int w = snprintf(vf->offsets + at, sizeof vf->offsets - at, "%sp%u:%" PRId64,
                             at ? "," : "shard epochs ", p, vf->shard_epoch[p]);
            at += w > 0 ? (size_t)w : 0;
        }
    }
    vf->history_records = complete ? records : -1;
    tab->epoch = vf->epoch;
    free(chain);
    free(eff);
    return rc;
}

/* Bronze: the cut epoch, its offsets, the replays it holds, the watermark
 * (its snapshot marked E, or a replay committed after it) and the history
 * (complete when the markers, newest first, are E, E-1, ..., 0). */
int vf_cut_bronze(struct vf *vf)
{
    struct vf_tab *tab = &vf->tab[FR_TBL_BRONZE];
    uint32_t nsnap = 0, n;
    /* The scale-out mode: shard markers and none of the pipeline's own. */
    {
        uint32_t ns = 0, p;
        int64_t e;
        int shards = 0, own = 0;
        const struct fr_ice_snapshot *ss =
            tab->table ? fr_ice_table_snapshots(tab->table, &ns) : NULL;
        for (uint32_t i = 0; i < ns; i++) {
            shards |= shard_marker(vf, &ss[i], &p, &e);
            own |= snap_marker(vf, &ss[i]) >= 0;
        }
        for (uint32_t q = 0; q < FR_CK_MAX_PARTS; q++) {
            vf->shard_epoch[q] = -1;
        }
        vf->sharded = shards && !own;
        if (vf->sharded) {
            vf->watermark_us = INT64_MIN;
            vf->watermark_ms = INT64_MIN;
            vf->topics_us = INT64_MIN;
            return cut_shards(vf);
        }
    }
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    vf->epoch = n ? eff[0] : -1;
    vf->watermark_us = INT64_MIN;
    vf->watermark_ms = INT64_MIN;
    vf->topics_us = INT64_MIN;
    tab->snap = tab->current;
    tab->epoch = vf->epoch;
    vf->replays = calloc(n ? n : 1, sizeof *vf->replays);
    rc = rc == FR_OK && !vf->replays ? FR_ENOMEM : rc;
    int64_t next = vf->epoch, records = 0;
    int complete = vf->epoch >= 0;
    const struct fr_ice_snapshot *marked = NULL, *replay = NULL;
    for (uint32_t k = 0; rc == FR_OK && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t m = snap_marker(vf, s), r;
        const char *id = vf_summary_get(s, VF_SUMMARY_REPLAY);
        if (id) {
            vf->replays[vf->nreplays++] = id;
            replay = replay || marked ? replay : s; /* the newest, after E */
        }
        if (m < 0) {
            continue;
        }
        marked = !marked && m == vf->epoch ? s : marked;
        if (m != next || vf_parse_i64(vf_summary_get(s, FR_SUMMARY_RECORDS), &r) < 0 || r < 0) {
            complete = 0;
        } else {
            records += r;
        }
        next = m - 1;
        vf->history_epochs++;
    }
    free(chain);
    free(eff);
    vf->history_records = complete && next == -1 ? records : -1;
    vf->consumed = 0;
    vf->consumed_ok = vf->epoch < 0; /* nothing consumed yet */
    if (marked) {
        const char *off = vf_summary_get(marked, FR_ICE_SUMMARY_OFFSETS);
        snprintf(vf->offsets, sizeof vf->offsets, "%s", off ? off : "");
        vf->consumed_ok = parse_offsets(off, &vf->consumed) == FR_OK;
        int64_t t;
        if (vf_parse_i64(vf_summary_get(marked, FR_SUMMARY_TOPICS), &t) == FR_OK) {
            vf->topics_us = t; /* with enrichment: gold_top_topics' frontier */
        }
    }
    for (int i = 0; i < 2; i++) {
        const struct fr_ice_snapshot *s = i ? replay : marked;
        int64_t w;
        if (s && vf_parse_i64(vf_summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK) {
            vf->watermark_us = w;
            vf->watermark_ms = s->timestamp_ms;
        }
    }
    return rc;
}

/* Whether a snapshot's own marker is inside the cut: 1, 0, or -1 when it
 * carries none (it belongs where its parent does). */
static int in_cut(const struct vf *vf, const struct fr_ice_snapshot *s)
{
    int64_t m = snap_marker(vf, s);
    const char *id = vf_summary_get(s, VF_SUMMARY_REPLAY);
    uint32_t part;
    int64_t e;
    if (vf->sharded && shard_marker(vf, s, &part, &e)) {
        return e <= vf->shard_epoch[part];
    }
    if (vf->sharded && final_marker(vf, s)) {
        return final_in_cut(vf, s);
    }
    if (m >= 0) {
        return m <= vf->epoch;
    }
    for (uint32_t i = 0; id && i < vf->nreplays; i++) {
        if (strcmp(vf->replays[i], id) == 0) {
            return 1;
        }
    }
    return id ? 0 : -1;
}

/* Another table: the newest snapshot of its lineage inside the cut. Silver's
 * newest rebuild says how many bronze rows its gate rejected; a rebuild of
 * gold at epoch E after the watermark's snapshot moves it (REBUILD.md). */
int vf_cut_table(struct vf *vf, enum fr_tbl t)
{
    struct vf_tab *tab = &vf->tab[t];
    uint32_t nsnap = 0, n, best = UINT32_MAX;
    uint32_t *chain;
    int64_t *eff;
    int rc = lineage(vf, tab->table, &chain, &eff, &n);
    const struct fr_ice_snapshot *snaps = n ? fr_ice_table_snapshots(tab->table, &nsnap) : NULL;
    int known = 1;
    for (uint32_t k = n; k-- > 0;) { /* oldest first */
        int in = in_cut(vf, &snaps[chain[k]]);
        known = in < 0 ? known : in;
        best = known ? k : best;
    }
    tab->snap = best < n ? snaps[chain[best]].snapshot_id : -1;
    tab->epoch = best < n ? eff[best] : -1;
    if (n && best >= n) { /* every snapshot kept is newer than the cut */
        snprintf(tab->broken, sizeof tab->broken,
                 "no snapshot at or before epoch %" PRId64 " is kept (expired?)", vf->epoch);
    }
    /* Scale-out: the watermark is the frontier of gold's cut finalizer
     * epoch (at or before the cut snapshot: compactions carry no marker). */
    for (uint32_t k = best; vf->sharded && t == FR_TBL_GOLD_EPM && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t w;
        if (final_marker(vf, s)) {
            if (vf_parse_i64(vf_summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK) {
                vf->watermark_us = w;
                vf->watermark_ms = s->timestamp_ms;
            }
            if (vf_parse_i64(vf_summary_get(s, FR_SUMMARY_TOPICS), &w) == FR_OK) {
                vf->topics_us = w; /* with enrichment (final_topics.h) */
            }
            break;
        }
    }
    /* A rebuild's rejected rows: on silver, in either mode (a group's
     * rebuild, ADR 0066, moves gold's watermark through the finalizer's
     * marker above). */
    for (uint32_t k = best;
         (t == FR_TBL_SILVER || (!vf->sharded && t == FR_TBL_GOLD_EPM)) && k < n; k++) {
        const struct fr_ice_snapshot *s = &snaps[chain[k]];
        int64_t e, w, r;
        if (!vf_summary_get(s, VF_SUMMARY_REBUILD)) {
            if (t == FR_TBL_GOLD_EPM && snap_marker(vf, s) >= 0) {
                break; /* an epoch after any older rebuild */
            }
            continue;
        }
        if (t == FR_TBL_SILVER &&
            vf_parse_i64(vf_summary_get(s, VF_SUMMARY_REBUILD_REJECTED), &r) == FR_OK) {
            vf->rebuild_rejected = r;
            break;
        }
        if (t == FR_TBL_GOLD_EPM &&
            vf_parse_i64(vf_summary_get(s, VF_SUMMARY_REBUILD_EPOCH), &e) == FR_OK &&
            e == vf->epoch && vf_parse_i64(vf_summary_get(s, FR_SUMMARY_WATERMARK), &w) == FR_OK &&
            s->timestamp_ms > vf->watermark_ms) {
            vf->watermark_us = w;
            vf->watermark_ms = s->timestamp_ms;
            break;
        }
    }
    free(chain);
    free(eff);
    return rc;
}

/* Row and file counts at the cut, from the manifests (they plan the passes;
 * the checks count the rows they read). Every data file must exist with its
 * size, or the table is unreadable. */
void vf_count_table(struct vf *vf, struct vf_tab *tab)
{
    if (tab->snap < 0) {
        return; /* empty at the cut */
    }
    struct fr_ice_file_list list;
    int rc = fr_ice_files(vf->cat, tab->table, tab->snap, true, &list);
    if (rc < 0) {
        snprintf(tab->broken, sizeof tab->broken, "%s", fr_ice_errmsg());
        return;
    }
    tab->rows = list.total_records;
    tab->nfiles = (int64_t)list.nfiles;
    fr_ice_file_list_free(&list);
}
