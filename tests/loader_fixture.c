#include "loader_fixture.h"

#include "decode/decode.h"
#include "format/format.h"
#include "gpu_testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int mkdir_p(const char *p) {
  char cmd[8500];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
  return system(cmd) == 0 ? 0 : -1;
}

uint64_t fixture_shard_size = 4096;

int fixture_make(fixture *f, const char *dir, uint64_t n, uint32_t classes,
                 bool ragged, uint32_t align, uint32_t channels) {
  memset(f, 0, sizeof *f);
  f->n = n;
  f->classes = classes;
  f->channels = channels;
  snprintf(f->png_dir, sizeof f->png_dir, "%s/png", dir);
  snprintf(f->ds_dir, sizeof f->ds_dir, "%s/ds", dir);
  uint64_t seed = 99;
  /* Class-major creation, zero-padded names: the folder listing order is
   * the creation order, so sample i is the same image in both sources. */
  uint64_t i = 0;
  for (uint32_t c = 0; c < classes; c++) {
    char cdir[4400];
    snprintf(cdir, sizeof cdir, "%s/class%02u", f->png_dir, c);
    if (mkdir_p(cdir) != 0)
      return -1;
    uint64_t per = n / classes + (c < n % classes ? 1 : 0);
    for (uint64_t k = 0; k < per; k++, i++) {
      gf_shape s = {12, 10, 3, GF_DTYPE_U8};
      if (ragged) {
        s.height = 3 + (uint32_t)(gf_test_rand(&seed) % 14);
        s.width = 3 + (uint32_t)(gf_test_rand(&seed) % 14);
        s.channels = gf_test_rand(&seed) % 3 == 0 ? 1 : 3;
      }
      uint8_t *px = malloc(gf_shape_bytes(&s));
      gf_test_fill_image(px, s.height, s.width, s.channels, 1000 + i);
      void *png;
      size_t png_len;
      if (gf_png_encode(px, &s, 6, &png, &png_len) < 0) {
        free(px);
        return -1;
      }
      char path[8800];
      snprintf(path, sizeof path, "%s/img%06llu.png", cdir,
               (unsigned long long)k);
      int rc = gf_test_write_file(path, png, png_len);
      free(png);
      free(px);
      if (rc < 0)
        return -1;
    }
  }
  /* References: libpng's pixels for each file, under `channels`. */
  gf_folder *fo;
  if (gf_folder_scan(f->png_dir, NULL, &fo) < 0 || fo->count != n)
    return -1;
  f->ref = calloc(n, sizeof *f->ref);
  f->ref_shape = calloc(n, sizeof *f->ref_shape);
  f->ref_label = calloc(n, sizeof *f->ref_label);
  if (mkdir_p(f->ds_dir) != 0)
    return -1;
  gf_writer_opts wo = {
      .shard_size = fixture_shard_size, .alignment = align, .index_version = 0};
  gf_writer *w;
  if (gf_writer_create(f->ds_dir, &wo, &w) < 0)
    return -1;
  for (uint32_t c = 0; c < fo->class_count; c++)
    gf_writer_add_class(w, fo->classes[c]);
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = channels;
  gf_decode_opts native = GF_DECODE_OPTS_INIT;
  for (uint64_t k = 0; k < n; k++) {
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", f->png_dir, fo->entries[k].path);
    size_t len;
    uint8_t *png = gf_test_read_file(path, &len);
    gf_shape s;
    gf_png_shape(png, len, &o, &s);
    f->ref[k] = malloc(gf_shape_bytes(&s));
    if (gf_png_decode(png, len, &o, f->ref[k], gf_shape_bytes(&s),
                      &f->ref_shape[k]) < 0)
      return -1;
    f->ref_label[k] = fo->entries[k].label;
    gf_shape ns;
    gf_png_shape(png, len, &native, &ns);
    uint8_t *px = malloc(gf_shape_bytes(&ns));
    gf_png_decode(png, len, &native, px, gf_shape_bytes(&ns), &ns);
    int codec = (int)(k % 4);
    void *enc = NULL;
    size_t enc_len = 0;
    int rc;
    if (codec == GF_CODEC_PNG)
      rc = gf_writer_add(w, png, len, codec, &ns, fo->entries[k].label,
                         fo->entries[k].path);
    else if ((rc = gf_encode(codec, px, &ns, 0, &enc, &enc_len)) == 0)
      rc = gf_writer_add(w, enc, enc_len, codec, &ns, fo->entries[k].label,
                         fo->entries[k].path);
    free(enc);
    free(px);
    free(png);
    if (rc < 0)
      return -1;
  }
  int rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  gf_folder_free(fo);
  return rc;
}

