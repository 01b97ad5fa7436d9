/* A source given as WebDataset tar shards (wds_spec.c): which locations
 * name shards, and the shards a location names, expanded (brace patterns,
 * "::" lists, list files) and split into the storage root they share and
 * each shard's name under it.
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_SPEC_H
#define GF_FORMAT_WDS_SPEC_H

#include "common/common.h"

/* The most bytes of a list file read. */
#define GF_WDS_LIST_BYTES_MAX (64u << 20)

/* Whether `source` names tar shards rather than a dataset or a folder: it
 * starts with '@' (a list file), holds "::" (webdataset's URL list), or
 * ends in ".tar" (a shard or a brace pattern of shards), or in ".tar.gz",
 * ".tgz", ".tar.zst" or ".tar.xz" (compressed shards, which
 * gf_wds_spec_parse refuses with what to do); a URL's query is not part
 * of its end. */
bool gf_wds_spec_claims(const char *source);

/* The shards `source` names, in order: the source cut at "::", each part
 * brace-expanded as webdataset does (wds_braces.h); a part "@FILE" is
 * the local list file FILE, one location or pattern a line (blank lines
 * and lines starting with '#' left out; a relative path is taken from
 * FILE's folder). *root gets the location of the deepest folder holding
 * every shard (for URLs: at least the scheme and server, or the bucket;
 * the URLs' query, which must be the same for all, after it: a storage
 * sends its root's query with every request); *names the shards' names
 * under it (*n of them). Both malloc'd (free
 * with gf_wds_spec_free). max: the most shards (0: 1,000,000). Returns 0,
 * or with the source named: -EINVAL (no shard, unbalanced braces, shards
 * on different servers or schemes), GF_EUNSUPPORTED (a compressed shard,
 * saying how to decompress it), GF_ELIMIT (more than max shards, a list
 * file beyond GF_WDS_LIST_BYTES_MAX), a list file's read error, -ENOMEM;
 * the error's URLs without what may be a secret (user:password, query). */
int gf_wds_spec_parse(const char *source, uint64_t max, char **root,
                      char ***names, uint32_t *n);
void gf_wds_spec_free(char *root, char **names, uint32_t n);

/* Called for each location or pattern of a list file (`line`, trimmed;
 * blank lines and '#' lines left out), with the list file's folder, from
 * which a relative path is taken (base; NULL when the file was named
 * without one), and the line's number. A nonzero return stops the read
 * and is what gf_wds_list_file returns. */
typedef int (*gf_wds_line_fn)(void *ctx, const char *line, const char *base,
                              uint64_t lineno);
/* Reads the local list file `file` (at most GF_WDS_LIST_BYTES_MAX bytes,
 * text: no NUL) and calls fn for each of its lines. Returns 0, fn's
 * nonzero return, or the file's error with it named. */
int gf_wds_list_file(const char *file, gf_wds_line_fn fn, void *ctx);

#endif
