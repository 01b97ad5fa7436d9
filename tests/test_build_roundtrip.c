/* `gpufeed build` round trip through the CLI ($GPUFEED): a synthetic
 * ImageFolder tree (plus gray, RGBA, gray+alpha and 16-bit images) built
 * with every codec, packed and 4096-aligned, into several small shards, by
 * 1 and 2 threads (the outputs must be byte-identical); every sample read
 * back and decoded must equal what gf_png_decode gives for its source file.
 * loco with converted channels, and its refusal of a 16-bit image kept
 * 16-bit. Then crops of the shared photos (synth --from) and a labels-file
 * build. */
#include "testutil.h"

#include "decode/decode.h"
#include "format/format.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *cli;
static const char *tmp;

/* Runs "$GPUFEED <args>" through the shell; returns its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
  char args[4096], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s", cli, args);
  int st = system(cmd);
  int rc = st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
  if (rc != 0)
    fprintf(stderr, "exit %d: %s\n", rc, cmd);
  return rc;
}

static char *path2(const char *a, const char *b) {
  static char bufs[4][4096];
  static int k;
  char *p = bufs[k++ % 4];
  int n = snprintf(p, 4096, "%s/%s", a, b);
  if (n < 0 || n >= 4096) {
    fprintf(stderr, "path too long: %s/%s\n", a, b);
    exit(1);
  }
  return p;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted regular-file names of dir; *n set. Caller frees each and the
 * array. */
