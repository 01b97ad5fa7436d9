/* Test datasets for the loader tests: the same images as a PNG folder
 * (ImageFolder) and as a built dataset, with reference pixels decoded
 * independently of the loader, so a batch can be checked byte by byte. */
#ifndef GF_LOADER_FIXTURE_H
#define GF_LOADER_FIXTURE_H

#include "testutil.h"

typedef struct fixture {
  char png_dir[4096];
  char ds_dir[4096];
  uint64_t n;
  uint32_t classes;
  uint32_t channels;     /* output channels the references hold */
  uint8_t **ref;         /* [n] decoded pixels under `channels` */
  gf_shape *ref_shape;   /* [n] */
  int64_t *ref_label;    /* [n] */
} fixture;

/* Makes n images in `classes` classes under dir/png, and dir/ds built from
 * them with codecs rotating over raw, zstd, gradzstd and png. ragged: sizes
 * and gray/RGB vary; else every image is 12x10 RGB. align: the dataset's
 * extent alignment (1 or 4096). References are decoded with `channels`. */
int fixture_make(fixture *f, const char *dir, uint64_t n, uint32_t classes,
                 bool ragged, uint32_t align, uint32_t channels);
/* The shard size of the datasets fixture_make and fixture_build_dataset
 * write (default 4096: a shard a sample or a few). */
extern uint64_t fixture_shard_size;
void fixture_free(fixture *f);

/* Builds the PNG folder dir (ImageFolder) into the dataset ds (made if
 * missing) with `codec`: png records hold the files as they are, the
 * others each file's default decode (native channels and depth) encoded
 * with codec; extents aligned to `align` (1 or 4096). Returns 0 or -1. */
int fixture_build_dataset(const char *dir, const char *ds, int codec,
                          uint32_t align);

/* Checks every sample of b against the references; returns the number of
 * mismatches (each printed). */
int fixture_check_batch(const fixture *f, const gf_batch *b);

/* A 64-bit hash of a batch's content (indices, labels, shapes, bytes). */
uint64_t batch_hash(const gf_batch *b);

#endif
