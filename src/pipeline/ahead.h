/*
 * ahead.h — decode ahead: while the epoch loop runs the operators and the
 * table writers on its thread, a second thread reads the epoch's records
 * (through a source callback) and runs the data-quality gate over them, so
 * that parsing JSON, the largest share of the processor's work, happens on
 * the other core. Private to src/pipeline.
 *
 * The decoded records come back in batches, in exactly the order the source
 * gave them, with everything the epoch loop needs (position, raw bytes,
 * verdict, row) copied into the batch, so the operators see the same
 * sequence as when decoding inline: tables are identical either way
 * (tests/unit/test_process_ahead.c compares the two).
 *
 * Bounds: AHEAD_BATCHES batches in flight, each of at most
 * AHEAD_BATCH_ITEMS records and AHEAD_BATCH_BYTES bytes (a batch grows past
 * that only to hold one record that is larger on its own, and shrinks back
 * when released). The producer waits when every batch is full
 * (backpressure), the consumer when none is ready. The batches are
 * allocated by fr_ahead_start and freed by fr_ahead_stop: no memory is held
 * between epochs.
 *
 * Threads: fr_ahead_start, _next, _release, _stop and _destroy are called
 * by one thread (the consumer). The source and item callbacks run on the ahead
 * thread between fr_ahead_start and the end of the epoch (its last call
 * returned 0 or an error, or fr_ahead_stop returned); it must not share
 * unsynchronised state with the consumer meanwhile.
 */
#ifndef FR_PIPELINE_AHEAD_H
#define FR_PIPELINE_AHEAD_H

#include "log/log.h"
#include "process/process.h"

#include <stddef.h>
#include <stdint.h>

/* Six batches (about 12,000 records, 24 MB at most): the two threads' work
 * comes in bursts (a row group's pages queued for compression at once), and
 * with three batches each thread waited about 0.6 s per million records for
 * the other (perf sched); six cut the backfill's wall time by about 8% for
 * 7-14 MB more peak RSS (docs/BENCHMARKS.md). Epochs under
 * process.decode_ahead_records (live ones) do not use them. */
#define AHEAD_BATCHES 6
#define AHEAD_BATCH_ITEMS 2048u
#define AHEAD_BATCH_BYTES ((size_t)4 << 20)

/* One decoded record. Pointers point into the batch and stay valid until the
 * batch is released. */
struct fr_ahead_item {
    struct fr_proc_pos pos;
    const char *raw; /* the log record's payload */
    size_t raw_len;
    enum fr_gate_reason reason; /* FR_GATE_OK: row is valid */
    const char *detail;         /* rejected: the gate's detail, NUL-terminated */
    struct fr_row row;
};

struct fr_ahead_batch {
    struct fr_ahead_item *items;
    uint32_t n;
};

/* The next record (1; *rec valid until the next call), 0 at the end of the
 * epoch, or a negative fr_err code, which ends the epoch too. */
typedef int (*fr_ahead_source_fn)(void *arg, struct fr_log_rec *rec, int32_t *partition);

/* Work that needs only the decoded record, done on the ahead thread right
 * after the gate, in source order (the epoch loop writes bronze here: it
 * depends on the gate's verdict alone, not on the operators). FR_OK, or a
 * negative fr_err code, which ends the epoch: the batches before that
 * record are still handed out, then fr_ahead_next returns the error. */
typedef int (*fr_ahead_item_fn)(void *arg, const struct fr_ahead_item *item);

struct fr_ahead;

/* A decoder with its own gate (options gopts, the processor's). FR_ENOMEM. */
int fr_ahead_create(const struct fr_gate_opts *gopts, struct fr_ahead **out);
/* Accepts NULL. Stops a running epoch first. */
void fr_ahead_destroy(struct fr_ahead *ahead);
/* Start an epoch: the ahead thread calls source(arg, ...) until it returns
 * 0 or an error, and each(arg, item) (when not NULL) for every record it
 * decoded. FR_ESTATE while the previous epoch is not stopped; FR_EAGAIN
 * when the thread cannot be created. */
int fr_ahead_start(struct fr_ahead *ahead, fr_ahead_source_fn source, fr_ahead_item_fn each,
                   void *arg);
/* The next batch in order (1), 0 once the source ended and every batch was
 * handed out, or the source's error after the batches before it. Waits for
 * the ahead thread. The batch must be released before the next call. */
int fr_ahead_next(struct fr_ahead *ahead, const struct fr_ahead_batch **batch);
void fr_ahead_release(struct fr_ahead *ahead, const struct fr_ahead_batch *batch);
/* End the epoch: tell the ahead thread to stop (if it has not ended) and
 * wait for it. Afterwards the source is no longer called. Idempotent. */
void fr_ahead_stop(struct fr_ahead *ahead);

#endif
