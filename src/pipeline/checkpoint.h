/*
 * checkpoint.h — the processor's durable position: the offsets WAL (each
 * epoch's offset range, written before the epoch is processed) and the
 * checkpoint (the last epoch committed to the lake, the next offsets, and
 * the operators' state), both under <data_dir>/process/<pipeline>/.
 *
 * Invariant: checkpoint(E) is written only after epoch E is committed to the
 * lake. On restart, the WAL's entry for E+1 (if any) fixes the range of the
 * next epoch, so a replay covers exactly the records the crashed attempt
 * covered, and an epoch already in the lake is recognised by its marker and
 * not committed twice.
 */
#ifndef FR_PIPELINE_CHECKPOINT_H
#define FR_PIPELINE_CHECKPOINT_H

#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

#define FR_CK_MAX_PARTS 64

struct fr_ck_range {
    int64_t epoch;
    uint32_t nparts;
    int64_t start[FR_CK_MAX_PARTS];
    int64_t end[FR_CK_MAX_PARTS]; /* exclusive */
};

struct fr_ck {
    int64_t epoch; /* last committed epoch, -1: none */
    uint32_t nparts;
    int64_t next[FR_CK_MAX_PARTS];
    struct fr_buf state; /* fr_proc_save bytes; owned */
};

/* A range as text, "<prefix>/0:100-200,<prefix>/1:7-9" (the epoch
 * markers' freshet.source-offsets): every partition below nparts, or only
 * partition only when only >= 0. */
void fr_ck_range_text(const struct fr_ck_range *range, const char *prefix, int only, char *out,
                      size_t outlen);
/* Parse that text into *range (epoch set to epoch, partitions not named
 * stay empty): FR_OK, or FR_ECORRUPT for text that is not one. */
int fr_ck_range_parse(const char *text, const char *prefix, int64_t epoch,
                      struct fr_ck_range *range);

/* The trigger (process.trigger_ms) runs at a fixed rate: the next epoch
 * is cut trigger_ms after the previous cut, not after the previous epoch
 * has finished, so an epoch's own processing (read, write, commit,
 * checkpoint) does not delay the records that arrive meanwhile by that
 * much again: a record waits at most one trigger and one epoch. When an
 * epoch takes longer than the trigger, the next one is due at once (with
 * what has arrived, up to process.epoch_max_records). The milliseconds
 * still to wait at now (0: due); last_cut is the previous cut (monotonic
 * ms) or < 0 when there was none in this run, which counts from
 * plan_start, when the planner began to wait. */
int64_t fr_ck_trigger_left(int64_t last_cut, int64_t plan_start, int64_t now, int64_t trigger_ms);

/* Directory <data_dir>/process/<pipeline> (created). */
int fr_ck_dir(const char *data_dir, const char *pipeline, char *out, size_t outlen);
/* Take the pipeline's exclusive lock (<dir>/lock, flock): one processor,
 * rebuild or dlq replay at a time. Returns the open descriptor (keep it
 * open while working; closing releases the lock), FR_ELOCKED when another
 * process holds it (its pid is written into the file and reported in
 * holder), or another error. */
int fr_ck_lock(const char *dir, long *holder);

/* Load the checkpoint: FR_OK, FR_ENOTFOUND (start from scratch), FR_ECRC or
 * FR_ECORRUPT (a damaged checkpoint is never silently ignored). ck->state
 * must be initialised (fr_buf_init) by the caller. */
int fr_ck_load(const char *dir, struct fr_ck *ck);
/* Durably replace the checkpoint (temp, fsync, rename, fsync dir) with
 * ck, its state from ck->state. */
int fr_ck_save(const char *dir, const struct fr_ck *ck);
/* The same, with the state streamed from the operators
 * (fr_proc_save_stream) into the temporary file instead of ck->state,
 * which is not used: the bytes are those fr_ck_save would write after
 * fr_proc_save into ck->state, and the memory is one bounded stage. On
 * error the old checkpoint stays. The epoch loop's thread. */
struct fr_proc;
int fr_ck_save_proc(const char *dir, const struct fr_ck *ck, const struct fr_proc *proc);
/* Append range to the offsets WAL and fsync it. */
int fr_ck_wal_append(const char *dir, const struct fr_ck_range *range);
/* The last complete WAL entry: FR_OK, FR_ENOTFOUND when the WAL is empty.
 * A torn last entry (crash while appending) is cut from the file, so call
 * this once at start, before the first fr_ck_wal_append. A bad entry that
 * a whole entry follows is damage, not a torn write: FR_ECORRUPT, the
 * file and byte named on stderr, nothing cut (ADR 0061). */
int fr_ck_wal_last(const char *dir, struct fr_ck_range *range);

#endif
