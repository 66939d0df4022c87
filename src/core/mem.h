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
 * Threads: fr_mem_trim_idle keeps its time of last trim in a static and is
 * called by one thread (the processor's epoch loop, which also calls
 * fr_mem_trim_now). A no-op without glibc.
 */
#ifndef FR_MEM_H
#define FR_MEM_H

#include <stdint.h>

/* Trim at most this often: at a 1-second trigger after every epoch, in a
 * catch-up of small epochs not after each of them. */
enum { FR_MEM_TRIM_EVERY_MS = 1000 };

/* Give free heap pages back to the system if the last trim was at least
 * FR_MEM_TRIM_EVERY_MS before now_ms (monotonic). 1: trimmed, 0: not. */
int fr_mem_trim_idle(int64_t now_ms);

/* Give free heap pages back now, whenever the last trim was (after a burst
 * of large buffers, e.g. one table's compaction; a few ms per call with a
 * ~20 MB heap). 1: trimmed, 0: not (no glibc). Same thread rules. */
int fr_mem_trim_now(void);

#endif
