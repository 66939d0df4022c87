/*
 * s3_io.h — an Iceberg warehouse in an S3 bucket: struct fr_ice_io_ops
 * (src/iceberg/iceberg.h) and struct fr_pq_out (src/parquet/parquet.h)
 * implemented over the S3 client (s3.h).
 *
 * How paths become keys. src/iceberg speaks local paths: it maps every
 * location URI under the catalog's warehouse URI onto its local warehouse
 * directory (fr_ice_catalog_warehouse) before calling the io ops. Open the
 * catalog with warehouse_uri = "s3://<bucket>/<prefix>" and these ops, and
 * a path "<local warehouse>/<ns>/<table>/metadata/v1.metadata.json" is the
 * key "<prefix>/<ns>/<table>/metadata/v1.metadata.json". Nothing is
 * written under the local warehouse directory; the SQLite catalog stays
 * local (<data>/lake/catalog.db), as designed.
 *
 * The operations: create = PUT with If-None-Match: * (412 gives
 * FR_EEXIST), replace = PUT, link = GET + create-only PUT (S3 has no
 * links; published names are written once), read = GET, remove = HEAD +
 * DELETE (FR_ENOTFOUND when absent), stat = HEAD (size, Last-Modified),
 * list = ListObjectsV2 under "<key>/". Failures keep the client's codes
 * and message (fr_s3_errmsg).
 *
 * Threads: like the client, one thread at a time per struct fr_s3_io.
 */
#ifndef FR_OBJSTORE_S3_IO_H
#define FR_OBJSTORE_S3_IO_H

#include <stddef.h>

struct fr_conf;
struct fr_s3;
struct fr_ice_io;
struct fr_ice_catalog;
struct fr_ice_catalog_opts;
struct fr_pq_out;
struct fr_s3_io;

/* Split "s3://bucket/prefix/..." (prefix may be empty; trailing '/' dropped).
 * FR_EINVAL when uri is not an s3:// URI with a bucket. */
int fr_s3_parse_uri(const char *uri, char *bucket, size_t bucket_cap, char *prefix,
                    size_t prefix_cap);

/* An adapter over s3 (borrowed: it must outlive the adapter) for keys
 * under prefix (may be "" or NULL). local_root may be NULL now and set
 * with fr_s3_io_set_root before the first operation. */
int fr_s3_io_open(struct fr_s3 *s3, const char *prefix, const char *local_root,
                  struct fr_s3_io **io);
int fr_s3_io_set_root(struct fr_s3_io *io, const char *local_root);
/* Accepts NULL. */
void fr_s3_io_close(struct fr_s3_io *io);
/* Fill an fr_ice_io (ops + ctx) for fr_ice_catalog_opts.io. */
void fr_s3_io_bind(struct fr_s3_io *io, struct fr_ice_io *out);
/* The key a local warehouse path maps to; FR_EINVAL outside the root. */
int fr_s3_io_key(const struct fr_s3_io *io, const char *path, char *key, size_t cap);
/* The client (for messages and direct reads). */
struct fr_s3 *fr_s3_io_client(const struct fr_s3_io *io);

/*
 * Open a catalog whose warehouse is "s3://<bucket>/<prefix>" (opts->
 * warehouse_uri, required) through io; opts->io is ignored. The catalog
 * keeps a pointer to io: close the catalog first, then io.
 */
int fr_s3_catalog_open(struct fr_s3_io *io, const struct fr_ice_catalog_opts *opts,
                       struct fr_ice_catalog **cat);

/* A Parquet output that uploads to the key of path: bytes are buffered up
 * to the client's part size, then sent as a multipart upload; close
 * completes it (create-only), abort aborts it, so a failed or killed
 * writer leaves no visible object. */
int fr_s3_io_pq_out(struct fr_s3_io *io, const char *path, struct fr_pq_out *out);

/*
 * Everything a process needs for a warehouse on S3, from the [s3]
 * configuration: a client, the adapter and the catalog (SQLite, local, in
 * <copts->data_dir>/lake). uri is "s3://bucket/prefix"; copts->
 * warehouse_uri and copts->io are set from it. On success *cat is open;
 * close it with fr_ice_catalog_close, then fr_s3_warehouse_close.
 * FR_ECONFIG (message in err) for a bad URI, endpoint or missing
 * credential; the client's codes otherwise.
 */
struct fr_s3_warehouse;
int fr_s3_warehouse_open(const struct fr_conf *conf, const char *uri,
                         const struct fr_ice_catalog_opts *copts, struct fr_s3_warehouse **wh,
                         struct fr_ice_catalog **cat, char *err, size_t errlen);
struct fr_s3_io *fr_s3_warehouse_io(const struct fr_s3_warehouse *wh);
/* Accepts NULL. The catalog must be closed first. */
void fr_s3_warehouse_close(struct fr_s3_warehouse *wh);

/* A Parquet input reading the object of path with ranged GETs (a HEAD
 * gives its size). read_at may be called from several threads: calls are
 * serialised on a mutex, since a client serves one thread at a time. io
 * must outlive the input. */
struct fr_pq_in;
int fr_s3_io_pq_in(struct fr_s3_io *io, const char *path, struct fr_pq_in *in);

#endif
