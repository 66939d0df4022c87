/*
 * test_log.c — unit tests for src/log: round trip with keys, headers and
 * binary payloads across segment rolls and reopen; dense offsets; readers
 * from any offset; the single-writer lock; unflushed records invisible to
 * readers; CRC and framing damage in sealed data reported, not cut; torn
 * segment creation; retention by size and by age; ENOSPC and failing
 * fsync through the io table; the group-commit policy and its backoff;
 * listing; and a model-based run of random operations against an oracle.
 * The CLI has its own file (test_log_cmd.c), torn tails theirs
 * (test_log_torn.c), cross-process following test_log_follow.c.
 */
#include "check.h"

#include "test_log_util.c"

#include "core/diag.h"

#define TOPIC "recentchange"

static int64_t append_gen(struct fr_log *log, int32_t partition, uint64_t seed, int64_t offset,
                          size_t max_payload)
{
    struct tl_rec g;
    int64_t got = -1;
    tl_gen(&g, seed, partition, offset, max_payload);
    int rc = fr_log_append(log, partition, &g.rec, &got);
    return rc < 0 ? rc : got;
}

static void test_roundtrip_roll_reopen(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.segment_bytes = 16 * 1024;
    opts.write_chunk_bytes = 2500;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 0);
    struct fr_log_rec last;
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 0);
    for (int64_t i = 0; i < 400; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 1, i, 1500), i);
        if (i % 37 == 36) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
            CHECK_EQ_INT(fr_log_durable_end(log, 0), i + 1);
        }
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 400);
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    struct tl_rec g;
    tl_gen(&g, 1, 0, 399, 1500);
    CHECK(tl_same(&last, &g.rec));
    CHECK_EQ_INT(last.offset, 399);
    fr_log_close(log);

    struct fr_log_info info;
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &info), FR_OK);
    CHECK(info.segments > 5);
    CHECK_EQ_INT(info.earliest_offset, 0);
    CHECK_EQ_INT(info.end_offset, 400);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 1, 1500), 400);

    /* Reopen: nothing cut, appends continue densely. */
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    struct fr_log_recovery rec;
    CHECK_EQ_INT(fr_log_recovery(log, 0, &rec), FR_OK);
    CHECK_EQ_INT(rec.bytes_cut, 0);
    CHECK_EQ_INT(rec.records_cut, 0);
    CHECK_EQ_INT(rec.end_offset, 400);
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    CHECK_EQ_INT(last.offset, 399);
    for (int64_t i = 400; i < 450; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 1, i, 1500), i);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 1, 1500), 450);

    /* Readers from every kind of start point. */
    for (int64_t from = 0; from <= 450; from += 45) {
        struct fr_log_reader *reader = NULL;
        CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, from, NULL, &reader), FR_OK);
        int64_t n = from;
        struct fr_log_rec r;
        int rc;
        while ((rc = fr_log_reader_next(reader, &r, 0)) == 1) {
            tl_gen(&g, 1, 0, n, 1500);
            CHECK_EQ_INT(r.offset, n);
            CHECK(tl_same(&r, &g.rec));
            n++;
        }
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(n, 450);
        fr_log_reader_close(reader);
    }
    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 451, NULL, &reader), FR_ERANGE);
    CHECK(reader == NULL);
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 1, 0, NULL, &reader), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_log_reader_open(dir, "nope", 0, 0, NULL, &reader), FR_ENOTFOUND);
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, FR_LOG_OFFSET_END, NULL, &reader), FR_OK);
    CHECK_EQ_INT(fr_log_reader_end(reader), 450);
    struct fr_log_rec r;
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 0);
    fr_log_reader_close(reader);
    fr_log_reader_close(NULL);
    tl_rm_rf(dir);
}

static void test_lock(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL, *second = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &second), FR_ELOCKED);
    CHECK(second == NULL);
    fr_log_close(log);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &second), FR_OK);
    fr_log_close(second);
    fr_log_close(NULL);
    tl_rm_rf(dir);
}

