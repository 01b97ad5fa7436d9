/* WebDataset's rules (lib/format/wds_keys.c, wds_braces.c): key and field
 * splitting as webdataset 1.0.2 does it (dots in folder names, upper-case
 * fields, metadata names, names without a dot), grouping adjacent members
 * into samples with the repeated-field error, and braceexpand's
 * expansion of shard patterns with its limit. */
#include "format/wds_braces.h"
#include "format/wds_keys.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* want_key NULL: the name is dropped. */
static void split(const char *path, const char *want_key,
                  const char *want_field) {
  size_t kl = 0;
  const char *f = NULL;
  bool ok = gf_wds_split(path, &kl, &f);
  if (!want_key) {
    if (ok)
      fprintf(stderr, "'%s' should be dropped\n", path);
    CHECK(!ok);
    return;
  }
  CHECK(ok);
  if (!ok) {
    fprintf(stderr, "'%s' dropped, wanted key '%s'\n", path, want_key);
    return;
  }
  if (kl != strlen(want_key) || memcmp(path, want_key, kl) ||
      strcmp(f, want_field))
    fprintf(stderr, "'%s': key '%.*s' field '%s', wanted '%s' '%s'\n", path,
            (int)kl, path, f, want_key, want_field);
  CHECK(kl == strlen(want_key) && !memcmp(path, want_key, kl));
  CHECK(!strcmp(f, want_field));
}

static void expand(const char *pat, bool urls, const char *const *want,
                   uint64_t nwant) {
  char **v = NULL;
  uint64_t n = 0;
  CHECK_OK(gf_wds_expand(pat, urls, 0, &v, &n));
  if (n != nwant)
    fprintf(stderr, "'%s': %llu results, wanted %llu\n", pat,
            (unsigned long long)n, (unsigned long long)nwant);
  CHECK(n == nwant);
  for (uint64_t i = 0; i < n && i < nwant; i++) {
    if (strcmp(v[i], want[i]))
      fprintf(stderr, "'%s'[%llu]: '%s', wanted '%s'\n", pat,
              (unsigned long long)i, v[i], want[i]);
    CHECK(!strcmp(v[i], want[i]));
  }
  gf_wds_strings_free(v, n);
}

#define EXPAND(pat, ...)                                                       \
  do {                                                                         \
    static const char *const w_[] = {__VA_ARGS__};                             \
    expand(pat, false, w_, sizeof w_ / sizeof w_[0]);                          \
  } while (0)

