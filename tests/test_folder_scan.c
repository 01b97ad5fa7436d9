/* gf_folder_scan: the ImageFolder listing (order, labels, nesting, hidden
 * entries, symbolic links) and labels files (comments, blank lines, spaces
 * in names, CRLF) with their refusals: '..' escaping the root, absolute
 * paths, links leading out, missing files, bad lines, each naming the
 * labels file and the line. */
#include "format/format.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[512];

static void mk(const char *rel) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
  CHECK(mkdir(p, 0755) == 0);
}

static void touch(const char *rel) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
  CHECK_OK(gf_test_write_file(p, "png?", 4));
}

static void link_to(const char *target, const char *rel) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
  CHECK(symlink(target, p) == 0);
}

static void path_of(const char *rel, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", g_tmp, rel);
}

/* Scans and expects `code`, with `path` in the context's path and every
 * string of `says` in its message. */
static void expect_fail(const char *root, const char *labels, int code,
                        const char *path, const char *says1, const char *says2,
                        int line) {
  gf_folder *f = (gf_folder *)1;
  int rc = gf_folder_scan(root, labels, &f);
  const gf_error_info *e = gf_last_error();
  if (rc != code || f != NULL || !strstr(e->path, path) ||
      (says1 && !strstr(e->message, says1)) ||
      (says2 && !strstr(e->message, says2))) {
    fprintf(stderr, "%s:%d: got %s (path %s): %s\n", __FILE__, line,
            gf_err_name(rc), e->path, e->message);
    gf_test_failures++;
  }
}
#define EXPECT_FAIL(root, labels, code, path, s1, s2)                          \
  expect_fail(root, labels, code, path, s1, s2, __LINE__)

static void test_image_folder(void) {
  mk("if");
  mk("if/b");
  mk("if/a");
  mk("if/c-x");
  mk("if/c");
  mk("if/d"); /* empty: keeps its label */
  mk("if/.git");
  mk("if/a/sub");
  mk("if/a/.hid");
  touch("if/a/2.png");
  touch("if/a/10.png");
  touch("if/a/UPPER.PNG");
  touch("if/a/sub/1.png");
  touch("if/a/.hidden.png");
  touch("if/a/.hid/x.png");
  touch("if/a/notes.txt");
  touch("if/a/png");
  touch("if/b/z.png");
  touch("if/c/only.png");
  touch("if/c-x/y.png");
  touch("if/loose.png");                  /* beside the classes: no class */
  touch("if/.git/x.png");                 /* hidden class */
  link_to("../a/2.png", "if/b/link.png"); /* inside the root: followed */

  char root[1200];
  path_of("if", root, sizeof root);
  gf_folder *f = NULL;
  CHECK_OK(gf_folder_scan(root, NULL, &f));
  if (!f)
    return;
  static const char *classes[] = {"a", "b", "c", "c-x", "d"};
  CHECK(f->class_count == 5);
  for (uint32_t i = 0; i < f->class_count && i < 5; i++)
    CHECK(strcmp(f->classes[i], classes[i]) == 0);
  static const struct {
    const char *path;
    int64_t label;
  } want[] = {{"a/10.png", 0},    {"a/2.png", 0},    {"a/UPPER.PNG", 0},
              {"a/sub/1.png", 0}, {"b/link.png", 1}, {"b/z.png", 1},
              {"c/only.png", 2},  {"c-x/y.png", 3}};
  size_t nw = sizeof want / sizeof want[0];
  CHECK(f->count == nw);
  for (size_t i = 0; i < nw && i < f->count; i++) {
    if (strcmp(f->entries[i].path, want[i].path) != 0 ||
        f->entries[i].label != want[i].label) {
      fprintf(stderr, "entry %zu: %s %lld, wanted %s %lld\n", i,
              f->entries[i].path, (long long)f->entries[i].label, want[i].path,
              (long long)want[i].label);
      gf_test_failures++;
    }
  }
  CHECK(strcmp(f->root, root) == 0);
  gf_folder_free(f);
  gf_folder_free(NULL);

  /* A trailing slash on the root changes nothing. */
  char slashed[1300];
  snprintf(slashed, sizeof slashed, "%s/", root);
  f = NULL;
  CHECK_OK(gf_folder_scan(slashed, NULL, &f));
  CHECK(f && f->count == nw && strcmp(f->root, root) == 0);
  gf_folder_free(f);

  /* A link leading out of the root, a link to a folder, a broken link. */
  touch("outside.png");
  char out_png[1200];
  path_of("outside.png", out_png, sizeof out_png);
  link_to(out_png, "if/c/evil.png");
  EXPECT_FAIL(root, NULL, GF_EBADSOURCE, "evil.png", "outside", NULL);
  char p[1200];
  path_of("if/c/evil.png", p, sizeof p);
  unlink(p);
  link_to("../a", "if/c/loop");
  EXPECT_FAIL(root, NULL, GF_EBADSOURCE, "loop", "folder", NULL);
  path_of("if/c/loop", p, sizeof p);
  unlink(p);
  link_to("gone.png", "if/c/broken.png");
  EXPECT_FAIL(root, NULL, GF_EBADSOURCE, "broken.png", "no such file", NULL);
  path_of("if/c/broken.png", p, sizeof p);
  unlink(p);
  char outdir[1200];
  path_of("if/a/sub", outdir, sizeof outdir);
  link_to(outdir, "if/e");
  EXPECT_FAIL(root, NULL, GF_EBADSOURCE, "if", "symbolic link", NULL);
  path_of("if/e", p, sizeof p);
  unlink(p);
  f = NULL;
  CHECK_OK(gf_folder_scan(root, NULL, &f));
  gf_folder_free(f);

  /* Nothing to list. */
  mk("none");
  mk("none/cls");
  touch("none/cls/readme.txt");
  touch("none/top.png");
  char none[1200];
  path_of("none", none, sizeof none);
  EXPECT_FAIL(none, NULL, GF_EBADSOURCE, "none", "no .png, .jpg or .jpeg files found under",
              none);
  char missing[1200];
  path_of("missing", missing, sizeof missing);
  EXPECT_FAIL(missing, NULL, -ENOENT, "missing", NULL, NULL);
  path_of("outside.png", p, sizeof p);
  EXPECT_FAIL(p, NULL, -ENOTDIR, "outside.png", NULL, NULL);
}

