/*
 * verify_pages.c — `freshet verify`'s check page_checksums: every page of
 * every live data file of every table at the cut is read (header and
 * bytes, not decoded), and a page whose header carries a CRC-32 must match
 * it (fr_pq_reader_check_pages). freshet writes a CRC in every page it
 * writes, data and dictionary (src/parquet/codec.c); pages without one
 * (files written before, or by another engine) are counted, not failed.
 * Cross-checks come with the footer, which is read anyway: the rows it
 * holds against the manifest's record_count, the file's size against
 * file_size_in_bytes, and per column the values, nulls and compressed
 * bytes against value_counts, null_value_counts and column_sizes. A bit flip that still decodes
 * (a character of a title in a data page) passes every other check; this
 * one names the file, the row group, the column and the page.
 *
 * One thread (verify's); reads only. Memory: one page at a time
 * (max_page_bytes) plus the footer.
 */
#include "pipeline/verify_int.h"

#include "iceberg/iceberg.h"
#include "parquet/parquet.h"
#include "pipeline/lake.h"
#include "pipeline/tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void vf_check_pages(struct vf *vf)
{
    struct vf_check *c = &vf->ck[CK_PAGES];
    int64_t files = 0, bad_files = 0, pages = 0, with_crc = 0;
    char err[1024];
    for (int t = 0; t < FR_TBL_EVERY; t++) {
        struct vf_tab *tab = &vf->tab[t];
        if (!tab->table || tab->broken[0] || tab->snap < 0) {
            continue; /* an unreadable table fails no_file_in_two_live_snapshots */
        }
        struct fr_ice_file_list list;
        int rc = fr_ice_files(vf->cat, tab->table, tab->snap, false, &list);
        if (rc < 0) {
            vf_problem(c, "not evaluated: %s: %.400s", fr_tbl_name(t), fr_ice_errmsg());
            continue;
        }
        for (size_t i = 0; i < list.nfiles; i++) {
            const struct fr_ice_file *f = &list.files[i];
            struct fr_lake_page_check pc;
            files++;
            rc = fr_lake_check_file(&vf->lake, f, &vf->ropts, &pc, err, sizeof err);
            pages += (int64_t)pc.pages;
            with_crc += (int64_t)pc.with_crc;
            if (rc < 0) {
                bad_files++;
                vf_problem(c, "%.500s", err);
            }
        }
        fr_ice_file_list_free(&list);
    }
    vf_figs(c, "files", files, "bad_files", bad_files, "pages", pages, "pages_with_crc", with_crc,
            "pages_without_crc", pages - with_crc, NULL);
}
