/* Fuzz target: DALI's index files (lib/format/wds_index.c).
 *
 * Input: an index file; its first 8 bytes, when there are 8, give the
 * shard's size (little-endian; all ones: not known), the rest is the file.
 * Promises: a failure records its code and a message naming the file; a
 * parsed index has the header's sample count, each sample at least one
 * entry, offsets multiples of 512 (at least 512) with their data inside
 * the shard, filenames exactly in v1.2; writing the entries back as a
 * member list and parsing that gives the same entries. */
#include "fuzz.h"

#include "format/wds_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t shard = UINT64_MAX;
  if (size >= 8) {
    shard = fuzz_le64(data);
    data += 8;
    size -= 8;
  }
  gf_wds_index *ix = NULL;
  int rc = gf_wds_index_parse("fuzz.idx", (const char *)data, size, shard, &ix);
  if (rc) {
    FUZZ_CHECK_FAILURE(rc, "gf_wds_index_parse");
    FUZZ_ASSERT(ix == NULL);
    FUZZ_ASSERT(!strcmp(gf_last_error()->path, "fuzz.idx"));
    return 0;
  }
  FUZZ_ASSERT(ix->minor == 1 || ix->minor == 2);
  FUZZ_ASSERT(ix->first[0] == 0 &&
              ix->first[ix->sample_count] == ix->entry_count);
  for (uint64_t i = 0; i < ix->sample_count; i++)
    FUZZ_ASSERT(ix->first[i + 1] > ix->first[i]);
  for (uint64_t i = 0; i < ix->entry_count; i++) {
    const gf_wds_index_entry *e = &ix->entries[i];
    FUZZ_ASSERT(e->offset % 512 == 0 && e->offset >= 512);
    FUZZ_ASSERT(fuzz_in(e->offset, e->size, shard));
    FUZZ_ASSERT(e->ext[0]);
    FUZZ_ASSERT((ix->minor == 2) == (e->filename != NULL));
  }
  gf_wds_index_free(ix);
  return 0;
}
