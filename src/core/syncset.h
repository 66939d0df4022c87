/*
 * syncset.h — fsyncs gathered for one barrier instead of paid one by one.
 *
 * A commit of the lake writes a handful of small files (each table's data
 * file, manifest, manifest list and metadata file) that must all be
 * durable before the catalog names them, and none of them needs to be
 * durable earlier. Fsyncing each file and then its directory as it is
 * written costs two device flushes per file and interleaves journal
 * commits with the writes; a set collects the written files' descriptors
 * and their directories, and fr_syncset_flush fsyncs the files back to
 * back and then each directory once (docs/adr/0029). On the project's
 * machine 12 small files and 2 directories took 2.6 ms that way against
 * 4.0 ms written and fsynced in turn with their directory.
 *
 * The rule that keeps it safe is the user's: flush before anything durable
 * names a file of the set (the catalog flushes at the start of every
 * catalog write). Until then a crash may leave the files torn or missing,
 * which is harmless because nothing reaches them.
 *
 * Bounded: at most FR_SYNCSET_FILES descriptors and FR_SYNCSET_DIRS
 * directories are held; an add beyond that is made durable at once, so a
 * full set only loses the batching. Thread-safe (a mutex): a table's file
 * may be closed on another thread than the one that flushes.
 */
#ifndef FR_SYNCSET_H
#define FR_SYNCSET_H

#include <stdint.h>

enum { FR_SYNCSET_FILES = 64, FR_SYNCSET_DIRS = 16 };

struct fr_syncset;

struct fr_syncset_stats {
    uint64_t flushes;      /* fr_syncset_flush calls that had work */
    uint64_t files;        /* file fsyncs done by flushes */
    uint64_t dirs;         /* directory fsyncs done by flushes */
    uint64_t immediate;    /* adds made durable at once (the set was full) */
    uint32_t pending;      /* files held now */
    uint32_t pending_dirs; /* directories held now */
};

/* NULL when out of memory. */
struct fr_syncset *fr_syncset_new(void);
/* Flushes what is held (errors are lost: flush first to see them), frees.
 * Accepts NULL. */
void fr_syncset_free(struct fr_syncset *s);

/* Hold fd until the next flush, and the directory that holds path. The
 * set owns fd from here on in every case (the flush closes it). With the
 * set full, fsyncs fd now and closes it, and likewise the directory when
 * that part is full. An error (of such an immediate fsync, or a path too
 * long) is returned; the caller must not let anything durable name the
 * file then. */
int fr_syncset_add_file(struct fr_syncset *s, int fd, const char *path);
/* Hold only the directory that holds path (a rename or link in it). */
int fr_syncset_add_parent(struct fr_syncset *s, const char *path);

/* Fsync every held file, then every held directory; close the files and
 * empty the set. Returns the first error (FR_EIO, FR_ENOSPC, ...) with the
 * path it concerned in *what (held by the set until its next call) when
 * what is not NULL; the set is empty either way, so the
 * caller must treat every file added since the last successful flush as
 * not durable. FR_OK and nothing done when empty. */
int fr_syncset_flush(struct fr_syncset *s, const char **what);

void fr_syncset_stats(struct fr_syncset *s, struct fr_syncset_stats *out);

#endif
