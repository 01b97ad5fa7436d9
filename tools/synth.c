/* gpufeed synth: writes an ImageFolder tree of PNG or JPEG images for
 * tests and benchmarks, either generated (smooth fields plus noise, so PNG
 * and zstd compress them about as well as photos) or cropped from real
 * photos (PNG or JPEG). Each image depends only on (seed, index), so any
 * thread count gives the same files. */
#include "cli.h"

#include "common/common.h"
#include "decode/decode.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define CMD "synth"
/* Bounds on what --from loads: every photo stays decoded in memory. */
#define MAX_PHOTOS 100000u
#define MAX_PHOTO_BYTES (4ull << 30)
#define FIELD_TERMS 3

typedef struct photo {
  char *name;
  uint8_t *px; /* RGB, height x width x 3 */
  uint32_t height;
  uint32_t width;
} photo;

typedef struct synth_job {
  const gfc_synth_opts *o;
  uint32_t classes;
  photo *photos;
  uint32_t nphotos;
  atomic_uint_fast64_t next;
  atomic_uint_fast64_t done;
  atomic_uint_fast64_t bytes;
  atomic_bool stop;
  pthread_mutex_t lock;
  int err; /* first failure, under lock */
  char errmsg[1200];
} synth_job;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#define PI 3.14159265358979323846

/* sin() by range reduction and a Taylor polynomial (error < 1e-6): our own,
 * so that synth writes the same images with any libm (and needs none). */
static double sin_poly(double x) {
  double turns = x / (2.0 * PI);
  int64_t k = (int64_t)(turns + (turns >= 0 ? 0.5 : -0.5));
  x -= (double)k * 2.0 * PI; /* [-pi, pi] */
  if (x > PI / 2)
    x = PI - x;
  else if (x < -PI / 2)
    x = -PI - x;
  double x2 = x * x;
  return x *
         (1.0 -
          x2 / 6.0 *
              (1.0 -
               x2 / 20.0 *
                   (1.0 - x2 / 42.0 * (1.0 - x2 / 72.0 * (1.0 - x2 / 110.0)))));
}

static int round_int(double v) {
  return v >= 0 ? (int)(v + 0.5) : -(int)(-v + 0.5);
}

/* Uniform double in [0, 1). */
static double unit(uint64_t *s) {
  return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* A photo-like RGB image: per channel, a base level, a linear gradient and
 * a few separable low-frequency sinusoid products (shared in part between
 * channels, as colour channels of photos are correlated), plus small
 * noise. Per-row and per-column tables keep it cheap. */
static int generate(uint8_t *px, uint32_t h, uint32_t w, uint64_t seed) {
  uint64_t s = seed;
  size_t tab = (size_t)FIELD_TERMS * ((size_t)h + w);
  double *t = malloc(tab * sizeof *t);
  if (!t)
    return -ENOMEM;
  double *tx = t, *ty = t + (size_t)FIELD_TERMS * w;
  double amp[FIELD_TERMS], mix[3][FIELD_TERMS], base[3], gx[3], gy[3];
  for (int k = 0; k < FIELD_TERMS; k++) {
    /* Wavelengths from a fraction of the image to several images. */
    double fy = (0.2 + 3.0 * unit(&s)) * 2.0 * PI / h;
    double fx = (0.2 + 3.0 * unit(&s)) * 2.0 * PI / w;
    double py = 2.0 * PI * unit(&s), pxh = 2.0 * PI * unit(&s);
    amp[k] = 15.0 + 35.0 * unit(&s);
    for (uint32_t y = 0; y < h; y++)
      ty[(size_t)k * h + y] = sin_poly(fy * y + py);
    for (uint32_t x = 0; x < w; x++)
      tx[(size_t)k * w + x] = sin_poly(fx * x + pxh + PI / 2);
  }
  for (int c = 0; c < 3; c++) {
    base[c] = 70.0 + 110.0 * unit(&s);
    gx[c] = (unit(&s) - 0.5) * 60.0 / w;
    gy[c] = (unit(&s) - 0.5) * 60.0 / h;
    for (int k = 0; k < FIELD_TERMS; k++)
      mix[c][k] = 0.6 + 0.4 * unit(&s);
  }
  uint64_t ns = splitmix(&s);
  for (uint32_t y = 0; y < h; y++) {
    for (uint32_t x = 0; x < w; x++) {
      double f[FIELD_TERMS];
      for (int k = 0; k < FIELD_TERMS; k++)
        f[k] = amp[k] * ty[(size_t)k * h + y] * tx[(size_t)k * w + x];
      for (int c = 0; c < 3; c++) {
        double v = base[c] + gx[c] * x + gy[c] * y;
        for (int k = 0; k < FIELD_TERMS; k++)
          v += mix[c][k] * f[k];
        /* xorshift noise in [-3, 3]: sensor-like grain. */
        ns ^= ns << 13;
        ns ^= ns >> 7;
        ns ^= ns << 17;
        int iv = round_int(v) + (int)(ns % 7) - 3;
        px[((size_t)y * w + x) * 3 + (size_t)c] = (uint8_t)(iv < 0     ? 0
                                                            : iv > 255 ? 255
                                                                       : iv);
      }
    }
  }
  free(t);
  return 0;
}

static void crop(const photo *p, uint8_t *px, uint32_t h, uint32_t w,
                 uint64_t seed) {
  uint64_t s = seed;
  uint32_t y0 = (uint32_t)(splitmix(&s) % ((uint64_t)p->height - h + 1));
  uint32_t x0 = (uint32_t)(splitmix(&s) % ((uint64_t)p->width - w + 1));
  for (uint32_t y = 0; y < h; y++)
    memcpy(px + (size_t)y * w * 3,
           p->px + (((size_t)(y0 + y) * p->width) + x0) * 3, (size_t)w * 3);
}

static void record_error(synth_job *j, int rc) {
  pthread_mutex_lock(&j->lock);
  if (!j->err) {
    j->err = rc;
    const gf_error_info *e = gf_last_error();
    snprintf(j->errmsg, sizeof j->errmsg, "%s",
             e->code == rc && e->message[0] ? e->message : gf_strerror(rc));
  }
  pthread_mutex_unlock(&j->lock);
  atomic_store(&j->stop, true);
}

/* The photo image i is cropped from: photo i mod n, or with --sizes the
 * first one from there on that holds an h x w crop (load_photos made sure
 * one holds the largest). */
static uint32_t pick_photo(const photo *ph, uint32_t n, uint64_t i,
                           uint32_t h, uint32_t w) {
  uint32_t p = (uint32_t)(i % n);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t q = (p + k) % n;
    if (ph[q].height >= h && ph[q].width >= w)
      return q;
  }
  return p;
}

