/* main() for a fuzz target built without libFuzzer: feeds the target every
 * file named on the command line and every file in the folders named
 * (sorted by name, hidden files such as .gitkeep left out), once each.
 * Exits 0 when every input ran; a broken promise aborts inside the
 * target, and a crash ends the process, so ctest sees the failure.
 *
 *   fuzz_png tests/fuzz/corpus/fuzz_png tests/fuzz/regressions/fuzz_png */
#include "fuzz.h"

#include <dirent.h>

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = fuzz_alloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      cap *= 2;
      uint8_t *nb = realloc(buf, cap);
      if (!nb)
        abort();
      buf = nb;
    }
  }
  bool err = ferror(f) != 0;
  fclose(f);
  if (err) {
    fprintf(stderr, "replay: error reading %s\n", path);
    free(buf);
    return -1;
  }
  /* An exact-size copy, so ASan sees a read past the input's end. */
  uint8_t *in = fuzz_alloc(len);
  memcpy(in, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(in, len);
  free(in);
  return 0;
}

static int visible(const struct dirent *d) { return d->d_name[0] != '.'; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  unsigned long files = 0;
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      bad++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]) < 0;
      files++;
      continue;
    }
    struct dirent **list;
    int n = scandir(argv[i], &list, visible, alphasort);
    if (n < 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      bad++;
      continue;
    }
    for (int k = 0; k < n; k++) {
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
      struct stat fs;
      if (stat(path, &fs) == 0 && S_ISREG(fs.st_mode)) {
        bad += run_file(path) < 0;
        files++;
      }
      free(list[k]);
    }
    free(list);
  }
  printf("replayed %lu input(s)%s\n", files, bad ? ", with errors" : "");
  return bad ? 1 : 0;
}
