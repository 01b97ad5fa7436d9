/* Fuzz target: a WebDataset shard read front to back
 * (lib/format/wds_stream.c: the tar scan, webdataset's grouping, the
 * rules' image and label, the members copied out as they pass).
 *
 * Input: a tar file, pulled from memory as a network stream would give
 * it.
 * Promises: the pulls ask for offsets that only grow, but for the last
 * GF_WDS_STREAM_BACK bytes, and never past the input; a failure records
 * its code and a message; every sample handed on has a key and an ordinal
 * one past the last; a good sample's image lies in the caller's buffer,
 * within max_bytes, and so is each asked field, within its bound, or
 * absent; a bad one has no image; stopping at a sample returns fn's
 * value. */
#include "fuzz.h"

#include "format/wds_stream.h"

#include <stdlib.h>

typedef struct src {
  const uint8_t *data;
  uint64_t size, furthest;
} src;

static int64_t pull(void *ctx, void *buf, uint64_t off, uint64_t len) {
  src *s = ctx;
  FUZZ_ASSERT(off <= s->size && len <= s->size - off);
  FUZZ_ASSERT(off + GF_WDS_STREAM_BACK >= s->furthest);
  memcpy(buf, s->data + off, len);
  if (off + len > s->furthest)
    s->furthest = off + len;
  return (int64_t)len;
}

typedef struct seen {
  const uint8_t *buf;
  uint64_t max, n, stop_at;
} seen;

static int check(void *ctx, const gf_wds_streamed *m) {
  seen *s = ctx;
  FUZZ_ASSERT(m->key && m->key[0]);
  FUZZ_ASSERT(m->ordinal == s->n);
  if (m->rc < 0) {
    FUZZ_CHECK_FAILURE(m->rc, "a streamed sample");
    FUZZ_ASSERT(!m->image && !m->image_len);
  } else {
    FUZZ_ASSERT(m->image >= s->buf && m->image_len <= s->max &&
                (uint64_t)(m->image - s->buf) <= s->max - m->image_len);
    for (int f = 0; f < 2; f++)
      FUZZ_ASSERT(
          m->field_len[f] == GF_NO_INDEX ||
          (m->field_len[f] <= 100 && m->field[f] >= s->buf &&
           (uint64_t)(m->field[f] - s->buf) <= s->max - m->field_len[f]));
  }
  return s->n++ == s->stop_at ? 7 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_wds_rules rules;
  FUZZ_ASSERT(gf_wds_rules_parse(&rules, "jpg;png;bin", "auto") == 0);
  gf_wds_fields fields;
  FUZZ_ASSERT(gf_wds_fields_parse(&fields, "txt;json", 100) == 0);
  enum { MAX = 8192 };
  uint8_t *buf = malloc(MAX);
  FUZZ_ASSERT(buf);
  for (int pass = 0; pass < 2; pass++) {
    src in = {.data = data, .size = size};
    seen s = {.buf = buf, .max = MAX, .stop_at = pass ? 1 : UINT64_MAX};
    gf_wds_stream_opts o = {
        .rules = &rules, .fields = &fields, .buf = buf, .max_bytes = MAX};
    gf_wds_stream_counts n;
    int rc =
        gf_wds_stream_shard("fuzz.tar", size, pull, &in, &o, check, &s, &n);
    FUZZ_ASSERT(n.samples == s.n && n.bad <= n.samples);
    if (rc == 7)
      FUZZ_ASSERT(pass == 1 && s.n == 2);
    else if (rc)
      FUZZ_CHECK_FAILURE(rc, "gf_wds_stream_shard");
  }
  free(buf);
  return 0;
}
