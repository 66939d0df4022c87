/*
 * test_core.c — unit tests for src/core: CRC-32C against published vectors
 * (RFC 3720 appendix B.4), the hardware and table paths against each other,
 * capped buffers, JSON string escaping, RFC 3339 parsing against known Unix
 * times, the durable write recipe, the error table, and bulk mappings
 * (2 MiB aligned, zeroed, advised for huge pages: the "hg" flag that
 * /proc/self/smaps shows for a range madvise(MADV_HUGEPAGE) reached).
 */
#include "check.h"

#include "core/bgsync.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/crc32c.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/syncset.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void test_crc32c_vectors(void)
{
    CHECK_EQ_INT(fr_crc32c(0, "123456789", 9), 0xE3069283u);
    uint8_t zeros[32] = {0};
    CHECK_EQ_INT(fr_crc32c(0, zeros, 32), 0x8A9136AAu);
    uint8_t ones[32];
    memset(ones, 0xff, sizeof ones);
    CHECK_EQ_INT(fr_crc32c(0, ones, 32), 0x62A8AB43u);
    uint8_t inc[32];
    for (int i = 0; i < 32; i++) {
        inc[i] = (uint8_t)i;
    }
    CHECK_EQ_INT(fr_crc32c(0, inc, 32), 0x46DD794Eu);
    /* Hardware (three lanes from 384 bytes on, then one) and table paths
     * agree at every length, alignment and split point. */
    uint8_t data[5000];
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (uint8_t)x;
    }
    for (size_t len = 0; len < 4990; len += len < 800 ? 1 : 37) {
        const uint8_t *d = data + len % 7;
        uint32_t whole = fr_crc32c(0, d, len);
        CHECK_EQ_INT(whole, fr_crc32c_sw(0, d, len));
        CHECK_EQ_INT(whole, fr_crc32c(fr_crc32c(0, d, len / 3), d + len / 3, len - len / 3));
        CHECK_EQ_INT(fr_crc32c(0x12345678u, d, len), fr_crc32c_sw(0x12345678u, d, len));
    }
}

static void test_buf_cap(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 10);
    CHECK_EQ_INT(fr_buf_append(&buf, "0123456789", 10), FR_OK);
    CHECK_EQ_INT(fr_buf_putc(&buf, 'x'), FR_ETOOBIG);
    CHECK_EQ_INT(buf.len, 10);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "0123456789");
    fr_buf_consume(&buf, 4);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "456789");
    CHECK_EQ_INT(fr_buf_printf(&buf, "%d", 1234), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "4567891234");
    CHECK_EQ_INT(fr_buf_printf(&buf, "%d", 5), FR_ETOOBIG);
    fr_buf_free(&buf);
    fr_buf_free(NULL);

    fr_buf_init(&buf, 1 << 20);
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_EQ_INT(fr_buf_printf(&buf, "<%s>", big), FR_OK);
    CHECK_EQ_INT(buf.len, 601);
    fr_buf_free(&buf);
}

static void test_json_escape(void)
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1024);
    const char in[] = "a\"b\\c\n\x01\xc3\xa9";
    CHECK_EQ_INT(fr_buf_json_str(&buf, in, sizeof in - 1), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    fr_buf_free(&buf);
}

/* Random valid timestamps against libc's timegm (an independent
 * reference), with every fraction length and zone form; then each digit
 * replaced by a non-digit must be refused. */
