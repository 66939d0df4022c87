/*
 * mem.c — trimming the allocator's heaps (mem.h) with glibc's malloc_trim.
 * State: the time of the last trim, owned by the one calling thread.
 */
#include "core/mem.h"

#include <stdlib.h> /* defines __GLIBC__ with glibc */

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int fr_mem_trim_now(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
    return 1;
#else
    return 0;
#endif
}

int fr_mem_trim_idle(int64_t now_ms)
{
    static int64_t last_ms = INT64_MIN / 2;
    if (now_ms - last_ms < FR_MEM_TRIM_EVERY_MS) {
        return 0;
    }
    last_ms = now_ms;
    return fr_mem_trim_now();
}
