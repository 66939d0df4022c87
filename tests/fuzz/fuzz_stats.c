/*
 * fuzz_stats.c — libFuzzer target for the stats files `freshet serve`
 * maps (src/stats/stats.c, group.c) and the documents it renders from
 * them (src/stats/render.c: /metrics, /api/v1/status, the members of the
 * scale-out group). The files are shared memory between processes of one
 * machine; a crashed writer, a build of another version or a stray file
 * in stats/ must never crash serve or break its documents.
 *
 * Input: a file byte (0 ingest.stats, 1 process.stats, 2 a shard's
 * process-p<N>.stats with N from the flags, 3 finalize.stats), a flags
 * byte, then the file. A header with the right magic, layout CRC, stage
 * and role is what random bytes never have, so with flag 1 the target
 * sets those (and pads or cuts the file to its fixed size), which lets
 * the fuzzer reach the slots: counters, gauges and histograms with any
 * bits, NaN and infinities included. Checks, besides ASan and UBSan:
 *   1. every JSON document rendered (status per stage, rates, members) is
 *      valid JSON, whatever the slots hold;
 *   2. the group of members never holds more than FR_STATS_MEMBERS_MAX.
 * Files go to a directory of this process under /dev/shm, removed at exit.
 * One thread.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/diag.h"
#include "core/err.h"
#include "core/fsutil.h"
#include "core/json.h"
#include "stats/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILE_BYTES (128 + 8 * (size_t)FR_STATS_NSLOTS) /* stats.c's byte table */

static char root[128], dir[160];

static void clear(void)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[400];
    while (dp && (e = readdir(dp))) {
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (dp) {
        closedir(dp);
    }
}

static void remove_dirs(void)
{
    clear();
    rmdir(dir);
    rmdir(root);
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4); /* host byte order, as the file */
}

static void check_json(const struct fr_buf *b)
{
    if (fr_json_validate((const char *)b->data, (const char *)b->data + b->len) != 0) {
        fprintf(stderr, "invalid JSON rendered: %.*s\n", (int)b->len, (const char *)b->data);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        fr_diag_set_level(FR_DIAG_ERROR);
        snprintf(root, sizeof root, "/dev/shm/fuzz_stats.%d", (int)getpid());
        snprintf(dir, sizeof dir, "%s/stats", root);
        if (fr_fs_mkdirs(dir, 0755) != FR_OK) {
            abort();
        }
        atexit(remove_dirs);
    }
    if (size < 2 || size > 2 * FILE_BYTES) {
        return 0;
    }
    int which = data[0] % 4, flags = data[1], part = (flags >> 1) & 7;
    static const uint32_t stage[4] = {FR_STATS_INGEST, FR_STATS_PROCESS, FR_STATS_PROCESS,
                                      FR_STATS_PROCESS};
    static const uint32_t role[4] = {FR_STATS_ROLE_SINGLE, FR_STATS_ROLE_SINGLE,
                                     FR_STATS_ROLE_SHARD, FR_STATS_ROLE_FINALIZER};
    size_t n = size - 2;
    uint8_t *f = calloc(1, n > FILE_BYTES ? n : FILE_BYTES);
    memcpy(f, data + 2, n);
    if (flags & 1) {
        n = FILE_BYTES;
        memcpy(f, "FRSTATS", 8);
        put32(f + 8, 1);
        put32(f + 12, 128);
        put32(f + 16, FR_STATS_NSLOTS);
        put32(f + 20, fr_stats_layout_crc());
        put32(f + 24, stage[which]);
        put32(f + 72, role[which]);
        if (which == 2) {
            put32(f + 76, (uint32_t)part);
        }
    }
    char path[300];
    static const char *const name[4] = {"ingest.stats", "process.stats", NULL, "finalize.stats"};
    if (which == 2) {
        snprintf(path, sizeof path, "%s/process-p%d.stats", dir, part);
    } else {
        snprintf(path, sizeof path, "%s/%s", dir, name[which]);
    }
    if (fr_fs_write_atomic(path, f, n) != FR_OK) {
        abort(); /* the harness, not the code under test */
    }

    struct fr_stats_snap *snaps[FR_STATS_STAGES];
    struct fr_stats_group *g = calloc(1, sizeof *g);
    struct fr_buf b;
    fr_buf_init(&b, 16u << 20);
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        snaps[s] = calloc(1, sizeof *snaps[s]);
        (void)fr_stats_read(root, (enum fr_stats_stage)s, snaps[s]);
    }
    if (fr_stats_render_prom((const struct fr_stats_snap *const *)snaps, &b) != FR_OK) {
        abort();
    }
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        fr_buf_reset(&b);
        if (fr_stats_render_json(snaps[s], &b) == FR_OK) {
            check_json(&b);
        }
        fr_buf_reset(&b);
        if (fr_stats_render_rates(snaps[s], snaps[s], &b) == FR_OK) {
            check_json(&b);
        }
    }
    if (fr_stats_group_read(root, g) == FR_OK) {
        if (g->n > FR_STATS_MEMBERS_MAX) {
            abort();
        }
        int64_t now = 1800000000000;
        if (fr_stats_group_active(g, snaps[FR_STATS_PROCESS])) {
            fr_stats_group_total(g, now, snaps[FR_STATS_PROCESS]);
            fr_buf_reset(&b);
            if (fr_stats_render_json(snaps[FR_STATS_PROCESS], &b) == FR_OK) {
                check_json(&b);
            }
        }
        fr_buf_reset(&b);
        (void)fr_stats_render_members_prom(g, now, &b);
        fr_buf_reset(&b);
        if (fr_stats_render_members_json(g, now, &b) == FR_OK) {
            check_json(&b);
        }
    }
    for (int s = 0; s < FR_STATS_STAGES; s++) {
        free(snaps[s]);
    }
    free(g);
    fr_buf_free(&b);
    free(f);
    clear();
    return 0;
}