static void test_rfc3339_random(void)
{
    uint64_t x = 0x9E3779B97F4A7C15u;
    int mismatches = 0, refused = 0, tried = 0;
    for (int it = 0; it < 20000; it++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        time_t t = (time_t)(x % (UINT64_C(230) * 365 * 86400)); /* 1970 .. ~2199 */
        struct tm tm;
        gmtime_r(&t, &tm);
        char s[64];
        int n = (int)strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
        int fd = (int)((x >> 20) % 10); /* fraction digits, 0 = none */
        uint64_t frac = 0;
        int64_t frac_us = 0;
        if (fd) {
            s[n++] = '.';
            for (int k = 0; k < fd; k++) {
                int dg = (int)((x >> (24 + 3 * k)) % 10);
                s[n++] = (char)('0' + dg);
                frac = frac * 10 + (uint64_t)dg;
                if (k < 6) {
                    frac_us = frac_us * 10 + dg;
                }
            }
            for (int k = fd; k < 6; k++) {
                frac_us *= 10;
            }
        }
        int zone = (int)((x >> 60) % 3), oh = (int)((x >> 8) % 24), om = (int)((x >> 14) % 60);
        int64_t off = 0;
        if (zone == 0) {
            s[n++] = (x >> 5) & 1 ? 'Z' : 'z';
        } else {
            n += snprintf(s + n, sizeof s - (size_t)n, "%c%02d:%02d", zone == 1 ? '+' : '-', oh, om);
            off = (int64_t)(oh * 3600 + om * 60) * (zone == 1 ? 1 : -1);
        }
        s[n] = 0;
        struct tm back = tm;
        int64_t want = ((int64_t)timegm(&back) - off) * 1000000 + frac_us;
        int64_t us = -1;
        if (fr_time_parse_rfc3339(s, (size_t)n, &us) != FR_OK || us != want) {
            mismatches++;
        }
        static const int digit_at[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
        char m[64];
        memcpy(m, s, (size_t)n + 1);
        m[digit_at[it % 14]] = "x/:-. Ta"[it % 8];
        tried++;
        refused += fr_time_parse_rfc3339(m, (size_t)n, &us) < 0;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(refused, tried);
}

static void test_rfc3339(void)
{
    int64_t us = 0;
    /* 2026-10-05T13:42:02.235Z == 1791207722235 ms (PROTOCOL.md's example). */
    const char *a = "2026-10-05T13:42:02.235Z";
    CHECK_EQ_INT(fr_time_parse_rfc3339(a, strlen(a), &us), FR_OK);
    CHECK_EQ_INT(us, 1791207722235000LL);
    const char *b = "2018-03-07T16:16:17+00:00";
    CHECK_EQ_INT(fr_time_parse_rfc3339(b, strlen(b), &us), FR_OK);
    CHECK_EQ_INT(us, 1520439377000000LL);
    const char *c = "1970-01-01T01:00:00+01:00";
    CHECK_EQ_INT(fr_time_parse_rfc3339(c, strlen(c), &us), FR_OK);
    CHECK_EQ_INT(us, 0);
    const char *d = "2022-12-11T04:27:02Z";
    CHECK_EQ_INT(fr_time_parse_rfc3339(d, strlen(d), &us), FR_OK);
    CHECK_EQ_INT(us, 1670732822000000LL);
    const char *bad[] = {"2026-13-05T13:42:02Z", "2026-02-30T00:00:00Z", "2026-10-05 13:42",
                         "2026-10-05T13:42:02", "2026-10-05T13:42:02.Z", "x026-10-05T13:42:02Z",
                         "2023-02-29T00:00:00Z", "2026-10-05T13:42:02Zjunk"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(fr_time_parse_rfc3339(bad[i], strlen(bad[i]), &us) < 0);
    }
    char out[32];
    fr_time_format_ms(1791207722235000LL, out);
    CHECK_EQ_STR(out, "2026-10-05T13:42:02.235Z");
    fr_time_format_ms(0, out);
    CHECK_EQ_STR(out, "1970-01-01T00:00:00.000Z");
}

static void test_write_atomic(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/sub/dir/file", dir);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    CHECK_EQ_INT(fr_fs_mkdirs(sub, 0755), FR_OK);
    CHECK_EQ_INT(fr_fs_mkdirs(sub, 0755), FR_OK);
    CHECK_EQ_INT(fr_fs_write_atomic(path, "hello", 5), FR_OK);
    CHECK_EQ_INT(fr_fs_write_atomic(path, "world!", 6), FR_OK);
    struct fr_buf buf;
    fr_buf_init(&buf, 100);
    CHECK_EQ_INT(fr_fs_read_file(path, &buf), FR_OK);
    CHECK_EQ_STR(fr_buf_cstr(&buf), "world!");
    fr_buf_free(&buf);
    fr_buf_init(&buf, 3);
    CHECK_EQ_INT(fr_fs_read_file(path, &buf), FR_ETOOBIG);
    fr_buf_free(&buf);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    fr_buf_init(&buf, 100);
    CHECK_EQ_INT(fr_fs_read_file(missing, &buf), FR_ENOTFOUND);
    fr_buf_free(&buf);
    char parent[8];
    CHECK_EQ_INT(fr_fs_parent_dir("a/bc/d", parent, sizeof parent), FR_OK);
    CHECK_EQ_STR(parent, "a/bc");
    CHECK_EQ_INT(fr_fs_parent_dir("d", parent, sizeof parent), FR_OK);
    CHECK_EQ_STR(parent, ".");
    CHECK_EQ_INT(fr_fs_parent_dir("/d", parent, sizeof parent), FR_OK);
    CHECK_EQ_STR(parent, "/");
    CHECK_EQ_INT(fr_fs_parent_dir("abcdefgh/d", parent, sizeof parent), FR_EINVAL);
}

static void test_err_table(void)
{
    CHECK_EQ_STR(fr_err_name(FR_ECRC), "FR_ECRC");
    CHECK_EQ_INT(fr_err_class(FR_ECRC), FR_ERRC_DATA);
    CHECK_EQ_INT(fr_err_class(FR_ETIMEOUT), FR_ERRC_RETRY);
    CHECK_EQ_INT(fr_err_class(FR_ECONFIG), FR_ERRC_FATAL);
    CHECK_EQ_STR(fr_strerror(-9999), "unknown error code");
    CHECK_EQ_INT(fr_err_from_errno(28 /* ENOSPC */), FR_ENOSPC);
}


static int json_ok(const char *s) { return fr_json_validate(s, s + strlen(s)) == FR_OK; }

/* RFC 8259 grammar cases, in the spirit of JSONTestSuite's y_ and n_ files. */
static void test_json_conformance(void)
{
    const char *good[] = {"{}", "[]", "0", "-0", "1.5e10", "-1E-2", "\"\"", "true", "false",
                          "null", " [1, 2 ,3] ", "{\"a\":{\"b\":[null,{}]}}",
                          "\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
                          "\"\xc3\xa9\xe2\x80\x8e\"", "123456789012345678901234567890"};
    for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (!json_ok(good[i])) {
            fprintf(stderr, "  rejected valid: %s\n", good[i]);
        }
        CHECK(json_ok(good[i]));
    }
    const char *bad[] = {"", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.",
                         ".5", "+1", "1e", "-", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"",
                         "\"a\nb\"", "[1 2]", "{} {}", "'a'", "[\"\t\"]", "NaN", "Infinity",
                         "{\"a\":}", "[,1]"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (json_ok(bad[i])) {
            fprintf(stderr, "  accepted invalid: %s\n", bad[i]);
        }
        CHECK(!json_ok(bad[i]));
    }
    /* Depth bound: 64 levels pass, 100 fail without blowing the stack. */
    char deep[256];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = 0;
    CHECK(json_ok(deep));
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = 0;
    CHECK(!json_ok(deep));
}

static void test_json_members(void)
{
    const char *ev = "{\"$schema\":\"/mediawiki/recentchange/1.0.0\",\"meta\":{\"id\":\"u-1\","
                     "\"dt\":\"2026-10-05T13:42:02.235Z\",\"domain\":\"canary\",\"offset\":"
                     "6600000000},\"title\":\"Caf\\u00e9 \\ud83d\\ude00\",\"n\":-9223372036854775808}";
    struct fr_json_val root, meta, v;
    CHECK(fr_json_value(ev, ev + strlen(ev), &root) != NULL);
    CHECK_EQ_INT(fr_json_member(&root, "meta", &meta), 1);
    CHECK_EQ_INT(fr_json_member(&meta, "domain", &v), 1);
    CHECK(fr_json_str_eq(&v, "canary"));
    CHECK_EQ_INT(fr_json_member(&meta, "missing", &v), 0);
    CHECK_EQ_INT(fr_json_member(&meta, "offset", &v), 1);
    int64_t n = 0;
    CHECK_EQ_INT(fr_json_int64(&v, &n), FR_OK);
    CHECK_EQ_INT(n, 6600000000LL);
    CHECK_EQ_INT(fr_json_member(&root, "n", &v), 1);
    CHECK_EQ_INT(fr_json_int64(&v, &n), FR_OK);
    CHECK(n == INT64_MIN);
    CHECK_EQ_INT(fr_json_member(&root, "title", &v), 1);
    char out[64];
    int len = fr_json_unescape(&v, out, sizeof out);
    CHECK_EQ_INT(len, 10);
    CHECK_MEM(out, "Caf\xc3\xa9 \xf0\x9f\x98\x80", 10);
    CHECK_EQ_INT(fr_json_unescape(&v, out, 4), FR_ETOOBIG);
    const char *lone = "\"\\ud83d x\"";
    CHECK(fr_json_value(lone, lone + strlen(lone), &v) != NULL);
    CHECK_EQ_INT(fr_json_unescape(&v, out, sizeof out), FR_EJSON);
    const char *big = "9223372036854775808";
    CHECK(fr_json_value(big, big + strlen(big), &v) != NULL);
    CHECK_EQ_INT(fr_json_int64(&v, &n), FR_ERANGE);
    const char *frac = "1.5";
    CHECK(fr_json_value(frac, frac + 3, &v) != NULL);
    CHECK_EQ_INT(fr_json_int64(&v, &n), FR_ERANGE);
}

/* The VmFlags line of the mapping in /proc/self/smaps that holds p, or ""
 * when there is none. */
static void vm_flags_of(const void *p, char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) {
        return;
    }
    char line[512];
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        /* a mapping's first line: "lo-hi perms ..."; no attribute line
         * ("Rss:", "AnonHugePages:", ...) parses as two hex numbers */
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(out, cap, "%s", line + 8);
            break;
        }
    }
    fclose(f);
}

