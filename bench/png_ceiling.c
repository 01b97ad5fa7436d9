/* The plain libpng decode ceiling: every PNG of a folder is loaded into
 * memory first, then T threads decode them with libpng's own simplified
 * API (png_image_*: no gpufeed code on the path) for a few passes. No I/O,
 * no batching, no copies: what T cores can decode, the number the loader's
 * PNG-folder path is measured against.
 *
 *   png_ceiling DIR [--threads T] [--seconds S] [--channels 1|3|4] [--json]
 */
#include <png.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct file {
  unsigned char *data;
  size_t len;
} file;

static file *files;
static size_t nfiles, cap_files;
static int channels = 3;
static double seconds = 5;
static atomic_size_t next_file;
static atomic_int stop_flag;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int has_png_ext(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

static void load_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "png_ceiling: %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      load_tree(path);
    } else if (has_png_ext(e->d_name)) {
      if (nfiles == cap_files) {
        cap_files = cap_files ? cap_files * 2 : 1024;
        files = realloc(files, cap_files * sizeof *files);
        if (!files)
          exit(1);
      }
      FILE *f = fopen(path, "rb");
      if (!f)
        continue;
      file *x = &files[nfiles];
      x->len = (size_t)st.st_size;
      x->data = malloc(x->len);
      if (!x->data || fread(x->data, 1, x->len, f) != x->len) {
        fclose(f);
        free(x->data);
        continue;
      }
      fclose(f);
      nfiles++;
    }
  }
  closedir(d);
}

typedef struct result {
  unsigned long long images, bytes, failed;
} result;

static void *run(void *arg) {
  result *r = arg;
  unsigned char *out = NULL;
  size_t out_cap = 0;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    size_t i = atomic_fetch_add(&next_file, 1) % nfiles;
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, files[i].data, files[i].len)) {
      r->failed++;
      continue;
    }
    img.format = channels == 1 ? PNG_FORMAT_GRAY
                 : channels == 4 ? PNG_FORMAT_RGBA
                                 : PNG_FORMAT_RGB;
    size_t need = PNG_IMAGE_SIZE(img);
    if (need > out_cap) {
      free(out);
      out = malloc(need);
      out_cap = need;
    }
    if (!png_image_finish_read(&img, NULL, out, 0, NULL)) {
      r->failed++;
      png_image_free(&img);
      continue;
    }
    r->images++;
    r->bytes += need;
  }
  free(out);
  return NULL;
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  long threads = sysconf(_SC_NPROCESSORS_ONLN);
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atol(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--channels") && i + 1 < argc)
      channels = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--help") || argv[i][0] == '-') {
      printf("usage: png_ceiling DIR [--threads T] [--seconds S] "
             "[--channels 1|3|4] [--json]\n");
      return strcmp(argv[i], "--help") ? 2 : 0;
    } else
      dir = argv[i];
  }
  if (!dir || threads < 1) {
    fprintf(stderr, "usage: png_ceiling DIR [--threads T] [--seconds S]\n");
    return 2;
  }
  load_tree(dir);
  if (!nfiles) {
    fprintf(stderr, "png_ceiling: no .png files under %s\n", dir);
    return 1;
  }
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  result *res = calloc((size_t)threads, sizeof *res);
  double t0 = now();
  for (long t = 0; t < threads; t++)
    pthread_create(&th[t], NULL, run, &res[t]);
  while (now() - t0 < seconds)
    usleep(10000);
  atomic_store(&stop_flag, 1);
  result sum = {0, 0, 0};
  for (long t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    sum.images += res[t].images;
    sum.bytes += res[t].bytes;
    sum.failed += res[t].failed;
  }
  double dt = now() - t0;
  if (json)
    printf("{\"probe\":\"libpng-ceiling\",\"threads\":%ld,\"files\":%zu,"
           "\"images_per_s\":%.1f,\"decoded_MB_per_s\":%.1f,\"failed\":%llu}\n",
           threads, nfiles, (double)sum.images / dt, (double)sum.bytes / dt / 1e6,
           sum.failed);
  else
    printf("libpng ceiling: %zu files, %ld threads, %.1f s: %.0f images/s, "
           "%.1f MB/s decoded%s\n",
           nfiles, threads, dt, (double)sum.images / dt,
           (double)sum.bytes / dt / 1e6, sum.failed ? " (some failed)" : "");
  return sum.failed ? 1 : 0;
}