static void test_invalid_args(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, "", NULL, &log), FR_EINVAL);
    CHECK_EQ_INT(fr_log_open(dir, "..", NULL, &log), FR_EINVAL);
    CHECK_EQ_INT(fr_log_open(dir, "a/b", NULL, &log), FR_EINVAL);
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.write_buffer_bytes = opts.max_record_bytes - 1;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_EINVAL);
    fr_log_opts_init(&opts);
    opts.max_record_bytes = 4096;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);

    struct fr_log_header bad_name = {"\xff\xfe", 2, "v", 1};
    struct fr_log_rec rec = {.headers = &bad_name, .header_count = 1};
    CHECK_EQ_INT(fr_log_append(log, 0, &rec, NULL), FR_EUTF8);
    struct fr_log_header empty_name = {"", 0, "v", 1};
    rec.headers = &empty_name;
    CHECK_EQ_INT(fr_log_append(log, 0, &rec, NULL), FR_EINVAL);
    rec.header_count = 0;
    CHECK_EQ_INT(fr_log_append(log, 1, &rec, NULL), FR_EINVAL);
    CHECK_EQ_INT(fr_log_append(log, -1, &rec, NULL), FR_EINVAL);
    static uint8_t big[5000];
    rec.payload = big;
    rec.payload_len = sizeof big;
    CHECK_EQ_INT(fr_log_append(log, 0, &rec, NULL), FR_ETOOBIG);
    rec.payload_len = 4096 - 48;
    int64_t off = -1;
    CHECK_EQ_INT(fr_log_append(log, 0, &rec, &off), FR_OK);
    CHECK_EQ_INT(off, 0);
    /* An empty record is a record. */
    struct fr_log_rec empty = {0};
    CHECK_EQ_INT(fr_log_append(log, 0, &empty, &off), FR_OK);
    CHECK_EQ_INT(off, 1);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 2);
    CHECK_EQ_INT(fr_log_durable_end(log, 3), FR_EINVAL);
    fr_log_close(log);
    tl_rm_rf(dir);
}

static void test_unflushed_invisible(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    struct fr_log_reader *reader = NULL;
    struct fr_log_rec r;
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.write_chunk_bytes = 1; /* the record reaches the file at once, unsynced */
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader), FR_OK);
    char path[4096];
    tl_seg_path(path, sizeof path, dir, TOPIC, 0, 0);
    CHECK_EQ_INT(tl_file_size(path), 32);
    CHECK_EQ_INT(append_gen(log, 0, 2, 0, 100), 0);
    CHECK(tl_file_size(path) > 32);
    int64_t t0 = fr_log_io_posix.mono_ms(NULL);
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 150), 0);
    CHECK(fr_log_io_posix.mono_ms(NULL) - t0 >= 140);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 0);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 1000), 1);
    CHECK_EQ_INT(r.offset, 0);
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 0);
    fr_log_reader_close(reader);
    fr_log_close(log);
    tl_rm_rf(dir);
}

/* Write n generated records (seed 3) into one segment; return the path. */
static void write_one_segment(const char *dir, int64_t n, char *path, size_t cap)
{
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    for (int64_t i = 0; i < n; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 3, i, 300), i);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    tl_seg_path(path, cap, dir, TOPIC, 0, 0);
}

static void test_crc_in_sealed_data(void)
{
    char path[4096];
    struct fr_log *log = NULL;
    /* A flipped payload bit in a middle record of the last segment. */
    const char *dir = check_tmpdir();
    write_one_segment(dir, 10, path, sizeof path);
    int64_t size = tl_file_size(path);
    int64_t pos5 = tl_frame_pos(path, 5);
    CHECK(pos5 > 0);
    CHECK_EQ_INT(tl_flip(path, pos5 + 47), 0);
    fprintf(stderr, "(an error about a checksum mismatch at byte %lld is expected)\n",
            (long long)pos5);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_ECRC);
    CHECK(log == NULL);
    CHECK_EQ_INT(tl_file_size(path), size); /* nothing cut */
    /* A reader gets the five good records, then the error. */
    struct fr_log_reader *reader = NULL;
    struct fr_log_rec r;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader), FR_OK);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 1);
    }
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), FR_ECRC);
    fr_log_reader_close(reader);
    tl_rm_rf(dir);

    /* A damaged length field in a middle record: corrupt, not torn. */
    dir = check_tmpdir();
    write_one_segment(dir, 10, path, sizeof path);
    CHECK_EQ_INT(tl_flip(path, tl_frame_pos(path, 3) + 5), 0);
    CHECK(fr_log_open(dir, TOPIC, NULL, &log) < 0);
    CHECK(log == NULL);
    tl_rm_rf(dir);

    /* The first record of a one-record-damaged file, records after it valid. */
    dir = check_tmpdir();
    write_one_segment(dir, 3, path, sizeof path);
    CHECK_EQ_INT(tl_flip(path, 32 + 20), 0);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_ECRC);
    tl_rm_rf(dir);

    /* Damage in a sealed (non-last) segment: a reader reports it with the
     * position; the writer's open is not slowed by scanning sealed data. */
    dir = check_tmpdir();
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.segment_bytes = 4096;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    for (int64_t i = 0; i < 60; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 3, i, 300), i);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    tl_seg_path(path, sizeof path, dir, TOPIC, 0, 0);
    int64_t last_pos = -1, p;
    for (int64_t k = 0; (p = tl_frame_pos(path, k)) >= 0 && p < tl_file_size(path); k++) {
        last_pos = p;
    }
    CHECK(last_pos > 32);
    CHECK_EQ_INT(tl_flip(path, tl_file_size(path) - 1), 0); /* last byte of its last record */
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader), FR_OK);
    int rc;
    int64_t got = 0;
    while ((rc = fr_log_reader_next(reader, &r, 0)) == 1) {
        got++;
    }
    CHECK_EQ_INT(rc, FR_ECRC);
    CHECK(got > 0 && got < 60);
    fr_log_reader_close(reader);
    tl_rm_rf(dir);
}