static void *synth_worker(void *arg) {
  synth_job *j = arg;
  const gfc_synth_opts *o = j->o;
  gf_shape shape = {o->height, o->width, 3, GF_DTYPE_U8};
  uint8_t *px = malloc(gf_shape_bytes(&shape));
  if (!px) {
    record_error(j, gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                            "cannot allocate an image buffer"));
    return NULL;
  }
  char dir[32], name[40];
  while (!atomic_load(&j->stop)) {
    uint64_t i = atomic_fetch_add(&j->next, 1);
    if (i >= o->count)
      break;
    gf_error_clear(); /* record_error() reads what this image leaves */
    uint64_t s = o->seed ^ (i * 0xD1B54A32D192ED03ull);
    uint64_t seed = splitmix(&s);
    uint32_t cls;
    int rc = 0;
    if (o->size_lo) {
      /* --sizes: the sides from a stream of their own, so the pixels'
       * stream is the fixed-size one's. */
      uint64_t z = o->seed ^ (i * 0x9E6C63D0676A9A99ull) ^ 0x5A17E5ull;
      uint64_t span = (uint64_t)o->size_hi - o->size_lo + 1;
      shape.height = o->size_lo + (uint32_t)(splitmix(&z) % span);
      shape.width = o->size_lo + (uint32_t)(splitmix(&z) % span);
    }
    if (j->nphotos) {
      uint32_t p = pick_photo(j->photos, j->nphotos, i, shape.height,
                              shape.width);
      crop(&j->photos[p], px, shape.height, shape.width, seed);
      cls = p % j->classes;
    } else {
      rc = generate(px, shape.height, shape.width, seed);
      cls = (uint32_t)(i % j->classes);
    }
    void *file = NULL;
    size_t len = 0;
    bool jpeg = o->format == GFC_SYNTH_JPEG;
    /* zlib level 3: on 256x256 photo crops it gives files as small as
     * libpng's default (6) at 2.5x its speed. */
    if (rc == 0)
      rc = jpeg ? gf_jpeg_encode(px, &shape, o->quality, &file, &len)
                : gf_png_encode(px, &shape, 3, &file, &len);
    if (rc == 0) {
      snprintf(dir, sizeof dir, "class_%03u", cls);
      snprintf(name, sizeof name, "img_%06llu.%s", (unsigned long long)i,
               jpeg ? "jpg" : "png");
      char *cdir = gfc_path_join(o->out, dir);
      rc = cdir ? gfc_write_file_atomic(cdir, name, file, len) : -ENOMEM;
      free(cdir);
    }
    free(file);
    if (rc != 0) {
      record_error(j, rc);
      break;
    }
    atomic_fetch_add(&j->bytes, len);
    atomic_fetch_add(&j->done, 1);
  }
  free(px);
  return NULL;
}

