/*
 * ckmirror.c — the processor's checkpoint mirrored in an object store
 * (process.checkpoint_uri = s3://bucket/prefix; docs/SCALEOUT.md), so a
 * shard that moves to a machine without its checkpoint directory resumes
 * from the bucket instead of replaying its whole history from the lake.
 *
 * The local checkpoint file (checkpoint.c's format, unchanged) stays the
 * one the process reads and writes; the mirror copies it:
 *
 *   start:  GET <prefix>/<pipeline>/checkpoint ──► newer than the local file
 *           (its epoch, bytes 8..16 of the format), or no local file?
 *           ──► replace the local file (temp, fsync, rename) ──► fr_ck_load
 *   epoch:  checkpoint saved locally ──► every
 *           process.checkpoint_upload_every_epochs: PUT the file
 *
 * Why this is safe (ADR 0014): checkpoint(E) is written only after epoch E
 * is in the lake, and for a given pipeline it is a function of the
 * committed epochs, so any copy, however old, is a valid starting point: a
 * copy behind the lake only means the epochs after it are replayed from
 * the ranges their markers record. A zombie's late PUT of an older copy can
 * therefore cost replay time, never correctness. The offsets WAL is not
 * mirrored: a plan that was never committed may be planned again.
 *
 * The enrichment state is not a function of the log (lookup answers
 * depend on when the API answered), so an old checkpoint copy alone cannot
 * restore it. Each epoch's state file is copied instead (ADR 0064):
 *
 *   epoch E: state saved locally as state-<E>-<fp> ──► PUT
 *            <prefix>/<pipeline>/enrich/state-<E>-<fp> ──► commit E, whose
 *            marker names fp ──► checkpoint(E) ──► every N epochs: PUT the
 *            checkpoint, then DELETE the state copies of epochs before E
 *   start:   the newest epoch L of the pipeline in the lake names fp; its
 *            file is taken from the bucket when the checkpoint directory
 *            lacks it (fr_ckm_get_state)
 *
 * Every committed epoch has its state in the bucket before its commit, and
 * a start needs only the newest committed epoch's (replayed epochs before
 * it are overwritten by it), so deleting the copies of epochs before a
 * committed one never removes one that is needed. Copies are keyed by
 * fingerprint, so two owners of one epoch (a fenced zombie) never
 * overwrite each other's.
 *
 * A failed GET at start is an error (the process stops rather than guess);
 * a failed PUT of the checkpoint is a warning (the lake and the local copy
 * are safe); a failed PUT of a state file fails the epoch before its
 * commit (the lake must not hold an epoch whose state is nowhere else).
 * Credentials are the [s3] ones of the warehouse, never logged.
 * One thread (the epoch loop).
 */
#include "pipeline/ckmirror.h"

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "objstore/s3.h"
#include "objstore/s3_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKM_MAX_BYTES ((size_t)1 << 30)

struct fr_ckm {
    struct fr_s3 *s3;
    char key[1024];
    char enrich[1024]; /* <prefix>/<pipeline>/enrich/ */
    char uri[1200];
    char bucket[128];
    int64_t every;
    int states; /* state files were copied: prune them with the checkpoint */
};

