/* JPEG test folders and references (jpeg_fixture.h). */
#include "jpeg_fixture.h"

#include "decode/decode.h"
#include "xform/transform.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int jfix_mkdir(const char *path) {
  return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

static int write_atomic(const char *path, const void *data, size_t len) {
  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return -ENAMETOOLONG;
  int rc = gf_test_write_file(tmp, data, len);
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -errno;
  return rc;
}

int jfix_write_jpeg_px(const char *path, const uint8_t *px, uint32_t h,
                       uint32_t w, uint32_t c, int quality) {
  gf_shape s = {h, w, c, GF_DTYPE_U8};
  void *jpg;
  size_t len;
  int rc = gf_jpeg_encode(px, &s, quality, &jpg, &len);
  if (rc < 0)
    return rc;
  rc = write_atomic(path, jpg, len);
  free(jpg);
  return rc;
}

int jfix_write_jpeg(const char *path, uint32_t h, uint32_t w, uint32_t c,
                    uint64_t seed, int quality) {
  uint8_t *px = malloc((size_t)h * w * c);
  if (!px)
    return -ENOMEM;
  gf_test_fill_image(px, h, w, c, seed);
  int rc = jfix_write_jpeg_px(path, px, h, w, c, quality);
  free(px);
  return rc;
}

int jfix_write_png(const char *path, uint32_t h, uint32_t w, uint32_t c,
                   uint64_t seed) {
  gf_shape s = {h, w, c, GF_DTYPE_U8};
  uint8_t *px = malloc((size_t)h * w * c);
  if (!px)
    return -ENOMEM;
  gf_test_fill_image(px, h, w, c, seed);
  void *png;
  size_t len;
  int rc = gf_png_encode(px, &s, 6, &png, &len);
  free(px);
  if (rc < 0)
    return rc;
  rc = write_atomic(path, png, len);
  free(png);
  return rc;
}

typedef struct photo {
  uint8_t *px;
  gf_shape s;
} photo;

int jfix_photo_folder(const char *dir, uint32_t n, uint32_t classes,
                      uint32_t lo, uint32_t hi, uint64_t seed) {
  const char *data = gf_test_data_dir();
  if (!data)
    return 0;
  char pdir[4200];
  snprintf(pdir, sizeof pdir, "%s/photos", data);
  DIR *d = opendir(pdir);
  if (!d)
    return 0;
  photo ph[32];
  int np = 0;
  struct dirent *e;
  char *names[32];
  int nn = 0;
  while ((e = readdir(d)) && nn < 32) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".png") == 0)
      names[nn++] = strdup(e->d_name);
  }
  closedir(d);
  /* A fixed order, whatever readdir's. */
  for (int i = 0; i < nn; i++)
    for (int k = i + 1; k < nn; k++)
      if (strcmp(names[k], names[i]) < 0) {
        char *t = names[i];
        names[i] = names[k];
        names[k] = t;
      }
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 3;
  for (int i = 0; i < nn; i++) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", pdir, names[i]);
    free(names[i]);
    size_t len;
    uint8_t *buf = gf_test_read_file(p, &len);
    gf_shape s;
    if (!buf || gf_decode_shape(GF_CODEC_PNG, buf, len, NULL, &o, &s) < 0) {
      free(buf);
      continue;
    }
    ph[np].px = malloc(gf_shape_bytes(&s));
    if (ph[np].px && gf_decode(GF_CODEC_PNG, buf, len, NULL, &o, ph[np].px,
                               gf_shape_bytes(&s), &ph[np].s) == 0)
      np++;
    else
      free(ph[np].px);
    free(buf);
  }
  if (np == 0)
    return 0;
  uint64_t st = seed;
  int made = 0;
  jfix_mkdir(dir);
  for (uint32_t k = 0; k < classes; k++) {
    char cd[4200];
    snprintf(cd, sizeof cd, "%s/c%02u", dir, k);
    jfix_mkdir(cd);
  }
  uint8_t *crop = malloc((size_t)hi * hi * 3);
  for (uint32_t i = 0; i < n && crop; i++) {
    const photo *p = &ph[gf_test_rand(&st) % (uint64_t)np];
    uint32_t h = lo + (uint32_t)(gf_test_rand(&st) % (hi - lo + 1));
    uint32_t w = lo + (uint32_t)(gf_test_rand(&st) % (hi - lo + 1));
    if (h > p->s.height)
      h = p->s.height;
    if (w > p->s.width)
      w = p->s.width;
    uint32_t y = (uint32_t)(gf_test_rand(&st) % (p->s.height - h + 1));
    uint32_t x = (uint32_t)(gf_test_rand(&st) % (p->s.width - w + 1));
    for (uint32_t r = 0; r < h; r++)
      memcpy(crop + (size_t)r * w * 3,
             p->px + (((size_t)(y + r) * p->s.width) + x) * 3, (size_t)w * 3);
    char path[4400];
    snprintf(path, sizeof path, "%s/c%02u/img%05u.jpg", dir, i % classes, i);
    if (jfix_write_jpeg_px(path, crop, h, w, 3, 90) == 0)
      made++;
  }
  free(crop);
  for (int i = 0; i < np; i++)
    free(ph[i].px);
  return made;
}

int jfix_reference(const char *path, const gf_transform *t, uint64_t epoch,
                   uint64_t index, const gf_decode_opts *o, void *out,
                   size_t cap, uint32_t *c) {
  size_t len;
  uint8_t *buf = gf_test_read_file(path, &len);
  if (!buf)
    return -EIO;
  int codec = len >= 2 && buf[0] == 0xFF && buf[1] == 0xD8 ? GF_CODEC_JPEG
                                                           : GF_CODEC_PNG;
  gf_shape s;
  int rc = gf_decode_shape(codec, buf, len, NULL, o, &s);
  uint8_t *px = rc == 0 ? malloc(gf_shape_bytes(&s)) : NULL;
  if (rc == 0 && !px)
    rc = -ENOMEM;
  if (rc == 0)
    rc = gf_decode(codec, buf, len, NULL, o, px, gf_shape_bytes(&s), &s);
  free(buf);
  if (rc == 0) {
    gf_xform_sample p;
    gf_xform_sample_init(t, epoch, index, 0, &s, t->height, t->width, 0, &p);
    size_t need = (size_t)t->height * t->width * s.channels *
                  gf_out_dtype_size(t->out_dtype);
    rc = need <= cap ? gf_xform_ref(t, px, gf_shape_bytes(&s), &p, 1, t->height,
                                    t->width, s.channels, out)
                     : -ENOSPC;
    *c = s.channels;
  }
  free(px);
  return rc;
}

uint64_t jfix_hash(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t jfix_batch_hash(const gf_batch *b) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = jfix_hash(h, &b->epoch, sizeof b->epoch);
  h = jfix_hash(h, &b->index, sizeof b->index);
  h = jfix_hash(h, &b->count, sizeof b->count);
  h = jfix_hash(h, b->indices, sizeof *b->indices * b->count);
  h = jfix_hash(h, b->labels, sizeof *b->labels * b->count);
  if (b->output && !b->on_device)
    h = jfix_hash(h, b->output, (size_t)b->output_bytes);
  return h;
}