/* The codec of a photo file by its name: PNG, JPEG, or -1 (not a photo). */
static int photo_codec(const char *n) {
  size_t l = strlen(n);
  if (l > 4 && strcasecmp(n + l - 4, ".png") == 0)
    return GF_CODEC_PNG;
  if ((l > 4 && strcasecmp(n + l - 4, ".jpg") == 0) ||
      (l > 5 && strcasecmp(n + l - 5, ".jpeg") == 0))
    return GF_CODEC_JPEG;
  return -1;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_photos(photo *ph, uint32_t n) {
  for (uint32_t i = 0; ph && i < n; i++) {
    free(ph[i].name);
    free(ph[i].px);
  }
  free(ph);
}

/* Loads every *.png, *.jpg and *.jpeg of dir (sorted by name) as RGB
 * 8-bit. */
static int load_photos(const gfc_synth_opts *o, photo **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(o->from);
  if (!d)
    return gf_fail(-errno, o->from, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open the photo folder: %s", strerror(errno));
  char **names = NULL;
  uint32_t cnt = 0, cap = 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || photo_codec(de->d_name) < 0)
      continue;
    if (cnt == MAX_PHOTOS) {
      rc = gf_fail(GF_ELIMIT, o->from, GF_NO_INDEX, GF_NO_INDEX,
                   "more than %u photos", MAX_PHOTOS);
      break;
    }
    if (cnt == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        rc = -ENOMEM;
        break;
      }
      names = nn;
    }
    if (!(names[cnt] = strdup(de->d_name))) {
      rc = -ENOMEM;
      break;
    }
    cnt++;
  }
  closedir(d);
  if (rc == 0 && cnt == 0)
    rc = gf_fail(GF_EBADSOURCE, o->from, GF_NO_INDEX, GF_NO_INDEX,
                 "no .png, .jpg or .jpeg files in the photo folder");
  photo *ph = NULL;
  if (rc == 0 && !(ph = calloc(cnt, sizeof *ph)))
    rc = -ENOMEM;
  if (rc == 0)
    qsort(names, cnt, sizeof *names, cmp_str);
  uint64_t total = 0;
  gf_decode_opts dopts = GF_DECODE_OPTS_INIT;
  dopts.channels = 3;
  for (uint32_t i = 0; rc == 0 && i < cnt; i++) {
    ph[i].name = names[i];
    names[i] = NULL;
    char *path = gfc_path_join(o->from, ph[i].name);
    void *data = NULL;
    size_t len = 0;
    gf_shape sh;
    rc = path ? gfc_read_file(path, GF_LIMIT_DEFAULT_BYTES, &data, &len)
              : -ENOMEM;
    int codec = photo_codec(ph[i].name);
    if (rc == 0)
      rc = gf_decode_shape(codec, data, len, NULL, &dopts, &sh);
    uint64_t bytes = rc == 0 ? gf_shape_bytes(&sh) : 0;
    if (rc == 0 && (total += bytes) > MAX_PHOTO_BYTES)
      rc = gf_fail(GF_ELIMIT, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the photos take more than %llu bytes decoded",
                   (unsigned long long)MAX_PHOTO_BYTES);
    if (rc == 0 && !(ph[i].px = malloc(bytes)))
      rc = -ENOMEM;
    if (rc == 0)
      rc = gf_decode(codec, data, len, NULL, &dopts, ph[i].px, bytes, &sh);
    /* --sizes: a photo serves the crops it can hold (pick_photo), so
     * each must hold the smallest; fixed size: every crop. */
    uint32_t need_h = o->size_lo ? o->size_lo : o->height;
    uint32_t need_w = o->size_lo ? o->size_lo : o->width;
    if (rc == 0 && (sh.height < need_h || sh.width < need_w))
      rc = gf_fail(GF_ESHAPE, path, GF_NO_INDEX, GF_NO_INDEX,
                   "photo is %ux%u, smaller than the %ux%u crops", sh.height,
                   sh.width, need_h, need_w);
    if (rc != 0)
      rc = gf_fail_context(rc, path, GF_NO_INDEX, NULL);
    ph[i].height = sh.height;
    ph[i].width = sh.width;
    free(data);
    free(path);
  }
  for (uint32_t i = 0; i < cnt; i++)
    free(names[i]);
  free(names);
  /* --sizes: at least one photo must hold the largest crop. */
  bool largest = !o->size_lo;
  for (uint32_t i = 0; rc == 0 && !largest && i < cnt; i++)
    largest = ph[i].height >= o->height && ph[i].width >= o->width;
  if (rc == 0 && !largest)
    rc = gf_fail(GF_ESHAPE, o->from, GF_NO_INDEX, GF_NO_INDEX,
                 "no photo is at least %ux%u, the largest --sizes crop",
                 o->height, o->width);
  if (rc != 0) {
    free_photos(ph, cnt);
    return rc;
  }
  *out = ph;
  *n = cnt;
  return 0;
}