static void test_torn_segment_creation(void)
{
    char path[4096];
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    write_one_segment(dir, 5, path, sizeof path);
    /* A crash while rolling: the next segment exists with half a header. */
    tl_seg_path(path, sizeof path, dir, TOPIC, 0, 5);
    CHECK_EQ_INT(tl_spew(path, "FRLS\x01\0\0", 7), 0);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    struct fr_log_recovery rec;
    CHECK_EQ_INT(fr_log_recovery(log, 0, &rec), FR_OK);
    CHECK_EQ_INT(rec.segments_removed, 1);
    CHECK_EQ_INT(rec.bytes_cut, 7);
    CHECK_EQ_INT(rec.end_offset, 5);
    CHECK_EQ_INT(tl_file_size(path), -1);
    CHECK_EQ_INT(append_gen(log, 0, 3, 5, 300), 5);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 3, 300), 6);

    /* A zero-length only segment. */
    tl_rm_rf(dir);
    dir = check_tmpdir();
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    fr_log_close(log);
    tl_seg_path(path, sizeof path, dir, TOPIC, 0, 0);
    CHECK_EQ_INT(tl_spew(path, "", 0), 0);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    CHECK_EQ_INT(fr_log_recovery(log, 0, &rec), FR_OK);
    CHECK_EQ_INT(rec.segments_removed, 1);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 0);
    CHECK_EQ_INT(append_gen(log, 0, 3, 0, 300), 0);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 3, 300), 1);
    tl_rm_rf(dir);
}

static void test_empty_active_after_roll(void)
{
    /* Records 0..k in segments; the writer rolled to an empty segment and
     * stopped. Open must find the last record in the previous segment. */
    char dir[1024], copy[1024];
    tl_tmpdir(dir);
    tl_tmpdir(copy);
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.segment_bytes = 2048;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    int64_t i = 0;
    char path[4096];
    for (;; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 4, i, 200), i);
        tl_seg_path(path, sizeof path, dir, TOPIC, 0, i);
        if (i > 0 && tl_file_size(path) >= 0) {
            break; /* appending i rolled to segment i */
        }
    }
    /* Segment i exists with only its header; record i is still buffered.
     * Simulate a crash: the record never reached the file. */
    struct fr_log_info info;
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &info), FR_OK);
    CHECK_EQ_INT(info.end_offset, i);
    CHECK_EQ_INT(tl_file_size(path), 32);
    /* Simulate a crash at this point (the buffered record never reached
     * the file): copy the directory while the writer still holds it. */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp -r %s/log %s/", dir, copy);
    CHECK_EQ_INT(system(cmd), 0);
    fr_log_close(log);
    CHECK_EQ_INT(fr_log_open(copy, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), i);
    struct fr_log_rec last;
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    CHECK_EQ_INT(last.offset, i - 1);
    CHECK_EQ_INT(append_gen(log, 0, 4, i, 200), i);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(copy, TOPIC, 0, 4, 200), i + 1);
    tl_rm_rf(copy);
    tl_rm_rf(dir);
}

static void test_recovered_records_are_synced(void)
{
    /* A writer killed after early writes leaves valid but unsynced records
     * in the page cache. The next open keeps them, and must sync them
     * before publishing them to readers. */
    char dir[1024], copy[1024], cmd[4096];
    tl_tmpdir(dir);
    tl_tmpdir(copy);
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.write_chunk_bytes = 1;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    for (int64_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 12, i, 300), i);
    }
    snprintf(cmd, sizeof cmd, "cp -r %s/log %s/", dir, copy);
    CHECK_EQ_INT(system(cmd), 0);
    fr_log_close(log);

    struct fr_log *recovered = NULL;
    struct tl_io io2;
    tl_opts(&opts, &io2);
    CHECK_EQ_INT(fr_log_open(copy, TOPIC, &opts, &recovered), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(recovered, 0), 3);
    CHECK(io2.syncs >= 3); /* segment, marker, directory */
    fr_log_close(recovered);
    CHECK_EQ_INT(tl_verify(copy, TOPIC, 0, 12, 300), 3);
    tl_rm_rf(copy);
    tl_rm_rf(dir);
}

