/* Writes a dataset of N tiny raw samples (8x8 RGB, distinct pixels), to
 * measure what the index size alone costs: open time and the time to the
 * first batch on an index of a million samples.
 *
 *   make_index OUT [--count N]      (default 1,000,000)
 */
#include "format/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int main(int argc, char **argv) {
  const char *out = NULL;
  uint64_t n = 1000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--count") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: make_index OUT [--count N]\n");
      return 2;
    } else
      out = argv[i];
  }
  if (!out || !n) {
    fprintf(stderr, "usage: make_index OUT [--count N]\n");
    return 2;
  }
  if (mkdir(out, 0755) != 0) {
    perror(out);
    return 1;
  }
  gf_writer_opts wo = {0, 1};
  gf_writer *w;
  int rc = gf_writer_create(out, &wo, &w);
  gf_shape s = {8, 8, 3, GF_DTYPE_U8};
  uint8_t px[8 * 8 * 3];
  char name[64];
  gf_writer_add_class(w, "all");
  for (uint64_t i = 0; rc == 0 && i < n; i++) {
    for (size_t k = 0; k < sizeof px; k++)
      px[k] = (uint8_t)(i * 31 + k * 7);
    snprintf(name, sizeof name, "s%llu", (unsigned long long)i);
    rc = gf_writer_add(w, px, sizeof px, GF_CODEC_RAW, &s, 0, name);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  if (rc < 0) {
    fprintf(stderr, "make_index: %s\n", gf_last_error()->message);
    return 1;
  }
  printf("wrote %llu samples to %s\n", (unsigned long long)n, out);
  return 0;
}
