/* The options of tar shards as a source (gpufeed.h's gf_shards_config),
 * read once for both kinds that take them: the indexed shards
 * (source_shards.c) and streaming mode (source_stream.c). */
#include "pipeline/source.h"

#include <string.h>

int gf_source_shards_config(const gf_shards_config *in, gf_shards_config *out) {
  *out = (gf_shards_config)GF_SHARDS_CONFIG_INIT;
  if (!in)
    return 0;
  int rc =
      gf_check_struct_size(in->struct_size, sizeof *out, "gf_shards_config");
  if (rc < 0)
    return rc;
  memcpy(out, in, in->struct_size);
  out->struct_size = sizeof *out;
  for (size_t i = 0; i < sizeof out->reserved / sizeof out->reserved[0]; i++)
    if (out->reserved[i])
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_shards_config: reserved fields must be zero");
  if (out->index > GF_SHARDS_INDEX_STREAM)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_shards_config.index: %u is not a gf_shards_index "
                   "value",
                   out->index);
  if (out->index != GF_SHARDS_INDEX_STREAM &&
      (out->shuffle || out->shuffle_bytes))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_shards_config: shuffle and shuffle_bytes are for "
                   "streaming mode (index GF_SHARDS_INDEX_STREAM); with an "
                   "index the loader's order shuffles every sample");
  return 0;
}
