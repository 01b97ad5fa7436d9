/* `gpufeed build` from WebDataset tar shards (build_shards.c). */
#ifndef GFC_BUILD_SHARDS_H
#define GFC_BUILD_SHARDS_H

#include "cli.h"
#include "format/format.h"
#include "format/wds_set.h"

/* build from tar shards (build_shards.c): the shards src names opened
 * (*st, *set) and their samples listed as a folder (*out: each entry's
 * path the sample's key, its label -1 until read). Returns 0 or the error,
 * recorded. */
int gfc_shards_folder(const gfc_build_opts *o, gf_storage **st,
                      gf_wds_set **set, gf_folder **out);
/* Sample i's image (*data, malloc'd, *len bytes) and label, read and
 * checked as a loader reads them. Returns 0 or the error, recorded. */
int gfc_shards_read(const gf_wds_set *set, uint64_t i, void **data, size_t *len,
                    int64_t *label);

#endif