static void test_retention_size(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.segment_bytes = 4096;
    opts.retention_ms = 0;
    opts.retention_bytes = 12 * 1024;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    for (int64_t i = 0; i < 200; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 5, i, 400), i);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    struct fr_log_info before, after;
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &before), FR_OK);
    CHECK(before.bytes > 2 * opts.retention_bytes);
    /* A reader parked at offset 0 holds segment 0 open. */
    struct fr_log_reader *parked = NULL;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &parked), FR_OK);
    int deleted = fr_log_retention_run(log, 0);
    CHECK(deleted > 0);
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &after), FR_OK);
    CHECK_EQ_INT(after.segments, before.segments - deleted);
    CHECK(after.bytes >= opts.retention_bytes);
    CHECK(after.bytes < opts.retention_bytes + 4096 + 1024);
    CHECK(after.earliest_offset > 0);
    CHECK_EQ_INT(after.end_offset, 200);
    CHECK_EQ_INT(fr_log_retention_run(log, 0), 0); /* idempotent */

    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, 0, NULL, &reader), FR_ERANGE);
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, FR_LOG_OFFSET_EARLIEST, NULL, &reader), FR_OK);
    struct fr_log_rec r;
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 0), 1);
    CHECK_EQ_INT(r.offset, after.earliest_offset);
    fr_log_reader_close(reader);

    /* The parked reader reads its open segment to the end, then learns
     * that retention outran it. */
    int rc;
    int64_t n = 0;
    while ((rc = fr_log_reader_next(parked, &r, 0)) == 1) {
        CHECK_EQ_INT(r.offset, n);
        n++;
    }
    CHECK_EQ_INT(rc, FR_ERANGE);
    CHECK(n > 0 && n < after.earliest_offset);
    fr_log_reader_close(parked);

    /* The smallest limit keeps the active segment (and the last record). */
    fr_log_close(log);
    opts.retention_bytes = 1;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK(fr_log_retention_run(log, 0) > 0);
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &after), FR_OK);
    CHECK_EQ_INT(after.segments, 1);
    struct fr_log_rec last;
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    CHECK_EQ_INT(last.offset, 199);
    CHECK_EQ_INT(append_gen(log, 0, 5, 200, 400), 200);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    tl_rm_rf(dir);
}

static void test_retention_age(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    io.fake_clock = 1;
    opts.segment_bytes = 4096;
    opts.retention_ms = 60000;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    /* One record per second for 100 s; segments roll every few records. */
    for (int64_t i = 0; i < 100; i++) {
        io.wall = 1000000 + i * 1000;
        CHECK_EQ_INT(append_gen(log, 0, 6, i, 800), i);
        CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    }
    /* The clock going backwards does not make append times decrease. */
    io.wall = 0;
    CHECK_EQ_INT(append_gen(log, 0, 6, 100, 800), 100);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    struct fr_log_rec last;
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    CHECK_EQ_INT(last.append_time, 1000000 + 99 * 1000);

    struct fr_log_info before, after;
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &before), FR_OK);
    CHECK_EQ_INT(before.oldest_append_ms, 1000000);
    CHECK_EQ_INT(before.newest_append_ms, 1000000 + 99 * 1000);
    CHECK_EQ_INT(fr_log_retention_run(log, 1000000), 0); /* nothing is old yet */
    /* At t = 1,000,000 + 100 s, records older than 40 s expire. */
    int64_t now = 1000000 + 100 * 1000;
    int deleted = fr_log_retention_run(log, now);
    CHECK(deleted > 0);
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &after), FR_OK);
    /* Every remaining record but those of the oldest remaining segment is
     * within retention, and no deleted segment held a record within it:
     * the oldest kept record is at most one segment older than the cutoff. */
    CHECK(after.oldest_append_ms >= 1000000);
    int64_t cutoff = now - opts.retention_ms;
    CHECK(after.oldest_append_ms < cutoff + 1);
    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, FR_LOG_OFFSET_EARLIEST, NULL, &reader), FR_OK);
    struct fr_log_rec r;
    int64_t first_kept = -1, young_seen = 0;
    while (fr_log_reader_next(reader, &r, 0) == 1) {
        if (first_kept < 0) {
            first_kept = r.offset;
        }
        young_seen += r.append_time >= cutoff;
    }
    fr_log_reader_close(reader);
    /* All 61 records with append time >= cutoff (40..99, and offset 100
     * stamped with 99's time) survive. */
    CHECK_EQ_INT(young_seen, 61);
    CHECK(first_kept > 0 && first_kept <= 40);
    /* Far in the future: all sealed segments go, the active one stays. */
    CHECK(fr_log_retention_run(log, now + 1000000) > 0);
    CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &after), FR_OK);
    CHECK_EQ_INT(after.segments, 1);
    CHECK_EQ_INT(after.end_offset, 101);
    fr_log_close(log);
    tl_rm_rf(dir);
}

