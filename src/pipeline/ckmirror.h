/*
 * ckmirror.h — the processor's checkpoint mirrored in an object store
 * (process.checkpoint_uri); see ckmirror.c for the protocol and why any
 * copy is a safe starting point.
 */
#ifndef FR_PIPELINE_CKMIRROR_H
#define FR_PIPELINE_CKMIRROR_H

#include "conf/conf.h"

#include <stdint.h>

struct fr_ckm; /* a mirror of one pipeline's checkpoint (opaque) */

/* The mirror of pipeline's checkpoint when process.checkpoint_uri is set
 * (else FR_OK and *out NULL). FR_ECONFIG for a bad URI or missing [s3]
 * settings (logged). Close with fr_ckm_close (accepts NULL). */
int fr_ckm_open(const struct fr_conf *conf, const char *pipeline, struct fr_ckm **out);
void fr_ckm_close(struct fr_ckm *m);
/* Before fr_ck_load: replace <dir>/checkpoint with the bucket's copy when
 * that is newer (or the local one is absent). m NULL: nothing. An
 * unreadable bucket or a damaged copy is an error (logged). */
int fr_ckm_pull(struct fr_ckm *m, const char *dir);
/* After fr_ck_save of epoch: copy <dir>/checkpoint to the bucket every
 * process.checkpoint_upload_every_epochs epochs; a failure is a warning. */
void fr_ckm_push(struct fr_ckm *m, const char *dir, int64_t epoch);
/* Copy <dir>/checkpoint to the bucket now (`freshet rebuild` on a group's
 * lake): FR_OK (m NULL: nothing), or the error, not logged. */
int fr_ckm_upload(struct fr_ckm *m, const char *dir);
/* s3://bucket/key of the copy, "" for NULL. */
const char *fr_ckm_uri(const struct fr_ckm *m);

/* The enrichment stage's state files (ADR 0064). put: copy <dir>/<name>
 * to <prefix>/<pipeline>/enrich/<name> (before the epoch's commit; an
 * error is logged and must fail the epoch; m NULL: FR_OK). get: the
 * reverse, written durably to <dir>/<name>: FR_OK, FR_ENOTFOUND (also
 * when m is NULL), or an error (logged). Copies of epochs before a
 * committed one are deleted by fr_ckm_push, at the checkpoint's cadence. */
int fr_ckm_put_state(struct fr_ckm *m, const char *dir, const char *name);
int fr_ckm_get_state(struct fr_ckm *m, const char *dir, const char *name);
/* "s3://bucket/<prefix>/<pipeline>/enrich/", into out (for messages). */
const char *fr_ckm_state_prefix(const struct fr_ckm *m, char *out, size_t outlen);

#endif
