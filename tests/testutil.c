#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gf_test_failures = 0;

int gf_test_finish(void) {
  if (gf_test_failures) {
    fprintf(stderr, "FAILED: %d check(s)\n", gf_test_failures);
    return 1;
  }
  return 0;
}

void gf_test_skip(bool gpu, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "SKIP: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  const char *req = getenv("GPUFEED_REQUIRE_GPU");
  if (gpu && req && strcmp(req, "1") == 0) {
    fprintf(stderr, "GPUFEED_REQUIRE_GPU=1: a GPU test may not skip\n");
    exit(1);
  }
  exit(77);
}

static int rm_rf(const char *path) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  return system(cmd);
}

const char *gf_test_tmpdir(void) {
  static char dir[4096];
  if (dir[0])
    return dir;
  const char *env = getenv("GPUFEED_TEST_TMP");
  if (env && env[0]) {
    snprintf(dir, sizeof dir, "%s", env);
    rm_rf(dir);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) {
      fprintf(stderr, "cannot create %s\n", dir);
      exit(1);
    }
  } else {
    snprintf(dir, sizeof dir, "/tmp/gftest.XXXXXX");
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      exit(1);
    }
  }
  return dir;
}

const char *gf_test_data_dir(void) {
  const char *env = getenv("GPUFEED_TEST_DATA");
  struct stat st;
  if (env && stat(env, &st) == 0 && S_ISDIR(st.st_mode))
    return env;
  return NULL;
}

uint64_t gf_test_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void *gf_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return NULL;
  }
  long n = ftell(f);
  rewind(f);
  void *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf && len)
    *len = (size_t)n;
  return buf;
}

int gf_test_write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -errno;
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      int e = errno;
      close(fd);
      return -e;
    }
    p += w;
    len -= (size_t)w;
  }
  return close(fd) == 0 ? 0 : -errno;
}

void gf_test_fill_image(uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
                        uint64_t seed) {
  uint64_t s = seed;
  double fx = 1.0 + (double)(gf_test_rand(&s) % 7);
  double fy = 1.0 + (double)(gf_test_rand(&s) % 5);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      for (uint32_t k = 0; k < c; k++) {
        double v = 128.0 + 60.0 * ((double)((x * (k + 1) * (uint32_t)fx) % 256) / 256.0 - 0.5) +
                   50.0 * ((double)((y * (uint32_t)fy + x / 3) % 256) / 256.0 - 0.5);
        int n = (int)(gf_test_rand(&s) % 9) - 4;
        int iv = (int)v + n;
        px[((size_t)y * w + x) * c + k] = (uint8_t)(iv < 0 ? 0 : iv > 255 ? 255 : iv);
      }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int gf_test_list_png(const char *sub, char *dir, size_t dir_cap, char **names,
                     int max) {
  const char *data = gf_test_data_dir();
  if (!data)
    gf_test_skip(false, "no test data folder (GPUFEED_TEST_DATA)");
  snprintf(dir, dir_cap, "%s/%s", data, sub);
  DIR *d = opendir(dir);
  if (!d)
    gf_test_skip(false, "%s is missing", dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".png") == 0)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  return n;
}