/* Acknowledged records cut from the active segment after the fact (a
 * truncated copy, a damaged disk): open refuses and cuts nothing, at a
 * frame boundary and inside a frame; without the durable marker (the
 * operator accepts the loss) the tail is cut as torn. */
static void test_lost_acknowledged(void)
{
    char path[4096], mark[4200];
    struct fr_log *log = NULL;
    int64_t lens[2];
    for (int k = 0; k < 2; k++) {
        const char *dir = check_tmpdir();
        write_one_segment(dir, 10, path, sizeof path);
        lens[0] = tl_frame_pos(path, 6);     /* records 0..5 whole */
        lens[1] = tl_frame_pos(path, 6) + 9; /* and 9 bytes of record 6 */
        CHECK(lens[0] > 0);
        CHECK_EQ_INT(truncate(path, lens[k]), 0);
        fprintf(stderr, "(an error about acknowledged records is expected)\n");
        CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_ECORRUPT);
        CHECK(log == NULL);
        CHECK_EQ_INT(tl_file_size(path), lens[k]); /* nothing cut */
        snprintf(mark, sizeof mark, "%.*s/durable", (int)(strrchr(path, '/') - path), path);
        CHECK_EQ_INT(unlink(mark), 0);
        CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
        struct fr_log_recovery rec = {0};
        CHECK_EQ_INT(fr_log_recovery(log, 0, &rec), FR_OK);
        CHECK_EQ_INT(rec.end_offset, 6);
        fr_log_close(log);
        log = NULL;
        tl_rm_rf(dir);
    }
}

static void test_enospc(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.write_buffer_bytes = 16 * 1024;
    opts.write_chunk_bytes = 3000; /* early writes fail too */
    opts.max_record_bytes = 4096;
    opts.segment_bytes = 64 * 1024;
    struct fr_log *log = NULL;
    char path[4096];
    tl_seg_path(path, sizeof path, dir, TOPIC, 0, 0);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    for (int64_t i = 0; i < 10; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 7, i, 1000), i);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    int64_t acked_size = tl_file_size(path);

    /* The disk fills after 700 more bytes: a partial write, cut back. */
    io.budget = 700;
    int64_t next = 10;
    for (; next < 16; next++) {
        CHECK_EQ_INT(append_gen(log, 0, 7, next, 1000), next);
    }
    fprintf(stderr, "(warnings about failed flushes are expected)\n");
    CHECK_EQ_INT(fr_log_flush(log), FR_ENOSPC);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 10);
    CHECK_EQ_INT(tl_file_size(path), acked_size);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 7, 1000), 10);
    /* Automatic flushes back off for a while after the failure. */
    int64_t wait = fr_log_next_flush_in(log, fr_log_io_posix.mono_ms(NULL));
    CHECK(wait > 0 && wait <= 100);
    CHECK_EQ_INT(fr_log_maybe_flush(log, fr_log_io_posix.mono_ms(NULL)), 0);
    /* Appends fill the buffer, then fail with the flush's error and are
     * not accepted (no offset is consumed); during the backoff without
     * touching the disk. */
    int64_t written_before = io.bytes_written;
    int rc = FR_OK;
    for (int k = 0; k < 100 && rc == FR_OK; k++) {
        int64_t got = append_gen(log, 0, 7, next, 1000);
        rc = got < 0 ? (int)got : FR_OK;
        if (rc == FR_OK) {
            CHECK_EQ_INT(got, next);
            next++;
        }
    }
    CHECK_EQ_INT(rc, FR_ENOSPC);
    CHECK_EQ_INT(io.bytes_written, written_before);
    CHECK_EQ_INT(fr_log_maybe_flush(log, fr_log_io_posix.mono_ms(NULL) + 100000), FR_ENOSPC);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 10);
    CHECK_EQ_INT(tl_file_size(path), acked_size);

    /* Space returns: the same buffered records are written, in order. */
    io.budget = -1;
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), next);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 7, 1000), next);

    /* ENOSPC while creating the next segment: nothing left behind. With
     * the buffer flushed first, the only write an append can need is the
     * roll's. */
    int64_t before_roll = next;
    for (;;) {
        char nextseg[4096];
        tl_seg_path(nextseg, sizeof nextseg, dir, TOPIC, 0, next);
        CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        io.budget = 0;
        int64_t got = append_gen(log, 0, 7, next, 1000);
        io.budget = -1;
        if (got == FR_ENOSPC) {
            CHECK_EQ_INT(tl_file_size(nextseg), -1);
            CHECK_EQ_INT(fr_log_durable_end(log, 0), next);
            break;
        }
        CHECK_EQ_INT(got, next);
        next++;
        if (next >= before_roll + 200) {
            CHECK(0);
            break;
        }
    }
    CHECK_EQ_INT(append_gen(log, 0, 7, next, 1000), next);
    next++;
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 7, 1000), next);
    tl_rm_rf(dir);
}

