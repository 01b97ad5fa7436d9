/* Fuzz target: the verification sidecars of tar shards
 * (lib/format/wds_sums.c).
 *
 * Input: a sums file; its first 8 bytes, when there are 8, give the
 * shard's size (little-endian), the rest is the file.
 * Promises: a failure records its code and a message naming the file; a
 * parsed file has the header's count of entries, offsets multiples of 512
 * (at least 512), each after the end of the one before, with their data
 * inside the shard; writing the entries back gives the input again (with
 * a final newline) and parsing that gives the same entries; the lookup
 * finds each entry by its offset and size, none with another size. */
#include "fuzz.h"

#include "format/wds_sums.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t shard = UINT64_MAX;
  if (size >= 8) {
    shard = fuzz_le64(data);
    data += 8;
    size -= 8;
  }
  gf_wds_sums *s = NULL;
  int rc = gf_wds_sums_parse("fuzz.sums", (const char *)data, size, shard, &s);
  if (rc) {
    FUZZ_CHECK_FAILURE(rc, "gf_wds_sums_parse");
    FUZZ_ASSERT(s == NULL);
    FUZZ_ASSERT(!strcmp(gf_last_error()->path, "fuzz.sums"));
    return 0;
  }
  FUZZ_ASSERT(s->shard_size == shard);
  FUZZ_ASSERT(s->count <= size / 15); /* "512 0 00000000\n" a line at least */
  for (uint64_t i = 0; i < s->count; i++) {
    const gf_wds_sum *e = &s->v[i];
    FUZZ_ASSERT(e->offset % 512 == 0 && e->offset >= 512);
    FUZZ_ASSERT(fuzz_in(e->offset, e->size, shard));
    if (i > 0)
      FUZZ_ASSERT(e->offset > s->v[i - 1].offset + s->v[i - 1].size);
    FUZZ_ASSERT(gf_wds_sums_find(s, e->offset, e->size) == e);
    FUZZ_ASSERT(gf_wds_sums_find(s, e->offset, e->size + 1) == NULL);
  }
  char *text = NULL;
  size_t len = 0;
  rc = gf_wds_sums_write(s->v, s->count, shard, &text, &len);
  FUZZ_ASSERT(rc == 0 && text && strlen(text) == len);
  /* Every field the parser takes has one spelling: the writer gives the
   * input back, with a final newline where it had none. */
  FUZZ_ASSERT(len == size + (data[size - 1] != '\n') &&
              !memcmp(text, data, size));
  gf_wds_sums *t = NULL;
  rc = gf_wds_sums_parse("fuzz.sums", text, len, shard, &t);
  if (rc)
    fprintf(stderr, "written back:\n%s\nrefused: %s\n", text,
            gf_last_error()->message);
  FUZZ_ASSERT(rc == 0 && t->shard_size == shard && t->count == s->count);
  for (uint64_t i = 0; i < s->count; i++)
    FUZZ_ASSERT(t->v[i].offset == s->v[i].offset &&
                t->v[i].size == s->v[i].size && t->v[i].crc == s->v[i].crc);
  gf_wds_sums_free(t);
  free(text);
  gf_wds_sums_free(s);
  return 0;
}
