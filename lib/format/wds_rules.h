/* Which members of a WebDataset sample a loader takes (wds_rules.c): the
 * fields an image may come from (and the codec each name promises), where
 * the label comes from, and the label's value from its member's bytes.
 * One set of rules for every reader of shards: the indexed set
 * (wds_set.c) and the streaming reader (wds_stream.c).
 *
 * Threads: rules are plain data, read-only once parsed; any thread. */
#ifndef GF_FORMAT_WDS_RULES_H
#define GF_FORMAT_WDS_RULES_H

#include "common/common.h"
#include "format/wds_keys.h"

/* The most image field names a rule set holds. */
#define GF_WDS_IMAGE_FIELDS_MAX 16u

/* Where the label comes from. */
enum {
  GF_WDS_LABEL_NONE,  /* -1 for every sample */
  GF_WDS_LABEL_AUTO,  /* the "cls" field where a sample has one, else -1 */
  GF_WDS_LABEL_FIELD, /* a field's decimal integer; every sample has it */
  GF_WDS_LABEL_JSON   /* the integer at json_key of the json field */
};

typedef struct gf_wds_rules {
  char image_list[256]; /* as given ("jpg;jpeg;png"), for messages */
  char image_buf[256];  /* the names, NUL-separated */
  uint16_t image_at[GF_WDS_IMAGE_FIELDS_MAX]; /* name i: image_buf + at */
  int image_codec[GF_WDS_IMAGE_FIELDS_MAX];   /* what name i promises */
  uint32_t n_image;
  int label_mode;      /* GF_WDS_LABEL_* */
  char label_name[64]; /* the label's field ("cls" for auto, "json") */
  char json_key[128];  /* GF_WDS_LABEL_JSON */
} gf_wds_rules;

/* The rules' names as ids of one samples table (its interned names). */
typedef struct gf_wds_rule_ids {
  uint32_t image[GF_WDS_IMAGE_FIELDS_MAX]; /* UINT32_MAX: not in it */
  uint32_t label;                          /* UINT32_MAX: none */
} gf_wds_rule_ids;

/* Reads the options (image_fields: ';'-separated lower-case names, NULL
 * or "": "jpg;jpeg;png"; label: NULL, "", "auto", "none", a field name or
 * "json:KEY") into *r. Returns 0 or -EINVAL naming the option. */
int gf_wds_rules_parse(gf_wds_rules *r, const char *image_fields,
                       const char *label);
/* Image name i. */
static inline const char *gf_wds_rules_image(const gf_wds_rules *r,
                                             uint32_t i) {
  return r->image_buf + r->image_at[i];
}
/* The rules' names as ids of table t. */
void gf_wds_rules_ids(const gf_wds_rules *r, const gf_wds_samples *t,
                      gf_wds_rule_ids *ids);

/* The members of a sample a loader takes: indices into its fields. */
typedef struct gf_wds_pick {
  int image; /* its image member */
  int label; /* its label member, or -1 */
  int codec; /* what the image field's name promises (GF_CODEC_JPEG,
                GF_CODEC_PNG, GF_FOLDER_CODEC_UNKNOWN) */
} gf_wds_pick;

/* Picks sample i of t's image and label members. Returns 0, or
 * GF_EBADSOURCE with what is wrong in why (cap bytes; the caller names
 * the shard and sample): a field twice, no image field or two, no label
 * field where the rules require one. */
int gf_wds_rules_pick(const gf_wds_rules *r, const gf_wds_rule_ids *ids,
                      const gf_wds_samples *t, uint64_t i, gf_wds_pick *out,
                      char *why, size_t cap);

/* The other fields a caller asks for (gf_shards_config.fields): their
 * names, and the most bytes each may hold in a sample. */
typedef struct gf_wds_fields {
  char names[GF_FIELDS_MAX][64];
  uint32_t n;
  uint64_t bytes; /* field_bytes, resolved (0: GF_FIELD_BYTES_DEFAULT) */
} gf_wds_fields;

/* Reads the fields option (';'-separated lower-case names without '/' or
 * '.', each once, at most GF_FIELDS_MAX; NULL or "": none) and the bound
 * into *f. Returns 0 or -EINVAL naming the option. */
int gf_wds_fields_parse(gf_wds_fields *f, const char *list, uint64_t bytes);
/* The index of field name `name` in *f, or -1. */
int gf_wds_fields_find(const gf_wds_fields *f, const char *name);

/* The label in its member's bytes p[0 .. n): a decimal integer, or the
 * integer at the json key. Returns 0, or GF_EBADSOURCE with why. */
int gf_wds_rules_label(const gf_wds_rules *r, const uint8_t *p, uint64_t n,
                       int64_t *label, char *why, size_t cap);

#endif