static void test_fsync_failure(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.write_chunk_bytes = 1000; /* some of it is in the file before the fsync fails */
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    for (int64_t i = 0; i < 5; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 8, i, 500), i);
    }
    io.sync_failures = 1;
    CHECK_EQ_INT(fr_log_flush(log), FR_EIO);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 0);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 8, 500), 0);
    CHECK_EQ_INT(append_gen(log, 0, 8, 5, 500), 5);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 6);
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 8, 500), 6);
    tl_rm_rf(dir);
}

static void test_group_commit_policy(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    io.fake_clock = 1;
    io.mono = 5000;
    opts.fsync_interval_ms = 10;
    opts.fsync_bytes = 4096;
    opts.partitions = 2;
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_partitions(log), 2);
    int64_t syncs = io.syncs;
    CHECK_EQ_INT(fr_log_next_flush_in(log, io.mono), -1);
    CHECK_EQ_INT(fr_log_maybe_flush(log, io.mono), 0);
    struct fr_log_rec small = {.payload = "x", .payload_len = 1};
    CHECK_EQ_INT(fr_log_append(log, 1, &small, NULL), FR_OK);
    CHECK_EQ_INT(fr_log_next_flush_in(log, io.mono), 10);
    io.mono += 4;
    CHECK_EQ_INT(fr_log_append(log, 0, &small, NULL), FR_OK);
    CHECK_EQ_INT(fr_log_next_flush_in(log, io.mono), 6); /* the oldest pending decides */
    CHECK_EQ_INT(fr_log_maybe_flush(log, io.mono), 0);
    CHECK_EQ_INT(io.syncs, syncs);
    CHECK_EQ_INT(fr_log_maybe_flush(log, io.mono + 6), 1);
    CHECK(io.syncs > syncs);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 1);
    CHECK_EQ_INT(fr_log_durable_end(log, 1), 1);
    CHECK_EQ_INT(fr_log_next_flush_in(log, io.mono), -1);

    /* The byte threshold flushes without waiting for the timer. */
    static uint8_t kb[1000];
    struct fr_log_rec big = {.payload = kb, .payload_len = sizeof kb};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(fr_log_append(log, 0, &big, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_maybe_flush(log, io.mono), 0);
    CHECK_EQ_INT(fr_log_append(log, 0, &big, NULL), FR_OK);
    CHECK_EQ_INT(fr_log_next_flush_in(log, io.mono), 0);
    CHECK_EQ_INT(fr_log_maybe_flush(log, io.mono), 1);
    CHECK_EQ_INT(fr_log_durable_end(log, 0), 5);
    fr_log_close(log);

    /* Partitions are never removed: opening with fewer keeps them all. */
    opts.partitions = 1;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_partitions(log), 2);
    CHECK_EQ_INT(fr_log_durable_end(log, 1), 1);
    fr_log_close(log);
    tl_rm_rf(dir);
}

static void test_close_flushes(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, NULL, &log), FR_OK);
    for (int64_t i = 0; i < 20; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 9, i, 100), i);
    }
    fr_log_close(log);
    CHECK_EQ_INT(tl_verify(dir, TOPIC, 0, 9, 100), 20);
    tl_rm_rf(dir);
}

static void test_reader_follows_rolls(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_opts opts;
    struct tl_io io;
    tl_opts(&opts, &io);
    opts.segment_bytes = 3000;
    struct fr_log *log = NULL;
    struct fr_log_reader *reader = NULL;
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_reader_open(dir, TOPIC, 0, FR_LOG_OFFSET_END, NULL, &reader), FR_OK);
    int64_t n = 0;
    struct tl_rec g;
    for (int64_t i = 0; i < 300; i++) {
        CHECK_EQ_INT(append_gen(log, 0, 10, i, 600), i);
        if (i % 7 == 0) {
            CHECK_EQ_INT(fr_log_flush(log), FR_OK);
        }
        struct fr_log_rec r;
        int rc;
        while ((rc = fr_log_reader_next(reader, &r, 0)) == 1) {
            tl_gen(&g, 10, 0, n, 600);
            CHECK_EQ_INT(r.offset, n);
            CHECK(tl_same(&r, &g.rec));
            n++;
        }
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(n, fr_log_durable_end(log, 0));
    }
    fr_log_close(log);
    struct fr_log_rec r;
    while (fr_log_reader_next(reader, &r, 0) == 1) {
        n++;
    }
    CHECK_EQ_INT(n, 300);
    /* The writer restarts: the same reader keeps following (a blocking
     * wait already set up its watches before the restart). */
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 20), 0);
    CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 20), 0);
    CHECK_EQ_INT(append_gen(log, 0, 10, 300, 600), 300);
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    CHECK_EQ_INT(fr_log_reader_next(reader, &r, 5000), 1);
    CHECK_EQ_INT(r.offset, 300);
    fr_log_close(log);
    fr_log_reader_close(reader);
    tl_rm_rf(dir);
}