static void test_bulk_map(void)
{
    /* A kernel built without transparent huge pages refuses the advice
     * (the memory is then ordinary pages, and still correct). */
    int thp = access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0;
    if (!thp) {
        fprintf(stderr, "  no transparent huge pages in this kernel: the advice is not checked\n");
    }
    const size_t sizes[] = {1, (size_t)FR_MEM_BULK_ALIGN, (size_t)5 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *p = fr_mem_bulk_map(n);
        CHECK(p != NULL);
        if (!p) {
            continue;
        }
        CHECK_EQ_INT((uintptr_t)p % FR_MEM_BULK_ALIGN, 0);
        /* zeroed, and the whole rounded size is ours to write */
        size_t rounded = (n + FR_MEM_BULK_ALIGN - 1) / FR_MEM_BULK_ALIGN * FR_MEM_BULK_ALIGN;
        size_t nonzero = 0;
        for (size_t k = 0; k < rounded; k += 4096) {
            nonzero += p[k] != 0;
            p[k] = 1;
        }
        p[rounded - 1] = 2;
        CHECK_EQ_INT(nonzero, 0);
        if (thp) {
            char flags[512];
            vm_flags_of(p, flags, sizeof flags);
            CHECK(strstr(flags, " hg") != NULL); /* MADV_HUGEPAGE reached it */
            vm_flags_of(p + rounded - 1, flags, sizeof flags);
            CHECK(strstr(flags, " hg") != NULL);
        }
        fr_mem_bulk_unmap(p, n);
    }
    CHECK(fr_mem_bulk_map(0) == NULL);
    fr_mem_bulk_unmap(NULL, 4096); /* a no-op */
}

