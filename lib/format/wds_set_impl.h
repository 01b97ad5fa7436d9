/* The state a gf_wds_set holds (wds_set.h), shared by the file that opens
 * the shards (wds_set_open.c) and the one that answers for samples
 * (wds_set.c). Not for other includers. */
#ifndef GF_FORMAT_WDS_SET_IMPL_H
#define GF_FORMAT_WDS_SET_IMPL_H

#include "format/wds_rules.h"
#include "format/wds_set.h"
#include "format/wds_sums.h"

#define GF_WDS_NAME_BYTES 4200u

typedef struct shard {
  char *name;
  gf_object *obj;
  uint64_t first, count; /* its samples in the set */
  gf_wds_samples part;   /* while opening */
  uint64_t skipped;
  int rc;
  gf_error_info err;
  uint8_t indexed, refused;
  uint8_t anonymous; /* an index without names (v1.1): keys stand in */
  uint8_t sums_refused;
  gf_wds_sums *sums; /* its verification sidecar's, or NULL */
} shard;

struct gf_wds_set {
  gf_storage *st;
  shard *shards;
  uint32_t nshards;
  gf_wds_samples all;
  gf_wds_rules rules;
  gf_wds_rule_ids ids; /* the rules' names in `all` */
  /* The asked fields (gf_wds_set_opts.fields): names, ids in the merged
   * table (UINT32_MAX: no sample has it), the bound on each. */
  gf_wds_fields fields;
  uint32_t field_ids[GF_FIELDS_MAX];
  gf_wds_set_info info;
};

#endif
