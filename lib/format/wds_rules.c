/* Which members of a WebDataset sample a loader takes (wds_rules.h). */
#include "format/wds_rules.h"

#include "format/format.h"
#include "format/wds_json.h"

#include <stdio.h>
#include <string.h>

static bool has_upper(const char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z')
      return true;
  return false;
}

static int parse_label_opt(gf_wds_rules *r, const char *lab) {
  if (!strncmp(lab, "json:", 5)) {
    /* The integer at a key of the json field. */
    if (!lab[5] || strlen(lab + 5) >= sizeof r->json_key)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: label '%s': json:KEY names a key of 1 to %zu "
                     "bytes",
                     lab, sizeof r->json_key - 1);
    gf_strlcpy(r->json_key, lab + 5, sizeof r->json_key);
    gf_strlcpy(r->label_name, "json", sizeof r->label_name);
    r->label_mode = GF_WDS_LABEL_JSON;
    return 0;
  }
  if (strlen(lab) >= sizeof r->label_name || strchr(lab, ';') ||
      strchr(lab, '/'))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: label '%s' is not a field name, \"auto\", "
                   "\"none\" or \"json:KEY\"",
                   lab);
  if (has_upper(lab))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: label '%s': field names are lower-case (a "
                   "shard's fields are lower-cased as webdataset does)",
                   lab);
  r->label_mode = !strcmp(lab, "auto")   ? GF_WDS_LABEL_AUTO
                  : !strcmp(lab, "none") ? GF_WDS_LABEL_NONE
                                         : GF_WDS_LABEL_FIELD;
  gf_strlcpy(r->label_name, r->label_mode == GF_WDS_LABEL_AUTO ? "cls" : lab,
             sizeof r->label_name);
  return 0;
}

int gf_wds_rules_parse(gf_wds_rules *r, const char *image_fields,
                       const char *label) {
  memset(r, 0, sizeof *r);
  const char *img =
      image_fields && image_fields[0] ? image_fields : "jpg;jpeg;png";
  if (strlen(img) >= sizeof r->image_list)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: image_fields is longer than %zu bytes",
                   sizeof r->image_list - 1);
  gf_strlcpy(r->image_list, img, sizeof r->image_list);
  gf_strlcpy(r->image_buf, img, sizeof r->image_buf);
  for (char *save = NULL, *t = strtok_r(r->image_buf, ";", &save); t;
       t = strtok_r(NULL, ";", &save)) {
    if (has_upper(t))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: image field '%s': field names are "
                     "lower-case",
                     t);
    if (r->n_image == GF_WDS_IMAGE_FIELDS_MAX)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: more than %u image fields",
                     GF_WDS_IMAGE_FIELDS_MAX);
    r->image_at[r->n_image] = (uint16_t)(t - r->image_buf);
    /* gf_folder_name_codec wants a file name: ".jpg" and so on. */
    char nm[300];
    snprintf(nm, sizeof nm, "x.%s", t);
    r->image_codec[r->n_image] = gf_folder_name_codec(nm);
    r->n_image++;
  }
  if (!r->n_image)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: image_fields names no field");
  return parse_label_opt(r, label && label[0] ? label : "auto");
}

void gf_wds_rules_ids(const gf_wds_rules *r, const gf_wds_samples *t,
                      gf_wds_rule_ids *ids) {
  for (uint32_t i = 0; i < r->n_image; i++)
    ids->image[i] = gf_wds_name_id(t, gf_wds_rules_image(r, i));
  ids->label = r->label_mode == GF_WDS_LABEL_NONE
                   ? UINT32_MAX
                   : gf_wds_name_id(t, r->label_name);
}

int gf_wds_rules_pick(const gf_wds_rules *r, const gf_wds_rule_ids *ids,
                      const gf_wds_samples *t, uint64_t i, gf_wds_pick *out,
                      char *why, size_t cap) {
  const gf_wds_sample *m = &t->samples[i];
  const gf_wds_field *f = &t->fields[m->first];
  if (m->flags & GF_WDS_DUP_FIELD) {
    snprintf(why, cap,
             "field '%s' comes twice (webdataset refuses such a sample)",
             t->names[m->dup]);
    return GF_EBADSOURCE;
  }
  int img = -1, lab = -1, codec = GF_FOLDER_CODEC_UNKNOWN;
  for (uint32_t k = 0; k < m->count; k++) {
    for (uint32_t j = 0; j < r->n_image; j++)
      if (f[k].name == ids->image[j]) {
        if (img >= 0) {
          snprintf(why, cap,
                   "two image fields ('%s' and '%s'): the options take "
                   "one of '%s'",
                   gf_wds_field_name(t, &f[img]), gf_wds_field_name(t, &f[k]),
                   r->image_list);
          return GF_EBADSOURCE;
        }
        img = (int)k;
        codec = r->image_codec[j];
      }
    if (ids->label != UINT32_MAX && f[k].name == ids->label)
      lab = (int)k;
  }
  if (img < 0) {
    snprintf(why, cap, "no image field (one of '%s')", r->image_list);
    return GF_EBADSOURCE;
  }
  if (lab < 0 && (r->label_mode == GF_WDS_LABEL_FIELD ||
                  r->label_mode == GF_WDS_LABEL_JSON)) {
    snprintf(why, cap, "no label field '%s'", r->label_name);
    return GF_EBADSOURCE;
  }
  *out = (gf_wds_pick){.image = img, .label = lab, .codec = codec};
  return 0;
}

