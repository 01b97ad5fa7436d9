/* WebDataset's shard URL patterns (wds_braces.c): brace expansion as the
 * braceexpand package does it for webdataset 1.0.2, and webdataset's "::"
 * URL lists.
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_BRACES_H
#define GF_FORMAT_WDS_BRACES_H

#include "common/common.h"

/* The default and the largest limits of gf_wds_expand. */
#define GF_WDS_EXPAND_MAX_DEFAULT 1000000u
#define GF_WDS_EXPAND_BYTES_MAX (64u << 20) /* bytes of all results */

/* Expands `pattern` as braceexpand.braceexpand(pattern) does (escape on):
 * {a,b} alternatives, nesting, integer ranges {000..123} (zero-padded to
 * the longer end's width when an end other than "0" starts with 0 or -0),
 * steps {0..10..2}, letter ranges {a..e} over A-Za-z, a {x} without comma
 * or range kept as text, backslash escapes removed; results in order, the
 * leftmost group varying slowest. With split_urls, the pattern is first cut
 * at "::" and each part expanded (webdataset's URL lists).
 * *out gets a malloc'd array of *n malloc'd strings (free with
 * gf_wds_strings_free). max (0: GF_WDS_EXPAND_MAX_DEFAULT) bounds the count.
 * Returns 0, -EINVAL (unbalanced braces; a range end beyond 64 bits),
 * GF_ELIMIT (more than max results, or more than GF_WDS_EXPAND_BYTES_MAX
 * bytes), or -ENOMEM, naming the pattern. */
int gf_wds_expand(const char *pattern, bool split_urls, uint64_t max,
                  char ***out, uint64_t *n);
void gf_wds_strings_free(char **v, uint64_t n);

#endif
