/* Fuzz target: the labels-file parser of gf_folder_scan (lib/format/
 * folder.c), which `gpufeed build --labels` and the loader's flat-folder
 * source use, over a small fixed folder.
 *
 * Input: the labels file, written as is. The folder (made once):
 *   root/a.png  root/b.PNG  root/with space.png  root/.hidden.png
 *   root/notes.txt  root/sub/c.png  root/sub/deeper/d.png
 *   root/link.png -> a.png          (a link that stays inside)
 *   root/out.png -> ../outside.png  (a link leading out: refused)
 *   root/loop.png -> loop.png       (a link to itself)
 *   root/dirlink -> sub             (a link to a folder)
 *   root/fifo.png                   (not a regular file)
 *   outside.png beside root
 *
 * On success every entry must name a regular file whose real path lies
 * inside the root's, with no class table, and at most one entry per line;
 * on failure the error must carry its context. */
#include "fuzz.h"

#include "format/format.h"

#include <limits.h>

static char root[4200], real_root[PATH_MAX], labels[4200];

static void make_folder(void) {
  const char *dir = fuzz_tmpdir();
  snprintf(root, sizeof root, "%s/root", dir);
  snprintf(labels, sizeof labels, "%s/labels.txt", dir);
  char p[4400];
  mkdir(root, 0755);
  snprintf(p, sizeof p, "%s/sub", root);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/sub/deeper", root);
  mkdir(p, 0755);
  static const char *files[] = {"a.png", "b.PNG", "with space.png",
                                ".hidden.png", "notes.txt", "sub/c.png",
                                "sub/deeper/d.png"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, files[i]);
    fuzz_write_file(p, "x", 1);
  }
  snprintf(p, sizeof p, "%s/outside.png", dir);
  fuzz_write_file(p, "x", 1);
  static const char *links[][2] = {{"a.png", "link.png"},
                                   {"../outside.png", "out.png"},
                                   {"loop.png", "loop.png"},
                                   {"sub", "dirlink"}};
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, links[i][1]);
    if (symlink(links[i][0], p) != 0) {
      perror(p);
      abort();
    }
  }
  snprintf(p, sizeof p, "%s/fifo.png", root);
  if (mkfifo(p, 0644) != 0) {
    perror(p);
    abort();
  }
  if (!realpath(root, real_root))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!root[0])
    make_folder();
  fuzz_write_file(labels, data, size);
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += data[i] == '\n';

  gf_folder *f = NULL;
  int rc = gf_folder_scan(root, labels, &f);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_folder_scan");
    return 0;
  }
  FUZZ_ASSERT(f != NULL);
  FUZZ_ASSERT(f->count >= 1 && f->count <= lines);
  FUZZ_ASSERT(f->class_count == 0 && f->classes == NULL);
  size_t rl = strlen(real_root);
  for (uint64_t i = 0; i < f->count; i++) {
    const char *rel = f->entries[i].path;
    FUZZ_ASSERT(rel && rel[0] && rel[0] != '/');
    FUZZ_ASSERT(strlen(rel) <= 8192);
    char *full;
    FUZZ_ASSERT(asprintf(&full, "%s/%s", root, rel) > 0);
    char real[PATH_MAX];
    FUZZ_ASSERT(realpath(full, real) != NULL);
    free(full);
    FUZZ_ASSERT(strncmp(real, real_root, rl) == 0 && real[rl] == '/');
    struct stat st;
    FUZZ_ASSERT(stat(real, &st) == 0 && S_ISREG(st.st_mode));
  }
  gf_folder_free(f);
  return 0;
}