int gf_wds_fields_parse(gf_wds_fields *s, const char *list, uint64_t bytes) {
  memset(s, 0, sizeof *s);
  s->bytes = bytes ? bytes : GF_FIELD_BYTES_DEFAULT;
  if (!list || !list[0])
    return 0;
  const char *p = list;
  for (;;) {
    const char *end = strchr(p, ';');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 0)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: fields '%s' has an empty field name (names "
                     "are ';'-separated)",
                     list);
    if (n >= sizeof s->names[0])
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: fields '%s': a field name is longer than %zu "
                     "bytes",
                     list, sizeof s->names[0] - 1);
    if (s->n == GF_FIELDS_MAX)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "shards: fields '%s' names more than %u fields", list,
                     GF_FIELDS_MAX);
    char *name = s->names[s->n];
    memcpy(name, p, n);
    name[n] = '\0';
    for (const char *c = name; *c; c++)
      if ((*c >= 'A' && *c <= 'Z') || *c == '/' || *c == '.')
        return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "shards: fields: '%s' is not a field name (field "
                       "names are lower-case, as webdataset lower-cases a "
                       "shard's, and hold no '/' or '.')",
                       name);
    for (uint32_t i = 0; i < s->n; i++)
      if (!strcmp(s->names[i], name))
        return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "shards: fields '%s' names field '%s' twice", list,
                       name);
    s->n++;
    if (!end)
      return 0;
    p = end + 1;
  }
}

int gf_wds_fields_find(const gf_wds_fields *f, const char *name) {
  for (uint32_t i = 0; i < f->n; i++)
    if (!strcmp(f->names[i], name))
      return (int)i;
  return -1;
}

/* A decimal integer with optional white space and sign, as Python's int()
 * takes a cls field (underscores aside). */
static bool parse_int(const uint8_t *p, uint64_t n, int64_t *out) {
  uint64_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' ||
                   p[i] == '\r' || p[i] == '\v' || p[i] == '\f'))
    i++;
  bool neg = false;
  if (i < n && (p[i] == '+' || p[i] == '-'))
    neg = p[i++] == '-';
  uint64_t v = 0, digits = 0;
  for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
    if (v > (uint64_t)INT64_MAX / 10)
      return false;
    v = v * 10 + (uint64_t)(p[i] - '0');
    if (v > (uint64_t)INT64_MAX)
      return false;
  }
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' ||
                   p[i] == '\r' || p[i] == '\v' || p[i] == '\f'))
    i++;
  if (!digits || i != n)
    return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

int gf_wds_rules_label(const gf_wds_rules *r, const uint8_t *p, uint64_t n,
                       int64_t *label, char *why, size_t cap) {
  if (r->label_mode == GF_WDS_LABEL_JSON) {
    int j = gf_wds_json_int(p, n, r->json_key, label);
    if (j == GF_WDS_JSON_FOUND)
      return 0;
    snprintf(why, cap,
             j == GF_WDS_JSON_ABSENT ? "its json field has no key '%s'"
             : j == GF_WDS_JSON_NOT_INT
                 ? "its json field's '%s' is not an integer"
                 : "its json field is not a JSON object (looking for '%s')",
             r->json_key);
    return GF_EBADSOURCE;
  }
  if (parse_int(p, n, label))
    return 0;
  char shown[40];
  uint64_t k = n < 24 ? n : 24;
  size_t at = 0;
  for (uint64_t i = 0; i < k; i++)
    shown[at++] =
        p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\'' ? (char)p[i] : '?';
  shown[at] = '\0';
  snprintf(why, cap, "label field '%s' is not a decimal integer ('%s%s')",
           r->label_name, shown, n > k ? "..." : "");
  return GF_EBADSOURCE;
}