/* A descriptor is open (fcntl answers) or closed (EBADF). */
static int fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static void test_syncset(void)
{
    const char *dir = check_tmpdir();
    char a[4200], b[4200], path[4300];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    CHECK_EQ_INT(fr_fs_mkdirs(a, 0755), FR_OK);
    CHECK_EQ_INT(fr_fs_mkdirs(b, 0755), FR_OK);
    struct fr_syncset *set = fr_syncset_new();
    CHECK(set != NULL);
    struct fr_syncset_stats st;
    CHECK_EQ_INT(fr_syncset_flush(set, NULL), FR_OK); /* empty: nothing done */
    fr_syncset_stats(set, &st);
    CHECK_EQ_INT(st.flushes, 0);

    /* three files in two directories, and a rename's directory again */
    int fds[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/f%d", i < 2 ? a : b, i);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fds[i] >= 0);
        CHECK_EQ_INT(fr_fs_write_all(fds[i], "data", 4), FR_OK);
        CHECK_EQ_INT(fr_syncset_add_file(set, fds[i], path), FR_OK);
    }
    CHECK_EQ_INT(fr_syncset_add_parent(set, path), FR_OK);
    fr_syncset_stats(set, &st);
    CHECK_EQ_INT(st.pending, 3);
    CHECK_EQ_INT(st.pending_dirs, 2);
    CHECK(fd_open(fds[0]) && fd_open(fds[2])); /* held until the flush */
    const char *what = NULL;
    CHECK_EQ_INT(fr_syncset_flush(set, &what), FR_OK);
    CHECK(what != NULL && what[0] == 0);
    CHECK(!fd_open(fds[0]) && !fd_open(fds[1]) && !fd_open(fds[2]));
    fr_syncset_stats(set, &st);
    CHECK_EQ_INT(st.flushes, 1);
    CHECK_EQ_INT(st.files, 3);
    CHECK_EQ_INT(st.dirs, 2);
    CHECK_EQ_INT(st.pending + st.pending_dirs, 0);

    /* beyond the cap an add is made durable at once */
    for (int i = 0; i < FR_SYNCSET_FILES + 2; i++) {
        snprintf(path, sizeof path, "%s/g%d", a, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK_EQ_INT(fr_syncset_add_file(set, fd, path), FR_OK);
    }
    fr_syncset_stats(set, &st);
    CHECK_EQ_INT(st.pending, FR_SYNCSET_FILES);
    CHECK_EQ_INT(st.immediate, 2);
    CHECK_EQ_INT(fr_syncset_flush(set, NULL), FR_OK);

    /* a descriptor that cannot be fsynced (a pipe): the flush reports it
     * by name, still closes everything and empties the set */
    int p[2];
    CHECK_EQ_INT(pipe(p), 0);
    snprintf(path, sizeof path, "%s/f0", a);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    CHECK_EQ_INT(fr_syncset_add_file(set, p[1], "the-pipe"), FR_OK);
    CHECK_EQ_INT(fr_syncset_add_file(set, fd, path), FR_OK);
    int rc = fr_syncset_flush(set, &what);
    CHECK(rc < 0);
    CHECK_EQ_STR(what, "the-pipe");
    CHECK(!fd_open(p[1]) && !fd_open(fd));
    close(p[0]);
    fr_syncset_stats(set, &st);
    CHECK_EQ_INT(st.pending + st.pending_dirs, 0);
    CHECK_EQ_INT(fr_syncset_flush(set, NULL), FR_OK);
    fr_syncset_free(set);
    fr_syncset_free(NULL);
}

/* Descriptors this process has open now (/proc/self/fd, less the
 * directory stream's own). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        return -1;
    }
    int n = 0;
    while (readdir(d)) {
        n++;
    }
    closedir(d);
    return n - 3; /* ".", ".." and d's descriptor */
}

