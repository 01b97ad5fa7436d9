/* DALI's WebDataset index files (wds_index.c), as NVIDIA DALI's
 * tools/wds2idx.py writes them and its webdataset reader reads them:
 *
 *   v1.2 <num_samples>
 *   <ext> <data_offset> <size> <filename> [<ext> <data_offset> ...]
 *
 * one line per sample, one group per member (v1.1: groups without
 * <filename>; v1.0 is refused). Offsets are of the member's data, a
 * multiple of 512.
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_INDEX_H
#define GF_FORMAT_WDS_INDEX_H

#include "common/common.h"
#include "format/tar_scan.h"

typedef struct gf_wds_index_entry {
  const char *ext;      /* as written (not lower-cased) */
  uint64_t offset;      /* of the data: a multiple of 512, at least 512 */
  uint64_t size;        /* bytes */
  const char *filename; /* v1.2: the member's path; v1.1: NULL */
} gf_wds_index_entry;

/* A parsed index. Sample i is entries[first[i] .. first[i + 1]). */
typedef struct gf_wds_index {
  unsigned minor;        /* 1 or 2 (v1.1, v1.2) */
  uint64_t sample_count; /* the header's count, checked */
  uint64_t *first;       /* sample_count + 1 entries */
  gf_wds_index_entry *entries;
  uint64_t entry_count;
  char *text_; /* the strings' storage */
} gf_wds_index;

/* Parses the index file `name` (for messages) of len bytes at text.
 * shard_size: the shard's bytes, every member must lie inside it
 * (UINT64_MAX: not known, not checked). *out is the caller's
 * (gf_wds_index_free). Returns 0, or an error naming the file, its line
 * and byte offset: GF_EFORMAT (no "vN.N <count>" header), GF_EVERSION
 * (v1.0 or a version other than v1.1 and v1.2), GF_ECORRUPT (a line whose
 * fields are not groups of 4 (v1.1: 3), a number that is not one, an
 * offset that is not a multiple of 512 or below 512, a member past the
 * shard's end, an empty line, a NUL byte, a sample count other than the
 * header's), -ENOMEM. */
int gf_wds_index_parse(const char *name, const char *text, size_t len,
                       uint64_t shard_size, gf_wds_index **out);
/* NULL accepted. */
void gf_wds_index_free(gf_wds_index *ix);

/* Writes, into a malloc'd NUL-terminated *text of *len bytes (the
 * caller's), the v1.2 index that wds2idx.py writes for a shard whose
 * regular members, in order, are members[0 .. n): its key is the path up
 * to the first dot of the last component (for a last component without a
 * dot, wds2idx.py's quirk: all but the path's last byte, and the whole
 * path as the extension); members whose key is empty or ends in '/'
 * (hidden files) are left out; adjacent members with one key make a
 * sample. `shard` names the shard in messages. Returns 0, GF_EBADSOURCE
 * (no member left: wds2idx.py refuses an empty shard too),
 * GF_EUNSUPPORTED (a path holding a space or other white space, which
 * would break the line apart: wds2idx.py writes it anyway), -ENOMEM. */
int gf_wds_index_write(const char *shard, const gf_tar_member *members,
                       uint64_t n, char **text, size_t *len);

/* The sidecar index's name for the shard `shard` (a name or location):
 * a final ".tar" replaced by ".idx" ("train-000001.tar" gives
 * "train-000001.idx", as DALI's examples name wds2idx's output), else
 * ".idx" appended. Into buf. Returns 0, or GF_ELIMIT when it does not fit
 * in cap bytes. Any thread. */
int gf_wds_sidecar_name(const char *shard, char *buf, size_t cap);
/* The same for another sidecar: ext (".idx", ".sums") in place of a final
 * ".tar", or appended; `what` names it in the GF_ELIMIT message. */
int gf_wds_sidecar_named(const char *shard, const char *ext, const char *what,
                         char *buf, size_t cap);

#endif
