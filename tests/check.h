/*
 * check.h — the unit-test harness: CHECK macros that report file:line and
 * keep counting, a per-test runner, and helpers for temporary directories
 * and the shared data folder. Each test binary prints
 * "N passed, N failed" as its last line and exits non-zero on any failure.
 */
#ifndef FR_TEST_CHECK_H
#define FR_TEST_CHECK_H

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int check_failures;
static int check_passes;
static int check_case_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_case_failed = 1;                                                   \
        }                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                          \
    do {                                                                            \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);             \
        if (check_a_ != check_b_) {                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n",       \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);                \
            check_case_failed = 1;                                                  \
        }                                                                           \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                          \
    do {                                                                            \
        const char *check_a_ = (a), *check_b_ = (b);                                \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {           \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" != \"%s\")\n",   \
                    __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",     \
                    check_b_ ? check_b_ : "(null)");                                \
            check_case_failed = 1;                                                  \
        }                                                                           \
    } while (0)

#define CHECK_MEM(a, b, n)                                                          \
    do {                                                                            \
        if (memcmp((a), (b), (n)) != 0) {                                           \
            fprintf(stderr, "%s:%d: CHECK failed: memcmp(%s, %s, %s)\n", __FILE__,   \
                    __LINE__, #a, #b, #n);                                          \
            check_case_failed = 1;                                                  \
        }                                                                           \
    } while (0)

/* Run one test function and record its outcome. */
#define RUN(fn)                                                                     \
    do {                                                                            \
        check_case_failed = 0;                                                      \
        fn();                                                                       \
        if (check_case_failed) {                                                    \
            check_failures++;                                                       \
            fprintf(stderr, "FAIL %s\n", #fn);                                      \
        } else {                                                                    \
            check_passes++;                                                         \
            fprintf(stderr, "ok   %s\n", #fn);                                      \
        }                                                                           \
    } while (0)

static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures ? 1 : 0;
}

/* A fresh temporary directory under $TMPDIR (or /tmp); caller frees nothing. */
/* Send stdout to the file at path (created or emptied) until
 * check_stdout_end(saved), for commands that print their answer. */
static inline int check_stdout_begin(const char *path)
{
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    return saved;
}

static inline void check_stdout_end(int saved)
{
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
}

static inline const char *check_tmpdir(void)
{
    static char path[4096];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/frtest.XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(1);
    }
    return path;
}

/* Path of a file in the shared data folder, or NULL when shared/ is absent. */
static inline const char *check_shared(const char *rel)
{
    static char path[4096];
    const char *base = getenv("FR_SHARED_DIR");
    if (!base) {
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", base, rel);
    struct stat st;
    return stat(path, &st) == 0 ? path : NULL;
}

#endif
