/* A label from a WebDataset sample's json field (wds_json.c): the integer
 * at a key of the top-level object, as webdataset users write
 * `int(sample["json"]["label"])`. Only what that needs is read: the
 * object's members up to the key (values skipped with their nesting and
 * strings tracked, at most GF_WDS_JSON_DEPTH deep), the last occurrence of
 * the key winning as in Python's json. Keys compare as their raw bytes
 * between the quotes (a key written with escapes does not match).
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_JSON_H
#define GF_FORMAT_WDS_JSON_H

#include "common/common.h"

#define GF_WDS_JSON_DEPTH 256

/* Results of gf_wds_json_int. */
enum {
  GF_WDS_JSON_FOUND = 1,   /* *out holds the integer */
  GF_WDS_JSON_ABSENT = 0,  /* the object has no such key */
  GF_WDS_JSON_BAD = -1,    /* not a JSON object (as far as read), or
                              nested deeper than GF_WDS_JSON_DEPTH */
  GF_WDS_JSON_NOT_INT = -2 /* the key's value is not an integer that fits
                              64 bits (a fraction, an exponent, a string,
                              null...) */
};

/* Looks up key (NUL-terminated) in the JSON object p[0 .. n); *out is
 * written only with GF_WDS_JSON_FOUND. */
int gf_wds_json_int(const uint8_t *p, size_t n, const char *key, int64_t *out);

#endif