static int make_dir(const char *path) {
  if (mkdir(path, 0755) == 0 || errno == EEXIST)
    return 0;
  return gf_fail(-errno, path, GF_NO_INDEX, GF_NO_INDEX,
                 "cannot create the folder: %s", strerror(errno));
}

/* mkdir -p: OUT may name folders that do not exist yet. */
static int make_dirs(const char *path) {
  char *p = strdup(path);
  if (!p)
    return -ENOMEM;
  int rc = 0;
  for (char *s = p + 1; rc == 0 && *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    rc = make_dir(p);
    *s = '/';
  }
  if (rc == 0)
    rc = make_dir(p);
  free(p);
  return rc;
}

int gfc_synth(const gfc_synth_opts *o) {
  int status = GFC_EXIT_FAIL;
  synth_job j = {.o = o};
  pthread_mutex_init(&j.lock, NULL);
  pthread_t *tids = NULL;
  unsigned started = 0;
  int rc;

  int st = gfc_path_state(o->out);
  if (st < 0) {
    gfc_error(CMD, "%s: %s", o->out, strerror(-st));
    goto out;
  }
  if (st == 3) {
    gfc_error(CMD, "%s exists and is not a folder", o->out);
    goto out;
  }
  if (st == 2 && !o->force) {
    gfc_error(CMD, "%s is not empty; use --force to write into it", o->out);
    goto out;
  }
  if (o->from && (rc = load_photos(o, &j.photos, &j.nphotos)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  j.classes = o->classes ? o->classes : j.nphotos ? j.nphotos : 10;
  /* Image i goes to class (i mod P) mod K with photos, i mod K without: the
   * classes that receive images are 0 to min(count, P, K) - 1. Only those
   * get a folder: an empty class folder is no ImageFolder class. */
  uint64_t used = o->count;
  if (j.nphotos && used > j.nphotos)
    used = j.nphotos;
  if (used > j.classes)
    used = j.classes;
  if ((rc = make_dirs(o->out)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  for (uint32_t c = 0; c < used; c++) {
    char name[32];
    snprintf(name, sizeof name, "class_%03u", c);
    char *p = gfc_path_join(o->out, name);
    rc = p ? make_dir(p) : -ENOMEM;
    free(p);
    if (rc != 0) {
      gfc_error_last(CMD, rc);
      goto out;
    }
  }

  unsigned nt = o->threads ? o->threads : gfc_cores();
  if (nt > o->count)
    nt = (unsigned)o->count;
  tids = calloc(nt, sizeof *tids);
  if (!tids) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  double t0 = gfc_now();
  gfc_progress prog;
  gfc_progress_start(&prog, CMD, "img", o->count, o->quiet);
  for (; started < nt; started++) {
    int e = pthread_create(&tids[started], NULL, synth_worker, &j);
    if (e) {
      gfc_error(CMD, "cannot start a thread: %s", strerror(e));
      atomic_store(&j.stop, true);
      break;
    }
  }
  while (prog.enabled && started == nt && !atomic_load(&j.stop) &&
         atomic_load(&j.done) < o->count) {
    gfc_progress_update(&prog, atomic_load(&j.done));
    nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
  for (unsigned i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  gfc_progress_end(&prog);
  if (j.err) {
    gfc_error(CMD, "%s", j.errmsg);
    goto out;
  }
  if (started < nt)
    goto out;
  double el = gfc_now() - t0;
  if (!o->quiet) {
    char b[32], size[48];
    if (o->size_lo)
      snprintf(size, sizeof size, "varied-size (sides %u-%u)", o->size_lo,
               o->size_hi);
    else
      snprintf(size, sizeof size, "%ux%u", o->height, o->width);
    printf("synth: wrote %llu %s RGB images in %u classes to %s "
           "(%s of %s%s%s) in %.2f s, %.0f images/s, %u threads\n",
           (unsigned long long)o->count, size, (unsigned)used,
           o->out, gfc_fmt_bytes(atomic_load(&j.bytes), b, sizeof b),
           o->format == GFC_SYNTH_JPEG ? "JPEG" : "PNG",
           o->from ? ", crops of the photos in " : "", o->from ? o->from : "",
           el, el > 0 ? (double)o->count / el : 0.0, nt);
  }
  status = GFC_EXIT_OK;
out:
  free(tids);
  free_photos(j.photos, j.nphotos);
  pthread_mutex_destroy(&j.lock);
  return status;
}