static char **list_dir(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  *n = 0;
  if (!d)
    return NULL;
  char **v = NULL;
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      v = realloc(v, cap * sizeof *v);
    }
    v[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(v, *n, sizeof *v, cmp_names);
  return v;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Two dataset folders hold the same files with the same bytes. */
static bool same_dir(const char *dir_a, const char *dir_b) {
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s", dir_a);
  snprintf(b, sizeof b, "%s", dir_b);
  size_t na, nb;
  char **la = list_dir(a, &na), **lb = list_dir(b, &nb);
  bool same = la && lb && na == nb && na > 0;
  for (size_t i = 0; same && i < na; i++) {
    size_t sa, sb;
    void *da = gf_test_read_file(path2(a, la[i]), &sa);
    void *db = gf_test_read_file(path2(b, lb[i]), &sb);
    same = strcmp(la[i], lb[i]) == 0 && da && db && sa == sb &&
           memcmp(da, db, sa) == 0;
    if (!same)
      fprintf(stderr, "%s/%s and %s/%s differ\n", a, la[i], b, lb[i]);
    free(da);
    free(db);
  }
  free_list(la, na);
  free_list(lb, nb);
  return same;
}

/* Decodes a PNG file as the builder does; returns malloc'd pixels. */
static uint8_t *decode_file(const char *path, uint32_t channels, bool keep16,
                            gf_shape *shape, void **file, size_t *flen) {
  *file = gf_test_read_file(path, flen);
  if (!*file)
    return NULL;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = channels;
  o.keep_16bit = keep16;
  if (gf_png_shape(*file, *flen, &o, shape) != 0)
    return NULL;
  size_t n = (size_t)gf_shape_bytes(shape);
  uint8_t *px = malloc(n);
  if (px && gf_png_decode(*file, *flen, &o, px, n, shape) != 0) {
    free(px);
    px = NULL;
  }
  return px;
}

typedef struct expect {
  const char *src; /* build root */
  int codec;
  uint32_t align;
  uint32_t channels;
  bool keep16;
  uint64_t count;
  uint32_t classes;         /* 0: labels file */
  const int64_t *labels;    /* labels file: expected labels in order */
  const char *const *names; /* labels file: expected sources in order */
  bool multi_shard;
} expect;

/* Opens a built dataset and checks every sample against its source. */
static void check_dataset(const char *dir, const expect *e) {
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (!ds)
    return;
  CHECK(gf_dataset_count(ds) == e->count);
  CHECK(gf_dataset_num_classes(ds) == e->classes);
  CHECK(gf_dataset_alignment(ds) == (e->align ? e->align : 1));
  if (e->multi_shard)
    CHECK(gf_dataset_num_shards(ds) > 1);
  CHECK_OK(gf_dataset_check_index(ds));
  for (uint32_t c = 0; c < e->classes; c++) {
    char want[32];
    snprintf(want, sizeof want, "class_%03u", c);
    const char *name = gf_dataset_class_name(ds, c);
    CHECK(name && strcmp(name, want) == 0);
  }
  char prev[4096] = "";
  for (uint64_t i = 0; i < gf_dataset_count(ds); i++) {
    gf_sample_info s;
    CHECK_OK(gf_dataset_sample_info(ds, i, &s));
    char src[4096];
    snprintf(src, sizeof src, "%.*s", (int)s.source_len, s.source);
    CHECK((int)s.codec == e->codec);
    CHECK(s.offset % (e->align ? e->align : 1) == 0);
    if (e->classes) {
      /* ImageFolder: sources sorted by relative path, label = index of the
       * class folder among the sorted class names. */
      CHECK(strcmp(prev, src) < 0);
      snprintf(prev, sizeof prev, "%s", src);
      unsigned cls = 9999;
      CHECK(sscanf(src, "class_%03u/", &cls) == 1);
      CHECK(s.label == (int64_t)cls);
    } else {
      CHECK(strcmp(src, e->names[i]) == 0);
      CHECK(s.label == e->labels[i]);
    }
    void *file = NULL;
    size_t flen = 0;
    gf_shape want;
    uint8_t *px = decode_file(path2(e->src, src), e->channels, e->keep16, &want,
                              &file, &flen);
    CHECK(px != NULL);
    CHECK(memcmp(&want, &s.shape, sizeof want) == 0);
    uint8_t *stored = malloc(s.length);
    int64_t got = gf_dataset_read(ds, i, stored, s.length);
    CHECK(got == (int64_t)s.length);
    if (e->codec == GF_CODEC_PNG)
      CHECK(got == (int64_t)flen && memcmp(stored, file, flen) == 0);
    gf_decode_opts o = GF_DECODE_OPTS_INIT;
    o.keep_16bit = s.shape.dtype == GF_DTYPE_U16;
    size_t n = (size_t)gf_shape_bytes(&s.shape);
    uint8_t *dec = malloc(n ? n : 1);
    gf_shape out;
    CHECK_OK(gf_decode((int)s.codec, stored, got > 0 ? (size_t)got : 0,
                       &s.shape, &o, dec, n, &out));
    CHECK(memcmp(&out, &s.shape, sizeof out) == 0);
    if (px && memcmp(dec, px, n) != 0) {
      fprintf(stderr, "%s: sample %llu (%s) decodes to other pixels\n", dir,
              (unsigned long long)i, src);
      gf_test_failures++;
    }
    free(dec);
    free(stored);
    free(px);
    free(file);
  }
  gf_dataset_close(ds);
}

static void write_png(const char *path, uint32_t h, uint32_t w, uint32_t c,
                      bool u16, uint64_t seed) {
  gf_shape s = {h, w, c, u16 ? GF_DTYPE_U16 : GF_DTYPE_U8};
  size_t n = (size_t)h * w * c;
  uint8_t *px = malloc(n * (u16 ? 2 : 1));
  gf_test_fill_image(px, h, w, c, seed);
  if (u16) {
    /* Spread 8-bit values over 16 bits with a varying low byte. */
    for (size_t i = n; i-- > 0;) {
      uint16_t v = (uint16_t)(px[i] * 257u + (i % 97));
      memcpy(px + 2 * i, &v, 2);
    }
  }
  void *png = NULL;
  size_t len = 0;
  CHECK_OK(gf_png_encode(px, &s, 6, &png, &len));
  CHECK_OK(gf_test_write_file(path, png, len));
  free(png);
  free(px);
}

/* Every crop made by synth --from must occur somewhere in its photo. */
static void check_crops(const char *crops, const char *photos, uint32_t h,
                        uint32_t w, unsigned count) {
  size_t np;
  char **pl = list_dir(photos, &np);
  CHECK(np > 0);
  for (unsigned i = 0; i < count && np; i++) {
    unsigned p = i % (unsigned)np;
    char rel[64];
    snprintf(rel, sizeof rel, "class_%03u/img_%06u.png", p, i);
    void *f1 = NULL, *f2 = NULL;
    size_t l1, l2;
    gf_shape cs, ps;
    uint8_t *c = decode_file(path2(crops, rel), 3, false, &cs, &f1, &l1);
    uint8_t *ph = decode_file(path2(photos, pl[p]), 3, false, &ps, &f2, &l2);
    CHECK(c && ph && cs.height == h && cs.width == w);
    bool found = false;
    for (uint32_t y = 0; c && ph && !found && y + h <= ps.height; y++)
      for (uint32_t x = 0; !found && x + w <= ps.width; x++) {
        bool eq = true;
        for (uint32_t r = 0; eq && r < h; r++)
          eq = memcmp(c + (size_t)r * w * 3,
                      ph + ((size_t)(y + r) * ps.width + x) * 3,
                      (size_t)w * 3) == 0;
        found = eq;
      }
    if (!found) {
      fprintf(stderr, "%s/%s is not a crop of %s\n", crops, rel, pl[p]);
      gf_test_failures++;
    }
    free(c);
    free(ph);
    free(f1);
    free(f2);
  }
  free_list(pl, np);
}

int main(void) {
  cli = getenv("GPUFEED");
  if (!cli || !cli[0]) {
    fprintf(stderr, "GPUFEED (the CLI binary) is not set\n");
    return 1;
  }
  tmp = gf_test_tmpdir();
  char src[4096], src2[4096], out[4096], out2[4096];
  snprintf(src, sizeof src, "%s/src", tmp);
  snprintf(src2, sizeof src2, "%s/src2", tmp);

  /* synth: deterministic whatever the thread count, i mod K classes. */
  CHECK(run("synth '%s' --count 40 --classes 3 --size 37x53 --seed 7 "
            "--threads 2 --quiet",
            src) == 0);
  CHECK(run("synth '%s' --count 40 --classes 3 --size 37x53 --seed 7 "
            "--threads 1 --quiet",
            src2) == 0);
  for (unsigned c = 0; c < 3; c++) {
    char cls[32];
    snprintf(cls, sizeof cls, "class_%03u", c);
    CHECK(same_dir(path2(src, cls), path2(src2, cls)));
    size_t n;
    char **l = list_dir(path2(src, cls), &n);
    CHECK(n == (c == 0 ? 14u : 13u));
    free_list(l, n);
  }
  /* Fewer images than classes: only the classes that get images exist. */
  char few[4096];
  snprintf(few, sizeof few, "%s/few", tmp);
  CHECK(run("synth '%s' --count 2 --classes 5 --quiet", few) == 0);
  size_t nfew;
  char **lfew = list_dir(few, &nfew);
  CHECK(nfew == 2 && strcmp(lfew[0], "class_000") == 0 &&
        strcmp(lfew[1], "class_001") == 0);
  free_list(lfew, nfew);

  /* Images of other kinds next to the synthetic RGB ones. */
  write_png(path2(src, "class_000/extra_16bit.png"), 11, 13, 3, true, 1);
  write_png(path2(src, "class_001/extra_gray.png"), 20, 31, 1, false, 2);
  write_png(path2(src, "class_002/extra_rgba.png"), 17, 9, 4, false, 3);
  write_png(path2(src, "class_002/extra_ga.png"), 5, 7, 2, false, 4);
  const uint64_t total = 44;

  static const char *const codecs[] = {"png", "raw", "zstd", "gradzstd",
                                       "loco"};
  static const int codec_ids[] = {GF_CODEC_PNG, GF_CODEC_RAW, GF_CODEC_ZSTD,
                                  GF_CODEC_GRADZSTD, GF_CODEC_LOCO};
  for (int c = 0; c < 5; c++) {
    for (int a = 0; a < 2; a++) {
      uint32_t align = a ? 4096 : 1;
      snprintf(out, sizeof out, "%s/ds-%s-%u-t1", tmp, codecs[c], align);
      snprintf(out2, sizeof out2, "%s/ds-%s-%u-t2", tmp, codecs[c], align);
      CHECK(run("build '%s' '%s' --codec %s --align %u --shard-size 16K "
                "--threads 1 --quiet",
                src, out, codecs[c], align) == 0);
      CHECK(run("build '%s' '%s' --codec %s --align %u --shard-size 16K "
                "--threads 2 --quiet",
                src, out2, codecs[c], align) == 0);
      CHECK(same_dir(out, out2));
      expect e = {src, codec_ids[c], align, 0,   false, total,
                  3,   NULL,         NULL,  true};
      check_dataset(out, &e);
    }
  }

  /* Converted channels and 16-bit kept. */
  snprintf(out, sizeof out, "%s/ds-rgb16", tmp);
  CHECK(run("build '%s' '%s' --channels 3 --keep-16bit --level 3 --quiet", src,
            out) == 0);
  expect e3 = {src, GF_CODEC_GRADZSTD, 1, 3, true, total, 3, NULL, NULL, false};
  check_dataset(out, &e3);

  /* loco: bands of 1 row, channels converted; a 16-bit image kept 16-bit
   * is refused, the file named (loco codes 8-bit samples). */
  snprintf(out, sizeof out, "%s/ds-loco-rgba", tmp);
  CHECK(run("build '%s' '%s' --codec loco --level 1 --channels 4 --quiet",
            src, out) == 0);
  expect e4 = {src, GF_CODEC_LOCO, 1, 4, false, total, 3, NULL, NULL, false};
  check_dataset(out, &e4);
  snprintf(out, sizeof out, "%s/ds-loco-16", tmp);
  char err[4096];
  snprintf(err, sizeof err, "%s/loco-16.err", tmp);
  CHECK(run("build '%s' '%s' --codec loco --keep-16bit --quiet 2>'%s'", src,
            out, err) == 1);
  char msg[4096] = "";
  FILE *ef = fopen(err, "r");
  if (ef) {
    msg[fread(msg, 1, sizeof msg - 1, ef)] = '\0';
    fclose(ef);
  }
  CHECK(strstr(msg, "class_000/extra_16bit.png: a 16-bit image") &&
        strstr(msg, "loco codes 8-bit samples"));
  struct stat none;
  CHECK(stat(out, &none) != 0);

  /* A flat folder with a labels file: file order and labels kept. */
  char flat[4096], labels[4096];
  snprintf(flat, sizeof flat, "%s/flat", tmp);
  snprintf(labels, sizeof labels, "%s/labels.txt", tmp);
  mkdir(flat, 0755);
  mkdir(path2(flat, "sub"), 0755);
  static const char *const names[] = {"zeta.png", "alpha.png", "sub/gamma.png",
                                      "beta.png"};
  static const int64_t lab[] = {7, -2, 7, 123456789012};
  for (int i = 0; i < 4; i++)
    write_png(path2(flat, names[i]), 9 + (uint32_t)i, 14, 3, false,
              100 + (uint64_t)i);
  FILE *lf = fopen(labels, "w");
  CHECK(lf != NULL);
  if (lf) {
    fprintf(lf, "# path label\n\n");
    for (int i = 0; i < 4; i++)
      fprintf(lf, "%s %lld\n", names[i], (long long)lab[i]);
    fclose(lf);
  }
  snprintf(out, sizeof out, "%s/ds-labels", tmp);
  CHECK(run("build '%s' '%s' --labels '%s' --codec zstd --quiet", flat, out,
            labels) == 0);
  expect el = {flat, GF_CODEC_ZSTD, 1, 0, false, 4, 0, lab, names, false};
  check_dataset(out, &el);

  /* Crops of the real photos. */
  const char *data = gf_test_data_dir();
  char photos[4096];
  snprintf(photos, sizeof photos, "%s/photos", data ? data : "");
  struct stat st;
  if (!data || stat(photos, &st) != 0) {
    fprintf(stderr, "note: no photos in the test data; skipping the "
                    "synth --from part\n");
  } else {
    char crops[4096];
    snprintf(crops, sizeof crops, "%s/crops", tmp);
    CHECK(run("synth '%s' --from '%s' --count 12 --size 48x40 --quiet", crops,
              photos) == 0);
    check_crops(crops, photos, 48, 40, 12);
    snprintf(out, sizeof out, "%s/ds-crops", tmp);
    CHECK(run("build '%s' '%s' --threads 2 --quiet", crops, out) == 0);
    size_t np;
    char **pl = list_dir(photos, &np);
    free_list(pl, np);
    expect ec = {crops, GF_CODEC_GRADZSTD, 1,    0,    false,
                 12,    (uint32_t)np,      NULL, NULL, false};
    check_dataset(out, &ec);
  }
  return gf_test_finish();
}
