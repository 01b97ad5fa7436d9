/* `gpufeed build SHARDS OUT`: WebDataset tar shards as the builder's source
 * (docs/SHARDS.md). The shards are opened as a loader opens them (sidecar
 * indexes, else a scan), their samples listed as a folder's files would be
 * (each sample's key its source path, its label found once read), and
 * each sample read as a loader reads it: its extent, checked against the
 * index, its image taken out with its label. */
#include "build_shards.h"

#include "format/wds_spec.h"

#include <stdlib.h>
#include <string.h>

#define CMD "build"

int gfc_shards_folder(const gfc_build_opts *o, gf_storage **st,
                      gf_wds_set **set, gf_folder **out) {
  *st = NULL;
  *set = NULL;
  *out = NULL;
  char *root = NULL, **names = NULL;
  uint32_t n = 0;
  gf_wds_set_opts wo = {.image_fields = o->shards.image_fields,
                        .label = o->shards.label,
                        .index = o->shards.index,
                        .threads = o->shards.threads,
                        .index_bytes = o->shards.index_bytes};
  int rc = gf_wds_spec_parse(o->src, 0, &root, &names, &n);
  if (rc == 0)
    rc = gf_storage_open(root, &o->remote, st);
  if (rc == 0)
    rc = gf_wds_set_open(*st, names, n, &wo, set);
  gf_wds_spec_free(root, names, n);
  gf_folder *f = rc == 0 ? calloc(1, sizeof *f) : NULL;
  uint64_t count = rc == 0 ? gf_wds_set_count(*set) : 0;
  if (rc == 0 &&
      (!f || !(f->entries = calloc(count ? count : 1, sizeof *f->entries)) ||
       !(f->root = strdup(gf_storage_display(*st)))))
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "out of memory listing %llu samples",
                 (unsigned long long)count);
  for (uint64_t i = 0; rc == 0 && i < count; i++, f->count++) {
    gf_folder_entry *e = &f->entries[i];
    gf_wds_extent x;
    e->label = -1;
    e->size = UINT64_MAX;
    e->codec =
        gf_wds_set_extent(*set, i, &x) == 0 ? x.codec : GF_FOLDER_CODEC_UNKNOWN;
    if (!(e->path = strdup(gf_wds_set_key(*set, i))))
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory listing %llu samples",
                   (unsigned long long)count);
  }
  gf_error_clear(); /* an extent that failed fails its sample when read */
  if (rc != 0) {
    if (f)
      gf_folder_free(f);
    else
      free(f);
    gf_wds_set_close(*set);
    gf_storage_close(*st);
    *set = NULL;
    *st = NULL;
    return rc;
  }
  *out = f;
  return 0;
}

int gfc_shards_read(const gf_wds_set *set, uint64_t i, void **data, size_t *len,
                    int64_t *label) {
  *data = NULL;
  *len = 0;
  gf_wds_extent x;
  int rc = gf_wds_set_extent(set, i, &x);
  if (rc < 0)
    return rc;
  if (x.length > GF_LIMIT_DEFAULT_BYTES)
    return gf_fail(GF_ELIMIT, NULL, i, GF_NO_INDEX,
                   "sample '%s': an extent of %llu bytes, more than the %llu "
                   "a source may have",
                   gf_wds_set_key(set, i), (unsigned long long)x.length,
                   (unsigned long long)GF_LIMIT_DEFAULT_BYTES);
  uint8_t *buf = malloc(x.length ? x.length : 1);
  if (!buf)
    return gf_fail(-ENOMEM, NULL, i, GF_NO_INDEX,
                   "out of memory for a sample of %llu bytes",
                   (unsigned long long)x.length);
  uint64_t io, il;
  rc = gf_object_read(x.obj, buf, x.offset, x.length);
  if (rc == 0)
    rc = gf_wds_set_unpack(set, i, buf, x.length, &io, &il, label, NULL);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  memmove(buf, buf + io, il);
  *data = buf;
  *len = (size_t)il;
  return 0;
}
