/* codec_bench: stored size and single-core decode speed of each codec on
 * random crops of real photos.
 *
 *   codec_bench PHOTOS_DIR [--size 256] [--crops 64] [--seconds 1]
 *               [--seed 1]
 *
 * Each crop is stored as png (gf_png_encode at libpng's default zlib level,
 * a stand-in for source files; the photos' own file sizes are reported
 * beside it), raw, zstd (levels 3 and 19), gradzstd (level 1) and loco
 * (bands of 8 rows, the default, and of 255; 8-bit photos only). For each
 * codec: total stored bytes, compression vs raw, compression relative to
 * png (png bytes / codec bytes: 96% means the codec's output is png's /
 * 0.96), and decode MB/s of decoded output on one core (this thread's CPU
 * time), repeated for at least --seconds. */
#include "decode/decode.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct photo {
  char name[256];
  size_t file_bytes;
  gf_shape s;
  uint8_t *px;
} photo;

typedef struct config {
  const char *label;
  int codec;
  int level;
} config;

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Thread CPU time: the decode runs on this one thread, and other work on
 * the machine then disturbs the figures less than with wall time. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return buf;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const photo *)a)->name, ((const photo *)b)->name);
}

static int usage(void) {
  fprintf(stderr, "usage: codec_bench PHOTOS_DIR [--size 256] [--crops 64] "
                  "[--seconds 1] [--seed 1]\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  const char *dir = argv[1];
  uint32_t size = 256;
  int ncrops = 64;
  double seconds = 1.0;
  uint64_t seed = 1;
  for (int i = 2; i < argc; i++) {
    if (i + 1 >= argc)
      return usage();
    if (!strcmp(argv[i], "--size"))
      size = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--crops"))
      ncrops = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[++i], NULL, 10);
    else
      return usage();
  }
  if (!size || ncrops <= 0 || seconds <= 0)
    return usage();

  /* Load every photo. */
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return 1;
  }
  photo *ph = NULL;
  int nph = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".png") != 0 || l >= 256)
      continue;
    ph = realloc(ph, sizeof *ph * (size_t)(nph + 1));
    snprintf(ph[nph].name, sizeof ph[nph].name, "%s", e->d_name);
    nph++;
  }
  closedir(d);
  qsort(ph, (size_t)nph, sizeof *ph, cmp_name);
  uint64_t file_total = 0, file_raw = 0, file_reenc = 0;
  int usable = 0;
  for (int i = 0; i < nph; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, ph[i].name);
    size_t len;
    void *f = read_file(path, &len);
    ph[i].px = NULL;
    if (!f)
      continue;
    ph[i].file_bytes = len;
    if (gf_png_shape(f, len, NULL, &ph[i].s) == 0) {
      size_t n = (size_t)gf_shape_bytes(&ph[i].s);
      ph[i].px = malloc(n);
      if (gf_png_decode(f, len, NULL, ph[i].px, n, &ph[i].s) != 0) {
        free(ph[i].px);
        ph[i].px = NULL;
      }
    }
    free(f);
    if (!ph[i].px) {
      fprintf(stderr, "skipping %s: %s\n", ph[i].name,
              gf_last_error()->message);
      continue;
    }
    void *re;
    size_t rlen;
    if (gf_png_encode(ph[i].px, &ph[i].s, -1, &re, &rlen) == 0) {
      file_reenc += rlen;
      free(re);
    }
    file_total += ph[i].file_bytes;
    file_raw += gf_shape_bytes(&ph[i].s);
    if (ph[i].s.width >= size && ph[i].s.height >= size)
      usable++;
  }
  if (!usable) {
    fprintf(stderr, "no photo of at least %ux%u in %s\n", size, size, dir);
    return 1;
  }

  /* Crops from photos large enough, chosen by the seed. */
  gf_shape *cs = calloc((size_t)ncrops, sizeof *cs);
  uint8_t **crop = calloc((size_t)ncrops, sizeof *crop);
  uint64_t raw_total = 0;
  for (int c = 0; c < ncrops; c++) {
    const photo *p;
    do
      p = &ph[rng(&seed) % (uint64_t)nph];
    while (!p->px || p->s.width < size || p->s.height < size);
    uint32_t x0 = (uint32_t)(rng(&seed) % (p->s.width - size + 1));
    uint32_t y0 = (uint32_t)(rng(&seed) % (p->s.height - size + 1));
    cs[c] = (gf_shape){size, size, p->s.channels, p->s.dtype};
    size_t bpp = (size_t)p->s.channels * (p->s.dtype == GF_DTYPE_U16 ? 2 : 1);
    crop[c] = malloc((size_t)gf_shape_bytes(&cs[c]));
    for (uint32_t y = 0; y < size; y++)
      memcpy(crop[c] + (size_t)y * size * bpp,
             p->px + ((size_t)(y0 + y) * p->s.width + x0) * bpp, size * bpp);
    raw_total += gf_shape_bytes(&cs[c]);
  }

  static const config cfg[] = {
      {"png", GF_CODEC_PNG, -1},         {"raw", GF_CODEC_RAW, 0},
      {"zstd-3", GF_CODEC_ZSTD, 3},      {"zstd-19", GF_CODEC_ZSTD, 19},
      {"gradzstd-1", GF_CODEC_GRADZSTD, 1}, {"loco-8", GF_CODEC_LOCO, 8},
      {"loco-255", GF_CODEC_LOCO, 255}};
  enum { NCFG = sizeof cfg / sizeof cfg[0] };
  printf("photos: %d files, %llu bytes for %llu decoded bytes (%.3fx); "
         "re-encoded by gf_png_encode: %llu bytes (%.3fx)\n",
         nph, (unsigned long long)file_total, (unsigned long long)file_raw,
         (double)file_raw / (double)file_total,
         (unsigned long long)file_reenc,
         (double)file_raw / (double)file_reenc);
  printf("crops: %d of %ux%u, %llu raw bytes, seed as given\n\n", ncrops,
         size, size, (unsigned long long)raw_total);
  printf("%-11s %12s %8s %8s %12s %10s\n", "codec", "bytes", "vs raw",
         "vs png", "decode MB/s", "x libpng");
  uint64_t png_bytes = 0;
  double png_mbs = 0;
  size_t maxn = (size_t)size * size * 8;
  uint8_t *dst = malloc(maxn);
  for (int k = 0; k < NCFG; k++) {
    void **enc = calloc((size_t)ncrops, sizeof *enc);
    size_t *len = calloc((size_t)ncrops, sizeof *len);
    uint64_t total = 0;
    for (int c = 0; c < ncrops; c++) {
      int rc = cfg[k].codec == GF_CODEC_PNG
                   ? gf_png_encode(crop[c], &cs[c], cfg[k].level, &enc[c],
                                   &len[c])
                   : gf_encode(cfg[k].codec, crop[c], &cs[c], cfg[k].level,
                               &enc[c], &len[c]);
      if (rc < 0) {
        fprintf(stderr, "%s: encode failed: %s\n", cfg[k].label,
                gf_last_error()->message);
        return 1;
      }
      total += len[c];
    }
    /* Check once, then time whole passes over all crops. */
    for (int c = 0; c < ncrops; c++) {
      gf_shape out;
      if (gf_decode(cfg[k].codec, enc[c], len[c], &cs[c], NULL, dst, maxn,
                    &out) != 0 ||
          memcmp(dst, crop[c], (size_t)gf_shape_bytes(&cs[c])) != 0) {
        fprintf(stderr, "%s: crop %d does not round-trip\n", cfg[k].label, c);
        return 1;
      }
    }
    uint64_t bytes = 0;
    double t0 = now(), t;
    do {
      for (int c = 0; c < ncrops; c++) {
        gf_shape out;
        gf_decode(cfg[k].codec, enc[c], len[c], &cs[c], NULL, dst, maxn,
                  &out);
        bytes += gf_shape_bytes(&out);
      }
      t = now() - t0;
    } while (t < seconds);
    double mbs = (double)bytes / t / 1e6;
    if (cfg[k].codec == GF_CODEC_PNG) {
      png_bytes = total;
      png_mbs = mbs;
    }
    printf("%-11s %12llu %7.3fx %7.1f%% %12.1f %9.1fx\n", cfg[k].label,
           (unsigned long long)total, (double)raw_total / (double)total,
           100.0 * (double)png_bytes / (double)total, mbs, mbs / png_mbs);
    for (int c = 0; c < ncrops; c++)
      free(enc[c]);
    free(enc);
    free(len);
  }
  free(dst);
  for (int c = 0; c < ncrops; c++)
    free(crop[c]);
  free(crop);
  free(cs);
  for (int i = 0; i < nph; i++)
    free(ph[i].px);
  free(ph);
  return 0;
}