/* The background fdatasync thread: requests are done (and their
 * descriptors closed), a file that cannot be opened is refused and
 * counted, an fdatasync that fails is counted, and a burst larger than the
 * queue never blocks: every request is either queued or dropped. */
static void test_bgsync(void)
{
    const char *dir = check_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/bg", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ_INT(fr_fs_write_all(fd, "some bytes", 10), FR_OK);
    struct fr_bgsync_stats a, b;
    fr_bgsync_drain();
    fr_bgsync_stats(&a);
    int fds = open_fds();
    CHECK(fds > 0);

    CHECK_EQ_INT(fr_bgsync_file(path), FR_OK);
    fr_bgsync_drain();
    fr_bgsync_stats(&b);
    CHECK_EQ_INT(b.requested - a.requested, 1);
    CHECK_EQ_INT(b.done - a.done, 1);
    CHECK_EQ_INT(b.failed - a.failed, 0);
    CHECK_EQ_INT(open_fds(), fds); /* the thread closed its descriptor */

    snprintf(path, sizeof path, "%s/no-such-file", dir);
    CHECK_EQ_INT(fr_bgsync_file(path), FR_ENOTFOUND);
    fr_bgsync_stats(&a);
    CHECK_EQ_INT(a.dropped - b.dropped, 1);
    CHECK_EQ_INT(a.requested, b.requested);

    /* /proc files open but cannot be synced (EINVAL) */
    CHECK_EQ_INT(fr_bgsync_file("/proc/self/status"), FR_OK);
    fr_bgsync_drain();
    fr_bgsync_stats(&b);
    CHECK_EQ_INT(b.failed - a.failed, 1);
    CHECK_EQ_INT(b.done - a.done, 1);

    snprintf(path, sizeof path, "%s/bg", dir);
    int queued = 0, dropped = 0;
    for (int i = 0; i < 4 * FR_BGSYNC_QUEUE; i++) {
        int rc = fr_bgsync_file(path);
        CHECK(rc == FR_OK || rc == FR_EAGAIN);
        queued += rc == FR_OK;
        dropped += rc == FR_EAGAIN;
    }
    fr_bgsync_drain();
    fr_bgsync_stats(&a);
    CHECK_EQ_INT(a.requested - b.requested, (uint64_t)queued);
    CHECK_EQ_INT(a.dropped - b.dropped, (uint64_t)dropped);
    CHECK_EQ_INT(a.done - b.done, (uint64_t)queued);
    CHECK_EQ_INT(open_fds(), fds);
    close(fd);
}