int fr_ckm_open(const struct fr_conf *conf, const char *pipeline, struct fr_ckm **out)
{
    *out = NULL;
    const char *uri = conf->process_checkpoint_uri;
    if (!uri || !uri[0]) {
        return FR_OK;
    }
    char bucket[128], prefix[900];
    if (fr_s3_parse_uri(uri, bucket, sizeof bucket, prefix, sizeof prefix) < 0) {
        fr_error("process", "process.checkpoint_uri must be s3://bucket[/prefix], not \"%s\"", uri);
        return FR_ECONFIG;
    }
    struct fr_ckm *m = calloc(1, sizeof *m);
    if (!m) {
        return FR_ENOMEM;
    }
    struct fr_s3_opts o;
    fr_s3_opts_from_conf(conf, &o);
    o.bucket = bucket;
    int rc = fr_s3_open(&o, &m->s3);
    if (rc < 0) {
        fr_error("process", "process.checkpoint_uri %s: %s (set s3.endpoint and credentials, "
                            "docs/S3.md)", uri, fr_strerror(rc));
        free(m);
        return rc;
    }
    snprintf(m->key, sizeof m->key, "%s%s%s/checkpoint", prefix, prefix[0] ? "/" : "", pipeline);
    snprintf(m->enrich, sizeof m->enrich, "%s%s%s/enrich/", prefix, prefix[0] ? "/" : "",
             pipeline);
    snprintf(m->uri, sizeof m->uri, "s3://%s/%s", bucket, m->key);
    snprintf(m->bucket, sizeof m->bucket, "%s", bucket);
    m->every = conf->process_checkpoint_upload_every_epochs;
    *out = m;
    return FR_OK;
}

void fr_ckm_close(struct fr_ckm *m)
{
    if (!m) {
        return;
    }
    fr_s3_close(m->s3);
    free(m);
}

/* The epoch in a checkpoint file's bytes, or -2 when they are not one. */
static int64_t ck_epoch(const struct fr_buf *b)
{
    int64_t e;
    if (b->len < 20 || memcmp(b->data, "FRCK", 4) != 0) {
        return -2;
    }
    memcpy(&e, b->data + 8, 8);
    return e;
}