static void test_list(void)
{
    const char *dir = check_tmpdir();
    struct fr_log_info *infos = NULL;
    size_t n = 99;
    CHECK_EQ_INT(fr_log_list(dir, &infos, &n), FR_OK);
    CHECK_EQ_INT(n, 0);
    free(infos);
    struct fr_log_opts opts;
    fr_log_opts_init(&opts);
    opts.partitions = 2;
    struct fr_log *a = NULL, *b = NULL;
    CHECK_EQ_INT(fr_log_open(dir, "zeta", NULL, &a), FR_OK);
    CHECK_EQ_INT(fr_log_open(dir, "alpha", &opts, &b), FR_OK);
    for (int64_t i = 0; i < 7; i++) {
        CHECK_EQ_INT(append_gen(b, 1, 11, i, 100), i);
    }
    CHECK_EQ_INT(fr_log_flush(b), FR_OK);
    CHECK_EQ_INT(fr_log_list(dir, &infos, &n), FR_OK);
    CHECK_EQ_INT(n, 3);
    if (n == 3) {
        CHECK_EQ_STR(infos[0].topic, "alpha");
        CHECK_EQ_INT(infos[0].partition, 0);
        CHECK_EQ_INT(infos[0].end_offset, 0);
        CHECK_EQ_INT(infos[0].oldest_append_ms, -1);
        CHECK_EQ_STR(infos[1].topic, "alpha");
        CHECK_EQ_INT(infos[1].partition, 1);
        CHECK_EQ_INT(infos[1].end_offset, 7);
        CHECK_EQ_INT(infos[1].segments, 1);
        CHECK(infos[1].bytes > 7 * 48);
        CHECK(infos[1].oldest_append_ms > 0);
        CHECK(infos[1].newest_append_ms >= infos[1].oldest_append_ms);
        CHECK_EQ_STR(infos[2].topic, "zeta");
    }
    free(infos);
    CHECK_EQ_INT(fr_log_stat(dir, "alpha", 5, &(struct fr_log_info){0}), FR_ENOTFOUND);
    fr_log_close(a);
    fr_log_close(b);
    tl_rm_rf(dir);
}

/* Read partition 0 from FR_LOG_OFFSET_EARLIEST to its end; every record
 * must be generator record (seed, offset); returns the earliest offset
 * read and sets *end, or -1. */
static int64_t model_check(const char *dir, uint64_t seed, size_t max_payload, int64_t *end)
{
    struct fr_log_reader *reader = NULL;
    struct fr_log_rec r;
    struct tl_rec g;
    if (fr_log_reader_open(dir, TOPIC, 0, FR_LOG_OFFSET_EARLIEST, NULL, &reader) != FR_OK) {
        return -1;
    }
    int64_t first = -1, next = -1;
    int rc;
    while ((rc = fr_log_reader_next(reader, &r, 0)) == 1) {
        if (first < 0) {
            first = next = r.offset;
        }
        tl_gen(&g, seed, 0, r.offset, max_payload);
        if (r.offset != next || !tl_same(&r, &g.rec)) {
            rc = -1;
            break;
        }
        next++;
    }
    *end = fr_log_reader_end(reader);
    fr_log_reader_close(reader);
    if (rc != 0 || (first >= 0 && next != *end)) {
        return -1;
    }
    return first < 0 ? *end : first;
}

/* Random operations against an oracle: appends, flushes, the group-commit
 * policy, a disk that fills and empties, size retention, reopening. The
 * oracle is the record generator plus four numbers: the next offset, the
 * durable end, the earliest retained offset, and when the backoff after a
 * failed flush ends (appends may fail with FR_ENOSPC until then). */
