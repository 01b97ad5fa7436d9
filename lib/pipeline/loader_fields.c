/* The other fields of a source's samples (tar shards' gf_shards_config.fields,
 * gpufeed.h): their names, and a lent batch's bytes of each. */
#include "pipeline/loader_impl.h"

uint32_t gf_loader_field_count(const gf_loader *l) {
  return l ? l->nfields : 0;
}

const char *gf_loader_field_name(const gf_loader *l, uint32_t i) {
  return l && i < l->nfields ? gf_source_field_name(l->src, i) : NULL;
}

int gf_batch_field(const gf_batch *b, uint32_t sample, uint32_t field,
                   const void **data, uint64_t *len) {
  if (data)
    *data = NULL;
  if (len)
    *len = 0;
  if (!b || !data || !len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_batch_field needs a batch and two output pointers");
  /* A lent batch is the first member of its slot (loader_impl.h), which
   * holds the fields and their sizes: no loader needed. */
  const slot *s = (const slot *)(const void *)b;
  if (sample >= b->count || field >= s->nfields)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_batch_field: sample %u of %u, field %u of %u", sample,
                   b->count, field, s->nfields);
  field_place fp;
  slot_fields(s, sample, &fp);
  if (fp.len[field] == GF_NO_INDEX)
    return 0;
  *data = fp.data + (uint64_t)field * s->field_bytes;
  *len = fp.len[field];
  return 1;
}
