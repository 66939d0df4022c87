/*
 * fuzz_iceberg.c — libFuzzer target for the Iceberg files other engines and
 * other processes write: the Avro object container (src/iceberg/avro.c), a
 * manifest and a manifest list read from it (src/iceberg/manifest.c), and
 * table metadata JSON (src/iceberg/metadata.c).
 *
 * Each input goes through all four readers (an Avro file is not JSON and
 * the other way round, but a reader must refuse either cleanly). Checks:
 *   1. nothing crashes, leaks, reads past the input or overflows (ASan,
 *      UBSan);
 *   2. metadata that parses writes back to JSON that parses again, and
 *      writes the same bytes the second time (the writer is a function of
 *      what the reader kept);
 *   3. an Avro file the reader accepts is refused once its last byte is cut
 *      off (the sync marker closes every block: a torn file never passes).
 * Built with clang -fsanitize=fuzzer,address,undefined by
 * tests/fuzz/parsers.cmake; the ctest test fuzz_iceberg runs it for 10 s.
 * One thread; all memory is the input's or freed before returning.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "iceberg/iceberg_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_meta(const uint8_t *data, size_t size)
{
    struct ice_meta *meta = NULL, *again = NULL;
    struct fr_buf one, two;
    fr_buf_init(&one, 64u << 20);
    fr_buf_init(&two, 64u << 20);
    if (ice_meta_parse((const char *)data, size, &meta) < 0) {
        goto cleanup;
    }
    if (ice_meta_write(meta, &one) < 0) {
        goto cleanup; /* e.g. a value the writer's caps refuse: not a bug */
    }
    if (ice_meta_parse((const char *)one.data, one.len, &again) < 0) {
        abort(); /* we wrote JSON we cannot read back */
    }
    if (ice_meta_write(again, &two) < 0 || one.len != two.len ||
        memcmp(one.data, two.data, one.len) != 0) {
        abort(); /* the round trip is not stable */
    }
cleanup:
    ice_meta_free(meta);
    ice_meta_free(again);
    fr_buf_free(&one);
    fr_buf_free(&two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size copies, so ASan sees a read one past the end. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) {
        return 0;
    }
    memcpy(copy, data, size);

    struct ice_avro_file file;
    if (ice_avro_read(copy, size, &file) == FR_OK) {
        ice_avro_file_free(&file);
        if (size > 0 && ice_avro_read(copy, size - 1, &file) == FR_OK) {
            abort(); /* a torn container passed as whole */
        }
    }

    struct fr_ice_arena *arena = ice_arena_new(64u << 20);
    if (arena) {
        struct ice_mfile *mfiles = NULL;
        uint32_t n = 0;
        (void)ice_mlist_read(copy, size, arena, &mfiles, &n);
        ice_arena_reset(arena);

        /* A manifest-list row as the reader of a snapshot hands it over. */
        struct ice_mfile mf = {.path = "s3://b/m.avro", .length = (int64_t)size,
                               .sequence_number = 7, .min_sequence_number = 7,
                               .added_snapshot_id = 42};
        struct ice_entry *entries = NULL;
        (void)ice_manifest_read(copy, size, &mf, arena, &entries, &n);
        ice_arena_free(arena);
    }

    check_meta(copy, size);
    free(copy);
    return 0;
}
