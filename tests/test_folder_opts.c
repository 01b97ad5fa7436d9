/* gf_folder_scan_with and what gf_folder_scan now says about a source: a
 * dataset folder inside the root is no class (named in not_classes); a
 * flat folder without a labels file is refused saying it needs one; links
 * leading out are followed with follow_symlinks and left out (described in
 * skipped) with skip_bad; a labels file listing a file twice is refused
 * naming both lines; a labels "file" that is a folder gives -EISDIR. */
#include "format/format.h"
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[512];

static void path_of(const char *rel, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", g_tmp, rel);
}
static void mk(const char *rel) {
  char p[1200];
  path_of(rel, p, sizeof p);
  CHECK(mkdir(p, 0755) == 0);
}
static void touch(const char *rel) {
  char p[1200];
  path_of(rel, p, sizeof p);
  CHECK_OK(gf_test_write_file(p, "png?", 4));
}
static void link_to(const char *target_rel, const char *rel) {
  char t[1200], p[1200];
  path_of(target_rel, t, sizeof t);
  path_of(rel, p, sizeof p);
  CHECK(symlink(t, p) == 0);
}
static bool says(const char *s) {
  bool ok = strstr(gf_last_error()->message, s) != NULL;
  if (!ok)
    fprintf(stderr, "message lacks \"%s\": %s\n", s, gf_last_error()->message);
  return ok;
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s", gf_test_tmpdir());
  char root[1200], labels[1200];
  gf_folder *f = NULL;

  /* A dataset folder among the classes. */
  mk("a");
  mk("a/cat");
  mk("a/dog");
  mk("a/ds");
  touch("a/cat/1.png");
  touch("a/dog/2.png");
  touch("a/ds/index.gfi");
  touch("a/ds/3.png");
  path_of("a", root, sizeof root);
  CHECK_OK(gf_folder_scan(root, NULL, &f));
  if (f) {
    CHECK(f->class_count == 2 && f->count == 2);
    CHECK(f->not_class_count == 1 && !strcmp(f->not_classes[0], "ds"));
    CHECK(f->skipped_count == 0);
  }
  gf_folder_free(f);

  /* A flat folder without a labels file. */
  mk("flat");
  touch("flat/1.png");
  touch("flat/2.PNG");
  path_of("flat", root, sizeof root);
  f = (gf_folder *)1;
  CHECK_ERR(gf_folder_scan(root, NULL, &f), GF_EBADSOURCE);
  CHECK(f == NULL);
  CHECK(says("holds 2 image files (.png, .jpg, .jpeg) but no class folders"));
  CHECK(says("needs a labels file"));

  /* Links leading out of the root. */
  mk("out");
  touch("out/far.png");
  mk("l");
  mk("l/c");
  touch("l/c/near.png");
  link_to("out/far.png", "l/c/far.png");
  path_of("l", root, sizeof root);
  CHECK_ERR(gf_folder_scan(root, NULL, &f), GF_EBADSOURCE);
  CHECK(says("outside the source folder"));
  link_to("out/none.png", "l/c/broken.png");
  gf_folder_opts follow = {.follow_symlinks = true};
  CHECK_ERR(gf_folder_scan_with(root, NULL, &follow, &f), GF_EBADSOURCE);
  CHECK(says("broken symbolic link"));
  gf_folder_opts skip = {.skip_bad = true};
  f = NULL;
  CHECK_OK(gf_folder_scan_with(root, NULL, &skip, &f));
  if (f) {
    CHECK(f->count == 1 && !strcmp(f->entries[0].path, "c/near.png"));
    CHECK(f->skipped_count == 2);
    for (uint64_t i = 0; i < f->skipped_count; i++)
      CHECK(strstr(f->skipped[i], "far.png") ||
            strstr(f->skipped[i], "broken.png"));
  }
  gf_folder_free(f);
  gf_folder_opts both = {.follow_symlinks = true, .skip_bad = true};
  f = NULL;
  CHECK_OK(gf_folder_scan_with(root, NULL, &both, &f));
  if (f) {
    CHECK(f->count == 2 && f->skipped_count == 1);
    CHECK(f->count == 2 && !strcmp(f->entries[0].path, "c/far.png"));
  }
  gf_folder_free(f);

  /* Labels files: a file listed twice, a folder as the labels file. */
  path_of("flat", root, sizeof root);
  path_of("dup.txt", labels, sizeof labels);
  CHECK_OK(gf_test_write_file(labels, "1.png 0\n2.PNG 1\n./1.png 4\n", 26));
  CHECK_ERR(gf_folder_scan(root, labels, &f), GF_EBADSOURCE);
  CHECK(strstr(gf_last_error()->path, "dup.txt") != NULL);
  CHECK(says("lines 1 and 3 both list 1.png, with different labels"));
  mk("flat/x");
  CHECK_OK(gf_test_write_file(labels, "2.PNG 1\n1.png 0\nx/../2.PNG 1\n", 28));
  CHECK_ERR(gf_folder_scan(root, labels, &f), GF_EBADSOURCE);
  CHECK(says("lines 1 and 3 both list 2.PNG (label 1)"));
  CHECK_OK(gf_test_write_file(labels, "2.PNG 1\n1.png 0\n", 16));
  f = NULL;
  CHECK_OK(gf_folder_scan(root, labels, &f));
  CHECK(f && f->count == 2);
  gf_folder_free(f);
  path_of("a", labels, sizeof labels);
  CHECK_ERR(gf_folder_scan(root, labels, &f), -EISDIR);
  CHECK(says("is a folder; expected a labels file"));
  return gf_test_finish();
}
