/* Writes a dataset of N small samples, to measure what the index size
 * alone costs: open time and the time to the first batch on an index of a
 * million samples.
 *
 *   make_index OUT [--count N] [--varied LO-HI] [--seed S]
 *
 * Default: N (1,000,000) raw 8x8 RGB samples with distinct pixels.
 * --varied LO-HI: a varied-size index: sample i's height and width are each
 * uniform in [LO, HI] (from the seed and i), stored as zstd of a flat grey
 * image (a few dozen bytes whatever the size, so a million samples of
 * 200-500 px sides take little disk; one frame is encoded per distinct
 * shape and reused).
 */
#include "format/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int usage(void) {
  fprintf(stderr,
          "usage: make_index OUT [--count N] [--varied LO-HI] [--seed S]\n");
  return 2;
}

typedef struct frame {
  void *data;
  size_t len;
} frame;

int main(int argc, char **argv) {
  const char *out = NULL;
  uint64_t n = 1000000, seed = 1;
  unsigned lo = 0, hi = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--count") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--varied") && i + 1 < argc) {
      if (sscanf(argv[++i], "%u-%u", &lo, &hi) != 2 || lo < 1 || hi < lo ||
          hi > 8192)
        return usage();
    } else if (argv[i][0] == '-')
      return usage();
    else
      out = argv[i];
  }
  if (!out || !n)
    return usage();
  if (mkdir(out, 0755) != 0) {
    perror(out);
    return 1;
  }
  gf_writer_opts wo = {.shard_size = 0, .alignment = 1, .index_version = 0};
  gf_writer *w;
  int rc = gf_writer_create(out, &wo, &w);
  gf_shape s = {8, 8, 3, GF_DTYPE_U8};
  uint8_t px[8 * 8 * 3];
  char name[64];
  /* --varied: the zstd frame of each shape, made on first use. */
  uint32_t span = hi - lo + 1;
  frame *frames = lo ? calloc((size_t)span * span, sizeof *frames) : NULL;
  uint8_t *grey = lo ? malloc((size_t)hi * hi * 3) : NULL;
  if (lo && (!frames || !grey)) {
    fprintf(stderr, "make_index: out of memory\n");
    return 1;
  }
  if (grey)
    memset(grey, 128, (size_t)hi * hi * 3);
  if (rc == 0)
    rc = gf_writer_add_class(w, "all");
  for (uint64_t i = 0; rc == 0 && i < n; i++) {
    snprintf(name, sizeof name, "s%llu", (unsigned long long)i);
    if (!lo) {
      for (size_t k = 0; k < sizeof px; k++)
        px[k] = (uint8_t)(i * 31 + k * 7);
      rc = gf_writer_add(w, px, sizeof px, GF_CODEC_RAW, &s, 0, name);
      continue;
    }
    uint64_t z = seed ^ (i * 0xD1B54A32D192ED03ull);
    gf_shape vs = {lo + (uint32_t)(splitmix(&z) % span),
                   lo + (uint32_t)(splitmix(&z) % span), 3, GF_DTYPE_U8};
    frame *f = &frames[(size_t)(vs.height - lo) * span + (vs.width - lo)];
    if (!f->data && (rc = gf_encode(GF_CODEC_ZSTD, grey, &vs, 1, &f->data,
                                    &f->len)) < 0)
      break;
    rc = gf_writer_add(w, f->data, f->len, GF_CODEC_ZSTD, &vs, 0, name);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  if (frames)
    for (size_t k = 0; k < (size_t)span * span; k++)
      free(frames[k].data);
  free(frames);
  free(grey);
  if (rc < 0) {
    fprintf(stderr, "make_index: %s\n", gf_last_error()->message);
    return 1;
  }
  printf("wrote %llu samples to %s%s\n", (unsigned long long)n, out,
         lo ? " (varied sizes)" : "");
  return 0;
}