int fixture_build_dataset(const char *dir, const char *ds, int codec,
                          uint32_t align) {
  gf_folder *fo;
  if (gf_folder_scan(dir, NULL, &fo) < 0)
    return -1;
  if (mkdir(ds, 0755) != 0 && errno != EEXIST) {
    gf_folder_free(fo);
    return -1;
  }
  gf_writer_opts wo = {
      .shard_size = fixture_shard_size, .alignment = align, .index_version = 0};
  gf_writer *w;
  if (gf_writer_create(ds, &wo, &w) < 0) {
    gf_folder_free(fo);
    return -1;
  }
  for (uint32_t c = 0; c < fo->class_count; c++)
    gf_writer_add_class(w, fo->classes[c]);
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  int rc = 0;
  for (uint64_t k = 0; k < fo->count && rc == 0; k++) {
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", dir, fo->entries[k].path);
    size_t len;
    uint8_t *png = gf_test_read_file(path, &len);
    gf_shape s;
    rc = png ? gf_decode_shape(GF_CODEC_PNG, png, len, NULL, &o, &s) : -1;
    uint8_t *px = rc == 0 ? malloc(gf_shape_bytes(&s)) : NULL;
    if (rc == 0)
      rc = gf_decode(GF_CODEC_PNG, png, len, NULL, &o, px, gf_shape_bytes(&s),
                     &s);
    void *enc = NULL;
    size_t enc_len = 0;
    if (rc == 0 && codec == GF_CODEC_PNG)
      rc = gf_writer_add(w, png, len, codec, &s, fo->entries[k].label,
                         fo->entries[k].path);
    else if (rc == 0 && (rc = gf_encode(codec, px, &s, 0, &enc, &enc_len)) == 0)
      rc = gf_writer_add(w, enc, enc_len, codec, &s, fo->entries[k].label,
                         fo->entries[k].path);
    free(enc);
    free(px);
    free(png);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  gf_folder_free(fo);
  return rc;
}

void fixture_free(fixture *f) {
  for (uint64_t i = 0; f->ref && i < f->n; i++)
    free(f->ref[i]);
  free(f->ref);
  free(f->ref_shape);
  free(f->ref_label);
}

/* The batch's pixels as `data` + offsets would hold them. In GPU mode a
 * batch whose samples came straight from the pinned cache has no host
 * pixels (data NULL): they are read back from its device output, which
 * with the identity transform is the same dense uint8 array. NULL (and a
 * message) when neither is there. *owned: to free. */
static const uint8_t *batch_pixels(const gf_batch *b, uint8_t **owned) {
  *owned = NULL;
  if (b->data)
    return b->data;
  if (!b->direct_count || !b->on_device || !b->uniform || !b->output ||
      b->out_dtype != GF_OUT_U8 || b->out_height != b->shape.height ||
      b->out_width != b->shape.width ||
      b->out_channels != b->shape.channels ||
      b->output_bytes != (uint64_t)b->count * gf_shape_bytes(&b->shape)) {
    fprintf(stderr, "batch %llu: no host pixels and no identical device "
            "output (direct_count %u)\n", (unsigned long long)b->index,
            b->direct_count);
    return NULL;
  }
  uint8_t *p = malloc(b->output_bytes ? b->output_bytes : 1);
  if (!p || gf_test_copy_to_host(p, b->output, b->output_bytes) < 0) {
    fprintf(stderr, "batch %llu: cannot read the device output back: %s\n",
            (unsigned long long)b->index, gf_last_error()->message);
    free(p);
    return NULL;
  }
  *owned = p;
  return p;
}

int fixture_check_batch(const fixture *f, const gf_batch *b) {
  int bad = 0;
  uint8_t *owned;
  const uint8_t *px = batch_pixels(b, &owned);
  if (!px)
    return 1;
  for (uint32_t j = 0; j < b->count; j++) {
    uint64_t idx = b->indices[j];
    if (idx >= f->n) {
      fprintf(stderr, "batch %llu: sample %u has index %llu\n",
              (unsigned long long)b->index, j, (unsigned long long)idx);
      bad++;
      continue;
    }
    const gf_shape *s = &b->shapes[j];
    /* GPU mode leaves gradzstd bytes filtered for the GPU to undo; their
     * pixels are checked on the device output (test_gpu_loader). */
    if (b->filtered && b->filtered[j]) {
      if (memcmp(s, &f->ref_shape[idx], sizeof *s) != 0 ||
          b->labels[j] != f->ref_label[idx])
        bad++;
      continue;
    }
    if (memcmp(s, &f->ref_shape[idx], sizeof *s) != 0 ||
        b->labels[j] != f->ref_label[idx] ||
        memcmp(px + b->offsets[j], f->ref[idx], gf_shape_bytes(s)) != 0) {
      fprintf(stderr, "batch %llu: sample %u (index %llu) differs from the "
              "reference\n", (unsigned long long)b->index, j,
              (unsigned long long)idx);
      bad++;
    }
    if (b->uniform && (memcmp(&b->shape, s, sizeof *s) != 0 ||
                       b->offsets[j] != j * gf_shape_bytes(s))) {
      fprintf(stderr, "batch %llu: uniform batch is not dense\n",
              (unsigned long long)b->index);
      bad++;
    }
  }
  free(owned);
  return bad;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t batch_hash(const gf_batch *b) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, &b->epoch, sizeof b->epoch);
  h = fnv(h, &b->index, sizeof b->index);
  h = fnv(h, &b->count, sizeof b->count);
  uint8_t *owned;
  const uint8_t *px = batch_pixels(b, &owned);
  for (uint32_t j = 0; j < b->count; j++) {
    h = fnv(h, &b->indices[j], sizeof b->indices[j]);
    h = fnv(h, &b->labels[j], sizeof b->labels[j]);
    h = fnv(h, &b->shapes[j], sizeof b->shapes[j]);
    if (px)
      h = fnv(h, px + b->offsets[j], gf_shape_bytes(&b->shapes[j]));
  }
  free(owned);
  return h;
}
