/* A folder of PNG and JPEG files as a source: listed at open (format.h,
 * gf_folder_scan_in: ImageFolder, or flat with a labels file), each sample
 * a whole file of the storage, its codec told by its first bytes. Over a
 * storage that cannot list folders (plain HTTP), there is no folder to
 * read: such a storage serves built datasets. */
#include "pipeline/source.h"

#include "format/format.h"
#include "pipeline/sampler.h" /* gf_order_mix */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct folder_src {
  gf_storage *st;
  gf_folder *f;
} folder_src;

static int fo_probe(gf_storage *st, const char *labels_file) {
  (void)st;
  (void)labels_file;
  return 1;
}

static int fo_open(gf_storage *st, const char *labels_file, void **impl) {
  if (!(gf_storage_caps(st) & GF_STORAGE_LIST))
    return gf_fail(GF_EBADSOURCE, gf_storage_display(st), GF_NO_INDEX,
                   GF_NO_INDEX,
                   "no gpufeed dataset here (no %s), and a folder of images "
                   "cannot be read from %s storage, which has no listing: "
                   "serve a dataset made by `gpufeed build` there, or read "
                   "the folder from a local path",
                   GF_INDEX_NAME, st->ops->name);
  folder_src *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->st = st;
  int rc = gf_folder_scan_in(st, labels_file, NULL, &s->f);
  if (rc < 0) {
    free(s);
    return rc;
  }
  *impl = s;
  return 0;
}

static void fo_close(void *impl) {
  folder_src *s = impl;
  gf_folder_free(s->f);
  free(s);
}

static uint64_t fo_count(const void *impl) {
  return ((const folder_src *)impl)->f->count;
}

static int fo_sample(const void *impl, uint64_t idx, gf_src_sample *out) {
  const gf_folder *f = ((const folder_src *)impl)->f;
  out->obj = NULL;
  out->length = f->entries[idx].size != UINT64_MAX ? f->entries[idx].size : 0;
  out->codec = f->entries[idx].codec;
  out->sniff = true;
  out->label = f->entries[idx].label;
  return 0;
}

/* Chains the fields with splitmix64's finalizer (sampler.h, section 1). */
static uint64_t fp_mix(uint64_t h, uint64_t v) { return gf_order_mix(h ^ v); }

static uint64_t fo_fingerprint(const void *impl) {
  const gf_folder *f = ((const folder_src *)impl)->f;
  uint64_t h = fp_mix(0x9E3779B97F4A7C15ull, f->count);
  h = fp_mix(h, 0x666f6c646572ull); /* "folder" */
  for (uint64_t i = 0; i < f->count; i++) {
    const gf_folder_entry *e = &f->entries[i];
    size_t len = strlen(e->path);
    /* The path in 8-byte words, then its length: no two listings of
     * different names hash alike by shifting bytes between entries. */
    for (size_t o = 0; o < len; o += 8) {
      uint8_t w[8] = {0};
      memcpy(w, e->path + o, len - o < 8 ? len - o : 8);
      h = fp_mix(h, gf_le64(w));
    }
    h = fp_mix(h, len);
    h = fp_mix(h, (uint64_t)e->label);
  }
  return h;
}

static void fo_name(const void *impl, uint64_t idx, char *buf, size_t cap) {
  const gf_folder *f = ((const folder_src *)impl)->f;
  snprintf(buf, cap, "%s/%s", f->root, f->entries[idx].path);
}

static int fo_open_sample(const void *impl, uint64_t idx, gf_object **out) {
  const folder_src *s = impl;
  const gf_folder_entry *e = &s->f->entries[idx];
  int rc;
  if (e->size != UINT64_MAX) {
    /* The listing told its size and version: no request to open it. */
    gf_stat known = {.type = GF_ENTRY_FILE, .size = e->size};
    if (e->version)
      gf_strlcpy(known.version, e->version, sizeof known.version);
    rc = gf_object_open_known(s->st, e->path, &known, 0, out);
  } else {
    rc = gf_object_open(s->st, e->path, 0, out);
  }
  if (rc < 0) {
    char why[512], name[4200];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    fo_name(impl, idx, name, sizeof name);
    return gf_fail(rc, name, idx, GF_NO_INDEX, "cannot open: %s", why);
  }
  return 0;
}

static uint32_t fo_class_count(const void *impl) {
  return ((const folder_src *)impl)->f->class_count;
}

static const char *fo_class_name(const void *impl, uint32_t i) {
  const gf_folder *f = ((const folder_src *)impl)->f;
  return i < f->class_count ? f->classes[i] : NULL;
}

static int fo_sample_path(const void *impl, uint64_t idx, const char **name,
                          size_t *len) {
  const gf_folder *f = ((const folder_src *)impl)->f;
  *name = f->entries[idx].path;
  *len = strlen(*name);
  return 0;
}

static uint32_t fo_objects(const void *impl) {
  (void)impl;
  return 0;
}

static const char *fo_object_name(const void *impl, uint32_t i, char *buf,
                                  size_t cap) {
  (void)impl;
  (void)i;
  (void)buf;
  (void)cap;
  return NULL;
}

static uint32_t fo_alignment(const void *impl) {
  (void)impl;
  return 1;
}

const gf_source_ops gf_source_folder = {
    .name = "folder",
    .caps = 0,
    .probe = fo_probe,
    .open = fo_open,
    .close = fo_close,
    .count = fo_count,
    .sample = fo_sample,
    .fingerprint = fo_fingerprint,
    .sample_name = fo_name,
    .open_sample = fo_open_sample,
    .max_sizes = NULL,
    .class_count = fo_class_count,
    .class_name = fo_class_name,
    .sample_path = fo_sample_path,
    .objects = fo_objects,
    .object_name = fo_object_name,
    .alignment = fo_alignment,
};
