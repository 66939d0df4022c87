/*
 * objstore_int.h — private to src/objstore: the small XML reader S3's
 * answers need, the parsers of the answers built on it, and the URL
 * pieces. Exposed to the unit tests, not to other modules.
 */
#ifndef FR_OBJSTORE_INT_H
#define FR_OBJSTORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "objstore/s3.h"

struct fr_buf;

/* ----------------------------------------------------------------- xml -- */

#define S3_XML_MAX_DEPTH 8
#define S3_XML_MAX_NAME 64
#define S3_XML_MAX_TEXT 4096

/* Called when an element closes: depth 1 is the root; names[0..depth-1]
 * the open elements (names[depth-1] is this one); text its own character
 * data, entities decoded (NUL-terminated, len bytes). A negative return
 * stops the parse with that code. */
typedef int (*s3_xml_fn)(void *arg, int depth, char names[][S3_XML_MAX_NAME], const char *text,
                         size_t len);

/* Parse a whole document: an optional <?xml ...?> declaration, comments,
 * one root element; attributes are skipped. FR_EPROTO for anything
 * malformed (mismatched or unclosed tags, bad entities, text outside the
 * root, depth or text beyond the caps). */
int s3_xml_parse(const char *doc, size_t len, s3_xml_fn fn, void *arg);

/* ------------------------------------------------------------ answers -- */

/* One ListObjectsV2 page. Calls fn for each <Contents>; *truncated and
 * token (cap bytes) receive IsTruncated and NextContinuationToken.
 * FR_EPROTO when the document is not a ListBucketResult or an entry lacks
 * a key or a valid size. */
int s3_parse_list(const char *doc, size_t len, int (*fn)(void *arg, const struct fr_s3_object *o),
                  void *arg, int *truncated, char *token, size_t cap);

/* ListMultipartUploads: fn per <Upload> (key, upload id, initiated ms). */
int s3_parse_uploads(const char *doc, size_t len,
                     int (*fn)(void *arg, const char *key, const char *upload_id, int64_t initiated_ms),
                     void *arg, int *truncated, char *key_marker, char *id_marker, size_t cap);

/* The UploadId of an InitiateMultipartUploadResult. */
int s3_parse_upload_id(const char *doc, size_t len, char *out, size_t cap);

/* An <Error> document: Code and Message (either may come back ""). Returns
 * FR_OK when doc is an Error document, FR_ENOTFOUND when it is not. */
int s3_parse_error(const char *doc, size_t len, char *code, size_t code_cap, char *msg,
                   size_t msg_cap);

/* "2009-10-12T17:50:30.000Z" (XML) or "Wed, 12 Oct 2009 17:50:00 GMT"
 * (HTTP Last-Modified) to Unix milliseconds; -1 when unparsable. */
int64_t s3_parse_time(const char *s);

#endif