/* fr_mem_trim_idle trims only once the resident set grew by the slack
 * since the last trim (the growth here is a mapping of our own, so the
 * test does not depend on where malloc put its blocks). */
static void test_trim_slack(void)
{
    if (fr_mem_resident_bytes() <= 0) {
        fprintf(stderr, "  /proc/self/statm unreadable: trimming is unconditional, skipped\n");
        return;
    }
    fr_mem_trim_now();
    int64_t t = 1000000;
    CHECK_EQ_INT(fr_mem_trim_idle(t), 0); /* nothing grew */
    size_t small = FR_MEM_TRIM_SLACK / 4, big = (size_t)4 * FR_MEM_TRIM_SLACK;
    char *p = mmap(NULL, small + big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED) {
        return;
    }
    memset(p, 1, small); /* a quarter of the slack: kept, not trimmed */
    CHECK_EQ_INT(fr_mem_trim_idle(t + 2 * FR_MEM_TRIM_EVERY_MS), 0);
    memset(p + small, 1, big); /* past the slack: trimmed */
    CHECK_EQ_INT(fr_mem_trim_idle(t + 4 * FR_MEM_TRIM_EVERY_MS), 1);
    CHECK_EQ_INT(fr_mem_trim_idle(t + 6 * FR_MEM_TRIM_EVERY_MS), 0); /* no growth since */
    munmap(p, small + big);
}

int main(void)
{
    RUN(test_crc32c_vectors);
    RUN(test_buf_cap);
    RUN(test_json_escape);
    RUN(test_rfc3339);
    RUN(test_rfc3339_random);
    RUN(test_write_atomic);
    RUN(test_err_table);
    RUN(test_json_conformance);
    RUN(test_json_members);
    RUN(test_bulk_map);
    RUN(test_syncset);
    RUN(test_bgsync);
    RUN(test_trim_slack);
    return check_report();
}