static void test_model_random_ops(void)
{
    int64_t reopens = 0, failures = 0, retained_from = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        char dir[1024];
        tl_tmpdir(dir);
        struct fr_log_opts opts;
        struct tl_io io;
        tl_opts(&opts, &io);
        io.fake_clock = 1;
        io.mono = 1000;
        io.wall = 1000;
        opts.segment_bytes = 3000 + (int64_t)(seed * 500);
        opts.write_buffer_bytes = 8192;
        opts.write_chunk_bytes = seed % 2 ? 1500 : 0;
        opts.max_record_bytes = 4096;
        opts.fsync_interval_ms = 5;
        opts.fsync_bytes = 4000;
        opts.retention_ms = 0;
        opts.retention_bytes = 12000;
        struct fr_log *log = NULL;
        CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
        uint64_t st = seed * 7777;
        int64_t next = 0, durable = 0, earliest = 0, backoff_end = 0;
        for (int op = 0; op < 500 && log && !check_case_failed; op++) {
            io.mono += (int64_t)tl_below(&st, 3);
            io.wall += 1;
            int rc = FR_OK;
            switch (tl_below(&st, 20)) {
            case 0: /* the disk fills up (a little room left) or empties */
                io.budget = tl_below(&st, 2) ? (int64_t)tl_below(&st, 3000) : -1;
                break;
            case 1:
                rc = fr_log_flush(log);
                CHECK(rc == FR_OK || (rc == FR_ENOSPC && io.budget >= 0));
                if (rc == FR_OK) {
                    durable = next;
                }
                break;
            case 2:
                CHECK(fr_log_retention_run(log, io.wall) >= 0);
                break;
            case 3: { /* reopen: close flushes what it can */
                fr_log_close(log);
                log = NULL;
                io.budget = -1;
                backoff_end = 0;
                reopens++;
                CHECK_EQ_INT(fr_log_open(dir, TOPIC, &opts, &log), FR_OK);
                int64_t end = log ? fr_log_durable_end(log, 0) : -1;
                CHECK(end >= durable && end <= next);
                durable = next = end; /* records close could not flush are gone */
                break;
            }
            default: {
                struct tl_rec g;
                int64_t off = -1;
                tl_gen(&g, seed, 0, next, 1200);
                rc = fr_log_append(log, 0, &g.rec, &off);
                CHECK(rc == FR_OK ||
                      (rc == FR_ENOSPC && (io.budget >= 0 || io.mono < backoff_end)));
                if (rc == FR_OK) {
                    CHECK_EQ_INT(off, next);
                    next++;
                } else {
                    failures++;
                }
                int f = fr_log_maybe_flush(log, io.mono);
                CHECK(f >= 0 || (f == FR_ENOSPC && io.budget >= 0));
                if (f < 0) {
                    rc = f;
                }
                break;
            }
            }
            if (rc == FR_ENOSPC) {
                backoff_end = io.mono + 100;
            }
            if (!log) {
                break;
            }
            /* Flushes the log did on its own (full buffer, roll) count too. */
            int64_t end = fr_log_durable_end(log, 0);
            CHECK(end >= durable && end <= next);
            durable = end;
            if (op % 25 == 0 || op == 499) {
                int64_t seen_end = -1;
                int64_t first = model_check(dir, seed, 1200, &seen_end);
                CHECK(first >= earliest);
                CHECK_EQ_INT(seen_end, durable);
                earliest = first;
                struct fr_log_info info;
                CHECK_EQ_INT(fr_log_stat(dir, TOPIC, 0, &info), FR_OK);
                CHECK_EQ_INT(info.earliest_offset, earliest);
                CHECK_EQ_INT(info.end_offset, durable);
            }
        }
        retained_from += earliest;
        fr_log_close(log);
        if (check_case_failed) {
            fprintf(stderr, "model: seed %llu failed (dir %s)\n", (unsigned long long)seed, dir);
            break;
        }
        tl_rm_rf(dir);
    }
    /* The run reached the interesting states. */
    CHECK(reopens > 10);
    CHECK(failures > 10);
    CHECK(retained_from > 8 * 100);
}

int main(void)
{
    fr_diag_set_level(FR_DIAG_WARN);
    RUN(test_roundtrip_roll_reopen);
    RUN(test_lock);
    RUN(test_invalid_args);
    RUN(test_unflushed_invisible);
    RUN(test_crc_in_sealed_data);
    RUN(test_torn_segment_creation);
    RUN(test_empty_active_after_roll);
    RUN(test_recovered_records_are_synced);
    RUN(test_retention_size);
    RUN(test_retention_age);
    RUN(test_lost_acknowledged);
    RUN(test_enospc);
    RUN(test_fsync_failure);
    RUN(test_group_commit_policy);
    RUN(test_close_flushes);
    RUN(test_reader_follows_rolls);
    RUN(test_list);
    RUN(test_model_random_ops);
    return check_report();
}