int fr_ckm_pull(struct fr_ckm *m, const char *dir)
{
    if (!m) {
        return FR_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    struct fr_buf remote, local;
    fr_buf_init(&remote, CKM_MAX_BYTES);
    fr_buf_init(&local, CKM_MAX_BYTES);
    int rc = fr_s3_get(m->s3, m->key, &remote);
    if (rc == FR_ENOTFOUND) {
        fr_info("process", "no checkpoint at %s yet", m->uri);
        rc = FR_OK;
        goto cleanup;
    }
    if (rc < 0) {
        fr_error("process", "cannot read the checkpoint %s: %s %s", m->uri, fr_strerror(rc),
                 fr_s3_errmsg(m->s3));
        goto cleanup;
    }
    int64_t re = ck_epoch(&remote);
    if (re < -1) {
        fr_error("process", "%s is not a freshet checkpoint: refusing to guess", m->uri);
        rc = FR_ECORRUPT;
        goto cleanup;
    }
    int lrc = fr_fs_read_file(path, &local);
    int64_t le = lrc == FR_OK ? ck_epoch(&local) : -2;
    if (le >= re) {
        fr_info("process", "the local checkpoint (epoch %lld) is as new as %s's (epoch %lld)",
                (long long)le, m->uri, (long long)re);
        goto cleanup;
    }
    rc = fr_fs_write_atomic(path, remote.data, remote.len);
    if (rc < 0) {
        fr_error("process", "cannot write %s: %s", path, fr_strerror(rc));
        goto cleanup;
    }
    fr_info("process", "checkpoint of epoch %lld taken from %s (the local one: %s)",
            (long long)re, m->uri, le >= -1 ? "older" : "none");

cleanup:
    fr_buf_free(&remote);
    fr_buf_free(&local);
    return rc;
}

struct prune_ctx {
    struct fr_ckm *m;
    int64_t before;
    size_t plen;
    int deleted;
};

static int prune_one(void *arg, const struct fr_s3_object *obj)
{
    struct prune_ctx *c = arg;
    long long e;
    int used = 0;
    const char *name = obj->key + c->plen;
    if (sscanf(name, "state-%lld%n", &e, &used) != 1 || e >= c->before) {
        return 0; /* not a state copy, or one a start may still need */
    }
    if (fr_s3_delete(c->m->s3, obj->key) == FR_OK) {
        c->deleted++;
    }
    return 0;
}

/* Delete the state copies of the epochs before epoch (committed): a start
 * needs the newest committed epoch's only. Failures are left for the next
 * round. */
static void prune_states(struct fr_ckm *m, int64_t epoch)
{
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%sstate-", m->enrich);
    struct prune_ctx c = {m, epoch, strlen(m->enrich), 0};
    int rc = fr_s3_list(m->s3, prefix, 0, prune_one, &c);
    if (rc < 0) {
        fr_warn("process", "epoch %lld: cannot list the enrichment state copies under s3://%s/%s: "
                           "%s (the next round retries)",
                (long long)epoch, m->bucket, prefix, fr_strerror(rc));
    } else if (c.deleted) {
        fr_debug("process", "epoch %lld: %d enrichment state copies of older epochs deleted",
                 (long long)epoch, c.deleted);
    }
}

void fr_ckm_push(struct fr_ckm *m, const char *dir, int64_t epoch)
{
    if (!m || m->every <= 0 || (epoch + 1) % m->every != 0) {
        return;
    }
    int rc = fr_ckm_upload(m, dir);
    if (rc < 0) {
        fr_warn("process", "epoch %lld: checkpoint not copied to %s: %s %s (the lake and the "
                           "local checkpoint are safe; the next copy retries)",
                (long long)epoch, m->uri, fr_strerror(rc), fr_s3_errmsg(m->s3));
    }
    if (m->states) {
        prune_states(m, epoch);
    }
}

int fr_ckm_upload(struct fr_ckm *m, const char *dir)
{
    if (!m) {
        return FR_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    struct fr_buf b;
    fr_buf_init(&b, CKM_MAX_BYTES);
    int rc = fr_fs_read_file(path, &b);
    if (rc == FR_OK) {
        rc = fr_s3_put(m->s3, m->key, b.data, b.len, false, NULL);
    }
    fr_buf_free(&b);
    return rc;
}

const char *fr_ckm_uri(const struct fr_ckm *m)
{
    return m ? m->uri : "";
}

/* ------------------------------------------------ the enrichment state */

int fr_ckm_put_state(struct fr_ckm *m, const char *dir, const char *name)
{
    if (!m) {
        return FR_OK;
    }
    char path[4300], key[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(key, sizeof key, "%s%s", m->enrich, name);
    struct fr_buf b;
    fr_buf_init(&b, CKM_MAX_BYTES);
    int rc = fr_fs_read_file(path, &b);
    if (rc == FR_OK) {
        rc = fr_s3_put(m->s3, key, b.data, b.len, false, NULL);
    }
    if (rc < 0) {
        fr_error("process", "cannot copy the enrichment state %s to s3://%s/%s: %s %s (the "
                            "epoch is not committed without it)",
                 path, m->bucket, key, fr_strerror(rc), fr_s3_errmsg(m->s3));
    }
    m->states = 1;
    fr_buf_free(&b);
    return rc;
}

int fr_ckm_get_state(struct fr_ckm *m, const char *dir, const char *name)
{
    if (!m) {
        return FR_ENOTFOUND;
    }
    char path[4300], key[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(key, sizeof key, "%s%s", m->enrich, name);
    struct fr_buf b;
    fr_buf_init(&b, CKM_MAX_BYTES);
    int rc = fr_s3_get(m->s3, key, &b);
    if (rc == FR_OK) {
        rc = fr_fs_write_atomic(path, b.data, b.len);
        if (rc == FR_OK) {
            fr_info("process", "enrichment state %s taken from s3://%s/%s", name, m->bucket, key);
        } else {
            fr_error("process", "cannot write %s: %s", path, fr_strerror(rc));
        }
    } else if (rc != FR_ENOTFOUND) {
        fr_error("process", "cannot read the enrichment state s3://%s/%s: %s %s", m->bucket, key,
                 fr_strerror(rc), fr_s3_errmsg(m->s3));
    }
    fr_buf_free(&b);
    return rc;
}

const char *fr_ckm_state_prefix(const struct fr_ckm *m, char *out, size_t outlen)
{
    snprintf(out, outlen, "s3://%s/%s", m->bucket, m->enrich);
    return out;
}
