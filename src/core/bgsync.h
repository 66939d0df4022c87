/*
 * bgsync.h — device flushes of a file being written, started on a
 * background thread, so that the fsync which makes the file durable at the
 * end finds little left to flush.
 *
 * Starting writeback (sync_file_range SYNC_FILE_RANGE_WRITE) is not enough
 * on a virtual disk: the fsync's cache flush makes the host write whatever
 * the guest has handed it since the last flush. On the project's machine a
 * 187 MB bronze file written at ~50 MB/s with writeback started every
 * 8 MB still took 80–140 ms to fsync at the commit; with an fdatasync
 * every 16 MB in the background the final fsync took a few ms (docs/adr/
 * 0036).
 *
 * A request opens the file anew, read-only: its own open file description,
 * so an error the background fdatasync meets is still reported to the
 * writer's own fsync (Linux reports a writeback error once to every file
 * description that was open before it). Requests are advisory: errors are
 * counted and otherwise left to that fsync, and with the queue full a
 * request is dropped (counted), never waited for.
 *
 * One process-wide thread, started by the first request, so processes
 * that never write large files (the live processor, ingest) never have it.
 * A child of fork must exec before it uses this (freshet's supervisor
 * does). Bounded: at most FR_BGSYNC_QUEUE descriptors wait.
 */
#ifndef FR_BGSYNC_H
#define FR_BGSYNC_H

#include <stdint.h>

enum { FR_BGSYNC_QUEUE = 8 };

struct fr_bgsync_stats {
    uint64_t requested; /* accepted requests */
    uint64_t done;      /* fdatasyncs finished, failed ones included */
    uint64_t failed;    /* fdatasyncs that returned an error */
    uint64_t dropped;   /* requests not taken: queue full, open or thread failed */
};

/* Queue an fdatasync of the file at path. FR_OK when queued; otherwise the
 * request is dropped and counted, and the error says why (FR_EAGAIN: the
 * queue is full). Never waits for the device. Thread-safe. */
int fr_bgsync_file(const char *path);
/* Wait until every queued request has finished (tests, shutdown). */
void fr_bgsync_drain(void);
void fr_bgsync_stats(struct fr_bgsync_stats *out);

#endif
