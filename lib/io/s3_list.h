/* An S3 prefix's listing (s3_list.c), between the files of lib/io only:
 * every object under the client's prefix, listed with ListObjectsV2 (pages
 * of up to 1,000 keys, continuation tokens, keys URL-encoded on the wire),
 * kept sorted by name, and answered as the folders the names imply: the
 * storage's list and stat for a walk of an image folder (storage_s3.c). */
#ifndef GF_IO_S3_LIST_H
#define GF_IO_S3_LIST_H

#include "io/s3_client.h"
#include "io/storage_http.h"

typedef struct gf_s3_listing gf_s3_listing;

/* Lists every object under c's prefix with st's requests (signed, retried).
 * Returns 0, or the failed page's code with the reason in why (the store's
 * words, the page; never a secret). pages: the requests made (may be
 * NULL). */
int gf_s3_listing_fetch(gf_http_storage *st, gf_s3_client *c,
                        gf_s3_listing **out, uint64_t *pages, char *why,
                        size_t cap);
void gf_s3_listing_free(gf_s3_listing *l);
/* The objects listed. */
uint64_t gf_s3_listing_count(const gf_s3_listing *l);

/* The entries of folder `dir` (relative to the prefix; "" the prefix
 * itself), in name order: a name with '/' after dir's is a folder
 * (GF_ENTRY_DIR, once), the others objects with the listing's size and
 * ETag. A key ending in '/' (a console's "folder") and empty names are not
 * entries. Returns 0, -ENOENT when nothing lies under dir, or fn's value. */
int gf_s3_listing_dir(const gf_s3_listing *l, const char *dir, gf_list_fn fn,
                      void *ctx);
/* name's entry: an object (size and version from the listing) or a folder
 * (a prefix of some object's name). Returns 0 or -ENOENT. */
int gf_s3_listing_stat(const gf_s3_listing *l, const char *name, gf_stat *out);

#endif /* GF_IO_S3_LIST_H */