int main(void) {
  /* Splitting. */
  split("x.png", "x", "png");
  split("dir.v1/x.seg.png", "dir.v1/x", "seg.png");
  split("a/b/c.JPG", "a/b/c", "JPG"); /* lower-cased by grouping only */
  split("a.b.c/d", NULL, NULL);       /* no dot in the last component */
  split("noext", NULL, NULL);
  split(".hidden", NULL, NULL);
  split("a/.b", "a/", "b"); /* [^.]+ may be the '/' itself */
  split("x.y/.b", NULL, NULL);
  split("a//.b", "a//", "b");
  split("k.", "k", "");
  split("__key__", NULL, NULL);
  split("__", NULL, NULL);
  split("__meta__/x.txt", NULL, NULL);
  split("__a__.txt", "__a__", "txt"); /* not __..__ at the whole component */
  split("d/__key__.txt", "d/__key__", "txt");
  split("__x__y/z.txt", "__x__y/z", "txt");

  /* Grouping. */
  gf_wds_samples s = {0};
  const char *names[] = {"a/1.jpg", "a/1.CLS", "a/1.json", "__key__",
                         "a/2.jpg", "a/2.cls", "README",   "a/1.jpg"};
  for (int i = 0; i < 8; i++)
    CHECK_OK(gf_wds_group_add(&s, "shard.tar", names[i], 512u * (i + 1),
                              (uint64_t)i));
  CHECK(s.count == 3);
  CHECK(s.field_count == 6);
  CHECK(s.dropped == 2); /* __key__ and README */
  if (s.count == 3) {
    CHECK(!strcmp(gf_wds_key(&s, 0), "a/1") && s.samples[0].count == 3);
    CHECK(!strcmp(gf_wds_field_name(&s, &s.fields[1]), "cls") &&
          s.fields[1].offset == 1024);
    CHECK(!strcmp(gf_wds_key(&s, 1), "a/2") && s.samples[1].count == 2);
    /* A key seen again later starts a second sample. */
    CHECK(!strcmp(gf_wds_key(&s, 2), "a/1") && s.samples[2].first == 5);
    /* Names are interned: "jpg" is one id for samples 0, 1 and 2. */
    CHECK(s.name_count == 3 && s.fields[0].name == s.fields[3].name &&
          s.fields[0].name == s.fields[5].name);
  }
  /* A repeated field (after lower-casing) in one sample flags it and is
   * left out; the sample stays. */
  CHECK_OK(gf_wds_group_add(&s, "shard.tar", "a/1.txt", 9 * 512, 1));
  CHECK_OK(gf_wds_group_add(&s, "shard.tar", "a/1.TXT", 10 * 512, 1));
  CHECK(s.count == 3 && s.samples[2].count == 2 &&
        (s.samples[2].flags & GF_WDS_DUP_FIELD) &&
        !strcmp(s.names[s.samples[2].dup], "txt"));
  CHECK(!(s.samples[0].flags & GF_WDS_DUP_FIELD));
  /* Appending re-interns names and shifts keys and fields. */
  gf_wds_samples t2 = {0};
  CHECK_OK(gf_wds_group_add(&t2, "b.tar", "z/9.PNG", 512, 7));
  CHECK_OK(gf_wds_samples_append(&t2, &s, "b.tar"));
  CHECK(t2.count == 4 && t2.field_count == 8);
  if (t2.count == 4) {
    CHECK(!strcmp(gf_wds_key(&t2, 3), "a/1") && t2.samples[3].first == 6);
    CHECK(!strcmp(gf_wds_field_name(&t2, &t2.fields[1]), "jpg"));
    CHECK(!strcmp(t2.names[t2.samples[3].dup], "txt"));
    CHECK(gf_wds_name_id(&t2, "png") == 0);
  }
  gf_wds_samples_free(&t2);
  /* A hostile shard with ever new field names is bounded. */
  gf_wds_samples many = {0};
  int last = 0;
  for (unsigned i = 0; i <= GF_WDS_FIELD_NAMES_MAX && last == 0; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "k.f%u", i);
    last = gf_wds_group_add(&many, "m.tar", nm, 512, 1);
  }
  CHECK(last == GF_ELIMIT && many.name_count == GF_WDS_FIELD_NAMES_MAX);
  gf_wds_samples_free(&many);
  gf_wds_samples_free(&s);
  CHECK(s.count == 0 && !s.samples);

  /* Brace expansion (braceexpand's documented examples and more). */
  EXPAND("shard-{000..003}.tar", "shard-000.tar", "shard-001.tar",
         "shard-002.tar", "shard-003.tar");
  EXPAND("{1..3}", "1", "2", "3");
  EXPAND("{3..1}", "3", "2", "1");
  EXPAND("{0..10..5}", "0", "5", "10");
  EXPAND("{10..0..-5}", "10", "5", "0");
  EXPAND("{09..11}", "09", "10", "11");
  EXPAND("{-01..1}", "-01", "000", "001");
  EXPAND("{0..2}", "0", "1", "2"); /* "0" alone is no padding */
  EXPAND("{a..c}", "a", "b", "c");
  EXPAND("{Y..b..2}", "Y", "a");
  EXPAND("{c..a}", "c", "b", "a");
  EXPAND("{a,b}{1,2}", "a1", "a2", "b1", "b2");
  EXPAND("x{a,{b,c}d}y", "xay", "xbdy", "xcdy");
  EXPAND("{a,b{1..2}}", "a", "b1", "b2");
  EXPAND("{}", "{}");
  EXPAND("{x}", "{x}");
  EXPAND("{,a}", "", "a");
  EXPAND("a\\{b,c\\}", "a{b,c}");
  CHECK_ERR(gf_wds_expand("a\\{b,c}", false, 0, &(char **){0}, &(uint64_t){0}),
            -EINVAL); /* the escaped { does not open, so } is stray */
  EXPAND("{a\\,b,c}", "a,b", "c");
  EXPAND("plain", "plain");
  EXPAND("", "");
  EXPAND("}{", "}{");
  {
    static const char *const w[] = {"a0", "a1", "b"};
    expand("a{0,1}::b", true, w, 3);
    static const char *const w2[] = {"a0::b", "a1::b"};
    expand("a{0,1}::b", false, w2, 2);
  }
  char **v;
  uint64_t n;
  CHECK_ERR(gf_wds_expand("a{b", false, 0, &v, &n), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "unbalanced"));
  CHECK_ERR(gf_wds_expand("{a,b}}", false, 0, &v, &n), -EINVAL);
  CHECK_ERR(gf_wds_expand("{0..99}{0..99}", false, 1000, &v, &n), GF_ELIMIT);
  CHECK(strstr(gf_last_error()->message, "1000"));
  CHECK_ERR(gf_wds_expand("{0..9999999999}", false, 0, &v, &n), GF_ELIMIT);
  CHECK_ERR(gf_wds_expand("{0..99999999999999999999}", false, 0, &v, &n),
            -EINVAL);
  CHECK_OK(gf_wds_expand("{0..99}{0..9}", false, 1000, &v, &n));
  CHECK(n == 1000 && !strcmp(v[999], "999") && !strcmp(v[10], "10"));
  gf_wds_strings_free(v, n);
  return gf_test_finish();
}
