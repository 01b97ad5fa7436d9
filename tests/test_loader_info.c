/* The loader's dataset metadata (gf_loader_epoch_size, gf_loader_class_*,
 * gf_loader_sample_path) on a PNG folder (ImageFolder), a labels-file
 * folder, a dataset built from each, with world 1 and 4, both partitions
 * and drop_last on and off: the epoch size equals what an epoch then
 * delivers (counted), class names are the folders' names (the label as
 * decimal without a class table) and every delivered sample's path names
 * its file and class. */
#include "loader_fixture.h"

#include "format/format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 37
#define CLASSES 3

/* The label the labels file gives sample k of the listing. */
static int64_t file_label(uint64_t k) { return 100 + (int64_t)(k % 7); }

/* Writes dir/labels.txt listing the ImageFolder's files with file_label,
 * and builds dir/ds_labels from them with no class table. */
static int make_labels(const fixture *f, const char *dir, char *labels,
                       size_t lcap, char *ds, size_t dcap) {
  gf_folder *fo = NULL;
  if (gf_folder_scan(f->png_dir, NULL, &fo) < 0)
    return -1;
  snprintf(labels, lcap, "%s/labels.txt", dir);
  FILE *fp = fopen(labels, "w");
  if (!fp) {
    gf_folder_free(fo);
    return -1;
  }
  fprintf(fp, "# path label\n");
  for (uint64_t k = 0; k < fo->count; k++)
    fprintf(fp, "%s %lld\n", fo->entries[k].path,
            (long long)file_label(k));
  fclose(fp);
  snprintf(ds, dcap, "%s/ds_labels", dir);
  int rc = mkdir(ds, 0755) == 0 ? 0 : -1;
  gf_writer *w = NULL;
  if (rc == 0)
    rc = gf_writer_create(ds, NULL, &w);
  for (uint64_t k = 0; rc == 0 && k < fo->count; k++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", f->png_dir, fo->entries[k].path);
    size_t len = 0;
    void *png = gf_test_read_file(path, &len);
    gf_shape sh;
    if (!png || gf_decode_shape(GF_CODEC_PNG, png, len, NULL, NULL, &sh) < 0)
      rc = -1;
    else
      rc = gf_writer_add(w, png, len, GF_CODEC_PNG, &sh, file_label(k),
                         fo->entries[k].path);
    free(png);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  gf_folder_free(fo);
  return rc < 0 ? -1 : 0;
}

typedef struct source_case {
  const char *name;
  const char *source;
  const char *labels;
  bool classes;      /* named classes (ImageFolder) */
  bool labels_file;  /* labels are file_label() of the listing */
} source_case;

/* The expected epoch of one rank, from the sampler's rules (sampler.h
 * sections 4 and 5), written out independently. */
static void expected(uint64_t n, uint32_t world, uint32_t partition,
                     uint32_t drop_last, uint32_t bs, uint64_t *samples,
                     uint64_t *batches) {
  uint64_t total = partition == GF_PARTITION_DROP
                       ? n / world * world
                       : (n + world - 1) / world * world;
  uint64_t share = total / world;
  *batches = drop_last ? share / bs : (share + bs - 1) / bs;
  *samples = drop_last ? *batches * bs : share;
}

static void check_names(gf_loader *l, const source_case *sc) {
  char buf[256];
  if (sc->classes) {
    CHECK(gf_loader_class_count(l) == CLASSES);
    for (uint32_t c = 0; c < CLASSES; c++) {
      char want[32];
      snprintf(want, sizeof want, "class%02u", c);
      CHECK(gf_loader_class_name(l, c, buf, sizeof buf) == (int)strlen(want));
      CHECK(strcmp(buf, want) == 0);
    }
    CHECK_ERR(gf_loader_class_name(l, CLASSES, buf, sizeof buf), -ERANGE);
    /* Too small a buffer: an error naming the size, the cut name kept. */
    CHECK_ERR(gf_loader_class_name(l, 1, buf, 4), -ENOBUFS);
    CHECK(strcmp(buf, "cla") == 0);
    CHECK(strstr(gf_last_error()->message, "8 bytes") != NULL);
  } else {
    CHECK(gf_loader_class_count(l) == 0);
    CHECK(gf_loader_class_name(l, 103, buf, sizeof buf) == 3);
    CHECK(strcmp(buf, "103") == 0);
    CHECK(gf_loader_class_name(l, 4000000000u, buf, sizeof buf) == 10);
    CHECK(strcmp(buf, "4000000000") == 0);
  }
  CHECK_ERR(gf_loader_sample_path(l, N, buf, sizeof buf), -ERANGE);
  CHECK_ERR(gf_loader_sample_path(l, UINT64_MAX, buf, sizeof buf), -ERANGE);
  CHECK_ERR(gf_loader_sample_path(l, 0, buf, 5), -ENOBUFS);
  CHECK(strlen(buf) == 4);
  CHECK_ERR(gf_loader_sample_path(l, 0, NULL, 5), -EINVAL);
  CHECK_ERR(gf_loader_epoch_size(NULL, NULL, NULL), -EINVAL);
  CHECK(gf_loader_class_count(NULL) == 0);
}

/* One loader: the epoch size against a counted epoch (two epochs), and the
 * path and class of every delivered sample. */
static void run_case(const fixture *f, const source_case *sc, uint32_t world,
                     uint32_t rank, uint32_t partition, uint32_t drop_last) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = sc->source;
  cfg.labels_file = sc->labels;
  cfg.batch_size = 4;
  cfg.threads = 2;
  cfg.prefetch = 2;
  cfg.world = world;
  cfg.rank = rank;
  cfg.partition = partition;
  cfg.drop_last = drop_last;
  cfg.channels = 3;
  cfg.device = GF_DEVICE_CPU;
  gf_loader *l = NULL;
  int rc = gf_loader_create(&cfg, &l);
  CHECK_OK(rc);
  if (rc < 0)
    return;
  uint64_t samples = 0, batches = 0, ws, wb;
  CHECK_OK(gf_loader_epoch_size(l, &samples, &batches));
  expected(N, world, partition, drop_last, cfg.batch_size, &ws, &wb);
  if (samples != ws || batches != wb) {
    fprintf(stderr,
            "%s world %u rank %u partition %u drop_last %u: epoch_size says "
            "%llu samples %llu batches, wanted %llu %llu\n",
            sc->name, world, rank, partition, drop_last,
            (unsigned long long)samples, (unsigned long long)batches,
            (unsigned long long)ws, (unsigned long long)wb);
    gf_test_failures++;
  }
  uint64_t one = 0;
  CHECK_OK(gf_loader_epoch_size(l, &one, NULL));
  CHECK(one == samples);
  CHECK_OK(gf_loader_epoch_size(l, NULL, &one));
  CHECK(one == batches);
  if (world == 1 && partition == GF_PARTITION_PAD && !drop_last)
    check_names(l, sc);
  for (int epoch = 0; epoch < 2; epoch++) {
    uint64_t got_s = 0, got_b = 0;
    for (;;) {
      gf_batch *b = NULL;
      rc = gf_loader_next(l, &b);
      if (rc == GF_EEPOCHEND)
        break;
      CHECK_OK(rc);
      if (rc < 0)
        break;
      got_b++;
      got_s += b->count;
      for (uint32_t j = 0; j < b->count; j++) {
        uint64_t idx = b->indices[j];
        char path[512], cls[64];
        int n = gf_loader_sample_path(l, idx, path, sizeof path);
        CHECK(n > 0 && (size_t)n == strlen(path));
        /* The path names the sample's file: its pixels are the
         * fixture's reference for that file (listing order is index
         * order in all four sources). */
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", f->png_dir, path);
        FILE *fp = fopen(full, "rb");
        CHECK(fp != NULL);
        if (fp)
          fclose(fp);
        char want[32];
        snprintf(want, sizeof want, "class%02u/", (unsigned)f->ref_label[idx]);
        CHECK(strncmp(path, want, strlen(want)) == 0);
        if (sc->labels_file) {
          CHECK(b->labels[j] == file_label(idx));
        } else {
          CHECK(gf_loader_class_name(l, (uint32_t)b->labels[j], cls,
                                     sizeof cls) > 0);
          CHECK(strncmp(path, cls, strlen(cls)) == 0 &&
                path[strlen(cls)] == '/');
        }
      }
      CHECK_OK(gf_loader_release(l, b));
    }
    if (got_s != samples || got_b != batches) {
      fprintf(stderr,
              "%s world %u rank %u partition %u drop_last %u epoch %d: "
              "delivered %llu samples in %llu batches, epoch_size said %llu "
              "in %llu\n",
              sc->name, world, rank, partition, drop_last, epoch,
              (unsigned long long)got_s, (unsigned long long)got_b,
              (unsigned long long)samples, (unsigned long long)batches);
      gf_test_failures++;
    }
  }
  gf_loader_destroy(l);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, N, CLASSES, false, 1, 3));
  char labels[4096], ds_labels[4096];
  CHECK(make_labels(&f, dir, labels, sizeof labels, ds_labels,
                    sizeof ds_labels) == 0);
  if (gf_test_failures)
    return gf_test_finish();
  const source_case cases[] = {
      {"PNG folder", f.png_dir, NULL, true, false},
      {"built dataset", f.ds_dir, NULL, true, false},
      {"labels-file folder", f.png_dir, labels, false, true},
      {"dataset built from a labels file", ds_labels, NULL, false, true},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (uint32_t world = 1; world <= 4; world += 3)
      for (uint32_t part = 0; part < 2; part++)
        for (uint32_t drop = 0; drop < 2; drop++)
          for (uint32_t rank = 0; rank < world; rank += world > 1 ? 3 : 1)
            run_case(&f, &cases[c], world, rank, part, drop);
  fixture_free(&f);
  return gf_test_finish();
}
