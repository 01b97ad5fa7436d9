/* Prints what tests/sampler_ref.py prints for the same arguments, from the
 * C sampler: the rank's batch count, then the first COUNT samples of its
 * share (NONE past its end), for test_sampler_ref.sh's comparison.
 *   sampler_dump N SEED EPOCH ORDER RANK WORLD BATCH PARTITION DROP_LAST
 *                BLOCK_SIZE WINDOW_BLOCKS COUNT [START ORDER_WORLD] */
#include "pipeline/sampler.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 13 && argc != 15) {
    fprintf(stderr, "usage: sampler_dump N SEED EPOCH ORDER RANK WORLD BATCH "
                    "PARTITION DROP_LAST BLOCK_SIZE WINDOW_BLOCKS COUNT "
                    "[START ORDER_WORLD]\n");
    return 2;
  }
  unsigned long long v[14] = {0};
  for (int i = 1; i < argc; i++)
    v[i - 1] = strtoull(argv[i], NULL, 10);
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = v[0];
  c.seed = v[1];
  c.order = (uint32_t)v[3];
  c.rank = (uint32_t)v[4];
  c.world = (uint32_t)v[5];
  c.batch_size = v[6];
  c.partition = (uint32_t)v[7];
  c.drop_last = (uint32_t)v[8];
  c.block_size = v[9];
  c.window_blocks = (uint32_t)v[10];
  gf_sampler s;
  if (gf_sampler_init(&s, &c) < 0) {
    fprintf(stderr, "%s\n", gf_last_error()->message);
    return 1;
  }
  if (argc == 15 && v[12])
    gf_sampler_set_resume_world(&s, v[2], v[12], (uint32_t)v[13]);
  else
    gf_sampler_set_epoch(&s, v[2]);
  printf("%llu\n", (unsigned long long)gf_sampler_batches_per_epoch(&s));
  for (unsigned long long i = 0; i < v[11]; i++) {
    uint64_t x = gf_sampler_get(&s, i);
    if (x == GF_NO_INDEX)
      printf(i ? " NONE" : "NONE");
    else
      printf(i ? " %llu" : "%llu", (unsigned long long)x);
  }
  printf("\n");
  return 0;
}
