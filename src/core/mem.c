/*
 * mem.c — trimming the allocator's heaps (mem.h) with glibc's malloc_trim,
 * and bulk mappings advised for transparent huge pages.
 * State: the time of the last trim and the resident set after it, owned
 * by the one calling thread.
 */
#include "core/mem.h"

#include <stdlib.h> /* defines __GLIBC__ with glibc */

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

static int64_t trimmed_rss = -1; /* resident bytes after the last trim */

int64_t fr_mem_resident_bytes(void)
{
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    char text[128];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    text[n] = 0;
    /* "size resident shared text lib data dt", in pages */
    char *end;
    (void)strtoll(text, &end, 10);
    long long pages = strtoll(end, &end, 10);
    long page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : -1;
}

int fr_mem_trim_now(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
    trimmed_rss = fr_mem_resident_bytes();
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
    int64_t rss = fr_mem_resident_bytes();
    if (rss >= 0 && trimmed_rss >= 0 && rss - trimmed_rss < FR_MEM_TRIM_SLACK) {
        return 0;
    }
    last_ms = now_ms;
    return fr_mem_trim_now();
}

static size_t bulk_round(size_t size)
{
    return (size + FR_MEM_BULK_ALIGN - 1) & ~(size_t)(FR_MEM_BULK_ALIGN - 1);
}

void *fr_mem_bulk_map(size_t size)
{
    if (size == 0 || size > SIZE_MAX / 2) {
        return NULL;
    }
    size = bulk_round(size);
    /* Map one alignment more, then cut the ends off so that the block
     * starts on a 2 MiB boundary: a huge page needs its whole aligned
     * range inside the mapping. */
    size_t span = size + FR_MEM_BULK_ALIGN;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        return NULL;
    }
    uintptr_t at = ((uintptr_t)raw + FR_MEM_BULK_ALIGN - 1) & ~(uintptr_t)(FR_MEM_BULK_ALIGN - 1);
    char *p = (char *)at;
    size_t head = (size_t)(p - raw), tail = span - head - size;
    if (head) {
        munmap(raw, head);
    }
    if (tail) {
        munmap(p + size, tail);
    }
#if defined(MADV_HUGEPAGE)
    (void)madvise(p, size, MADV_HUGEPAGE); /* advice: refused means 4 KiB pages */
#endif
    return p;
}

void fr_mem_bulk_unmap(void *p, size_t size)
{
    if (p) {
        munmap(p, bulk_round(size));
    }
}
