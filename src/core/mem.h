/*
 * mem.h — giving the C library allocator's free memory back between
 * epochs of a long-running process.
 *
 * glibc raises its mmap threshold to the size of every mmap'ed block that
 * is freed (up to 32 MiB), so after the first buffer of a few MiB is
 * released, later buffers of that size come from the main heap; freed
 * there, they stay resident behind live small blocks (fragmentation): the
 * heap only shrinks from its top. In `freshet process` live mode that kept
 * ~10 MB of free heap resident between epochs (docs/BENCHMARKS.md, ADR
 * 0020). Fixing the threshold instead (mallopt) costs the backfill a page
 * fault for every page of every large buffer (+60,000 faults, measured), so
 * the processor trims after small epochs only: malloc_trim returns the
 * free pages inside the heaps (not only the top) to the system.
 *
 * Threads: fr_mem_trim_idle keeps its time of last trim and the resident
 * set after it in statics and is called by one thread (the processor's
 * epoch loop, which also calls fr_mem_trim_now). A no-op without glibc.
 */
#ifndef FR_MEM_H
#define FR_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Trim at most this often: at a 1-second trigger after every epoch, in a
 * catch-up of small epochs not after each of them. */
enum { FR_MEM_TRIM_EVERY_MS = 1000 };
/* ... and only once the resident set has grown by this much since the
 * last trim. Each trim hands back the pages an epoch freed, and the next
 * epoch touches them again: at the live Wikimedia rate (~50 events/s) that
 * was ~200 page faults an epoch, 1 of its 2 ms of processing on a machine
 * where a fault costs ~10 us (docs/BENCHMARKS.md, issue 5, session 10).
 * Below the slack the freed pages stay for the next epoch to reuse; so
 * the resident set between epochs stays under (after the last trim) +
 * slack, and a larger churn (1,000 events/s, a compaction) is trimmed as
 * before. */
enum { FR_MEM_TRIM_SLACK = 2 << 20 };

/* Give free heap pages back to the system if the last trim was at least
 * FR_MEM_TRIM_EVERY_MS before now_ms (monotonic) and the resident set grew
 * by FR_MEM_TRIM_SLACK or more since (always when it cannot be read).
 * 1: trimmed, 0: not. */
int fr_mem_trim_idle(int64_t now_ms);

/* This process's resident set in bytes (/proc/self/statm), -1 when it
 * cannot be read. */
int64_t fr_mem_resident_bytes(void);

/* Give free heap pages back now, whenever the last trim was (after a burst
 * of large buffers, e.g. one table's compaction; a few ms per call with a
 * ~20 MB heap). 1: trimmed, 0: not (no glibc). Same thread rules. */
int fr_mem_trim_now(void);

/* Bulk memory: a large buffer that one bulk job (a backfill epoch) fills
 * page by page once and then reuses, mapped on its own, 2 MiB aligned and
 * advised for transparent huge pages (MADV_HUGEPAGE; honoured when
 * /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always").
 * On a virtual machine a first touch of a 4 KiB page costs ~10 us (96 MiB
 * touched page by page took 242 ms on the project's machine; 7 ms as huge
 * pages), and a backfill's batches are tens of MiB: docs/BENCHMARKS.md,
 * session 9. Not for live mode, whose RSS budget a 2 MiB page would
 * spend on a few KiB. size is rounded up to FR_MEM_BULK_ALIGN; the memory
 * reads as zeros. NULL when the system refuses. Any thread. */
enum { FR_MEM_BULK_ALIGN = 2 << 20 };
void *fr_mem_bulk_map(size_t size);
/* Give back what fr_mem_bulk_map(size) returned (the same size); NULL is
 * a no-op. */
void fr_mem_bulk_unmap(void *p, size_t size);

#endif