static void write_labels(const char *name, const char *text) {
  char p[1200];
  path_of(name, p, sizeof p);
  CHECK_OK(gf_test_write_file(p, text, strlen(text)));
}

static void test_labels(void) {
  mk("flat");
  mk("flat/sub");
  touch("flat/one.png");
  touch("flat/my cat.png");
  touch("flat/sub/two.png");
  touch("flat/.hidden.png");
  touch("flat/three.png");
  touch("flat/four.png");
  /* Each file once: a file listed twice is refused (test_labels_dup). */
  write_labels("labels.txt", "# path label\n"
                             "\n"
                             "one.png 3\n"
                             "my cat.png\t\t-2\r\n"
                             "   \n"
                             "sub/two.png   9223372036854775807  \n"
                             "sub/../three.png 0\n"
                             "./.hidden.png 5\n"
                             "four.png 3"); /* no newline at the end */
  char root[1200], labels[1200];
  path_of("flat", root, sizeof root);
  path_of("labels.txt", labels, sizeof labels);
  gf_folder *f = NULL;
  CHECK_OK(gf_folder_scan(root, labels, &f));
  if (f) {
    static const struct {
      const char *path;
      int64_t label;
    } want[] = {
        {"one.png", 3},        {"my cat.png", -2},   {"sub/two.png", INT64_MAX},
        {"sub/../three.png", 0}, {"./.hidden.png", 5}, {"four.png", 3}};
    size_t nw = sizeof want / sizeof want[0];
    CHECK(f->count == nw);
    for (size_t i = 0; i < nw && i < f->count; i++) {
      if (strcmp(f->entries[i].path, want[i].path) != 0 ||
          f->entries[i].label != want[i].label) {
        fprintf(stderr, "labels entry %zu: \"%s\" %lld, wanted \"%s\"\n", i,
                f->entries[i].path, (long long)f->entries[i].label,
                want[i].path);
        gf_test_failures++;
      }
    }
    CHECK(f->class_count == 0 && f->classes == NULL);
  }
  gf_folder_free(f);

  /* Refusals, each naming the labels file and the line. */
  touch("secret.png");
  char secret[1200];
  path_of("secret.png", secret, sizeof secret);
  link_to(secret, "flat/innocent.png");
  char abs_line[1400];
  snprintf(abs_line, sizeof abs_line, "one.png 1\n%s 1\n", secret);
  struct {
    const char *text;
    const char *says1, *says2;
    size_t len; /* 0: strlen(text) */
  } bad[] = {
      {"one.png 1\n../secret.png 1\n", "line 2", "..", 0},
      {"sub/../../secret.png 1\n", "line 1", "..", 0},
      {abs_line, "line 2", "absolute", 0},
      {"# x\n\ninnocent.png 1\n", "line 3", "outside", 0},
      {"one.png 1\nnot-there.png 2\n", "line 2", "not-there.png", 0},
      {"sub 1\n", "line 1", "not a regular file", 0},
      {"one.png\n", "line 1", "expected", 0},
      {"one.png cat\n", "line 1", "label \"cat\"", 0},
      {"one.png 99999999999999999999\n", "line 1", "64-bit", 0},
      {"one.png 1x\n", "line 1", "label", 0},
      {"one.png 1\n\0.png 2\n", "line 2", "NUL", 18},
      {"", "lists no files", NULL, 0},
      {"# only comments\n\n", "lists no files", NULL, 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char p[1200];
    path_of("bad.txt", p, sizeof p);
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
    CHECK_OK(gf_test_write_file(p, bad[i].text, len));
    EXPECT_FAIL(root, p, GF_EBADSOURCE, "bad.txt", bad[i].says1, bad[i].says2);
  }
  /* A line longer than the limit. */
  size_t n = 9000;
  char *lng = malloc(n + 8);
  memset(lng, 'a', n);
  memcpy(lng + n, ".png 1\n", 8);
  char p[1200];
  path_of("long.txt", p, sizeof p);
  CHECK_OK(gf_test_write_file(p, lng, strlen(lng)));
  EXPECT_FAIL(root, p, GF_EBADSOURCE, "long.txt", "line 1", "longer than");
  free(lng);
  path_of("no-labels.txt", p, sizeof p);
  EXPECT_FAIL(root, p, -ENOENT, "no-labels.txt", NULL, NULL);
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s", gf_test_tmpdir());
  test_image_folder();
  test_labels();
  return gf_test_finish();
}
