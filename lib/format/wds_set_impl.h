/* The state a gf_wds_set holds (wds_set.h), shared by the file that opens
 * the shards (wds_set_open.c) and the one that answers for samples
 * (wds_set.c). Not for other includers. */
#ifndef GF_FORMAT_WDS_SET_IMPL_H
#define GF_FORMAT_WDS_SET_IMPL_H

#include "format/wds_set.h"

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
} shard;

/* LABEL_JSON: the integer at json_key of the json field. */
enum { LABEL_NONE, LABEL_AUTO, LABEL_FIELD, LABEL_JSON };

struct gf_wds_set {
  gf_storage *st;
  shard *shards;
  uint32_t nshards;
  gf_wds_samples all;
  uint32_t image_ids[GF_WDS_IMAGE_FIELDS_MAX];
  int image_codec[GF_WDS_IMAGE_FIELDS_MAX];
  uint32_t n_image;
  int label_mode;
  uint32_t label_id; /* UINT32_MAX: no sample has the field */
  char label_name[64];
  char json_key[128];   /* LABEL_JSON */
  char image_list[256]; /* for messages */
  gf_wds_set_info info;
};

#endif
