/* The WebDataset shard writer (lib/format/wds_writer.c), read back with
 * the project's own tar scan (gf_tar_scan) and webdataset grouping
 * (gf_wds_group_add): every member's name, order, data offset, size and
 * bytes; names of 150, 300 and 1,200 bytes, UTF-8 and non-UTF-8 names;
 * byte-identical output for the same calls; the split into shards by size
 * (a sample never across two, one larger than the limit alone); keys and
 * fields refused; the keys made of file paths; abandoned and failed
 * writers leaving no temporary file; published shards removed on
 * request. */
#include "common/fault.h"
#include "format/tar_scan.h"
#include "format/wds_keys.h"
#include "format/wds_writer.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXM 64

/* What the scan found in one shard. */
typedef struct got {
  char *path[MAXM];
  uint64_t off[MAXM], size[MAXM];
  int n;
} got;

static int collect(void *ctx, const gf_tar_member *m) {
  got *g = ctx;
  if (g->n < MAXM) {
    g->path[g->n] = strdup(m->path);
    g->off[g->n] = m->data_offset;
    g->size[g->n] = m->size;
  }
  g->n++;
  return 0;
}

static int64_t fd_read(void *ctx, void *buf, uint64_t off, uint64_t len) {
  ssize_t n = pread(*(int *)ctx, buf, len, (off_t)off);
  return n < 0 ? gf_fail(-errno, NULL, GF_NO_INDEX, off, "pread failed") : n;
}

static void got_free(got *g) {
  for (int i = 0; i < g->n && i < MAXM; i++)
    free(g->path[i]);
  memset(g, 0, sizeof *g);
}

/* Scans shard i of dir into *g; *bytes gets the whole file (caller
 * frees). Returns the scan's status (-ENOENT: no such shard). */
static int scan_shard(const char *dir, unsigned i, got *g, uint8_t **bytes,
                      size_t *len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" GF_WDS_SHARD_FMT, dir, i);
  memset(g, 0, sizeof *g);
  *bytes = gf_test_read_file(path, len);
  if (!*bytes)
    return -ENOENT;
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -errno;
  int rc = gf_tar_scan(path, *len, fd_read, &fd, collect, g);
  close(fd);
  return rc;
}

/* Names in dir other than shard-NNNNNN.tar (temporary files left). */
static int others_in(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    unsigned k;
    char tail[8];
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    if (sscanf(e->d_name, "shard-%6u.ta%1s", &k, tail) == 2 &&
        strlen(e->d_name) == 16 && !strcmp(tail, "r"))
      continue;
    fprintf(stderr, "  left in %s: %s\n", dir, e->d_name);
    n++;
  }
  if (d)
    closedir(d);
  return n;
}

static int count_shards(const char *dir) {
  int n = 0;
  for (;; n++) {
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/" GF_WDS_SHARD_FMT, dir, (unsigned)n);
    if (stat(path, &sb) != 0)
      return n;
  }
}

static char *make_dir(const char *name) {
  static char path[8][4200];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", gf_test_tmpdir(), name);
  CHECK(mkdir(p, 0755) == 0);
  return p;
}

/* A sample: its key and members (data made from a seed). */
typedef struct sample {
  char key[1400];
  const char *fields[3];
  size_t sizes[3];
  int n;
  uint8_t *data[3];
} sample;

static void fill(sample *s, uint64_t seed) {
  for (int i = 0; i < s->n; i++) {
    s->data[i] = malloc(s->sizes[i] ? s->sizes[i] : 1);
    uint64_t st = seed * 31 + (uint64_t)i;
    for (size_t j = 0; j < s->sizes[i]; j++)
      s->data[i][j] = (uint8_t)gf_test_rand(&st);
  }
}

static int add(gf_wds_writer *w, const sample *s) {
  gf_wds_member m[3];
  for (int i = 0; i < s->n; i++)
    m[i] = (gf_wds_member){
        .field = s->fields[i], .data = s->data[i], .size = s->sizes[i]};
  return gf_wds_writer_add(w, s->key, m, (size_t)s->n);
}

/* Checks that shards [first, first + nshards) of dir hold exactly the
 * samples ss[0 .. n) in order: member names KEY.FIELD, adjacent, data
 * offsets on 512-byte blocks, sizes and bytes, and that webdataset's
 * grouping gives back the keys and (lower-case) fields. per_shard[k]: the
 * samples expected in shard k. */
static void check_shards(const char *dir, const sample *ss, int n,
                         const int *per_shard, int nshards, uint64_t limit) {
  int si = 0;
  CHECK(count_shards(dir) == nshards);
  for (int k = 0; k < nshards; k++) {
    got g;
    uint8_t *bytes = NULL;
    size_t len = 0;
    CHECK_OK(scan_shard(dir, (unsigned)k, &g, &bytes, &len));
    CHECK(len % GF_WDS_RECORD == 0);
    CHECK(limit == 0 || len <= limit || per_shard[k] == 1);
    gf_wds_samples gs = {0};
    int mi = 0;
    for (int s = 0; s < per_shard[k] && si + s < n; s++) {
      const sample *x = &ss[si + s];
      for (int i = 0; i < x->n; i++, mi++) {
        char name[1500];
        snprintf(name, sizeof name, "%s.%s", x->key, x->fields[i]);
        CHECK(mi < g.n);
        if (mi >= g.n || mi >= MAXM)
          continue;
        if (strcmp(g.path[mi], name))
          fprintf(stderr, "shard %d member %d: '%s', wanted '%s'\n", k, mi,
                  g.path[mi], name);
        CHECK(!strcmp(g.path[mi], name));
        CHECK(g.size[mi] == x->sizes[i]);
        CHECK(g.off[mi] % 512 == 0);
        CHECK(g.off[mi] + g.size[mi] <= len);
        CHECK(g.off[mi] + g.size[mi] > len ||
              memcmp(bytes + g.off[mi], x->data[i], x->sizes[i]) == 0);
        CHECK_OK(
            gf_wds_group_add(&gs, "shard", g.path[mi], g.off[mi], g.size[mi]));
      }
    }
    CHECK(g.n == mi);
    CHECK(gs.dropped == 0);
    CHECK(gs.count == (uint64_t)per_shard[k]);
    for (uint64_t s = 0; s < gs.count && si + (int)s < n; s++) {
      const sample *x = &ss[si + (int)s];
      CHECK(!strcmp(gf_wds_key(&gs, s), x->key));
      CHECK(gs.samples[s].count == (uint16_t)x->n);
      CHECK(gs.samples[s].flags == 0);
      for (int i = 0; i < x->n && i < gs.samples[s].count; i++) {
        const gf_wds_field *f = &gs.fields[gs.samples[s].first + (uint64_t)i];
        char low[32];
        snprintf(low, sizeof low, "%s", x->fields[i]);
        for (char *p = low; *p; p++)
          if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p + 32);
        CHECK(!strcmp(gf_wds_field_name(&gs, f), low));
        CHECK(f->size == x->sizes[i]);
      }
    }
    /* After the last member: tar's end blocks and padding, all zero. */
    uint64_t end = mi > 0 && mi <= MAXM
                       ? (g.off[mi - 1] + g.size[mi - 1] + 511) / 512 * 512
                       : 0;
    CHECK(end + 1024 <= len);
    for (uint64_t b = end; b < len; b++)
      if (bytes[b]) {
        CHECK(!"a nonzero byte after the last member");
        break;
      }
    si += per_shard[k];
    gf_wds_samples_free(&gs);
    got_free(&g);
    free(bytes);
  }
  CHECK(si == n);
  CHECK(others_in(dir) == 0);
}

static void same_files(const char *a, const char *b, int nshards) {
  for (int k = 0; k < nshards; k++) {
    char pa[4200], pb[4200];
    snprintf(pa, sizeof pa, "%s/" GF_WDS_SHARD_FMT, a, (unsigned)k);
    snprintf(pb, sizeof pb, "%s/" GF_WDS_SHARD_FMT, b, (unsigned)k);
    size_t la = 0, lb = 0;
    uint8_t *x = gf_test_read_file(pa, &la), *y = gf_test_read_file(pb, &lb);
    CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
    free(x);
    free(y);
  }
}

/* Names of every kind and sizes around the block and buffer sizes. */
static void test_members(void) {
  static sample ss[9];
  memset(ss, 0, sizeof ss);
  const size_t sizes[] = {0, 1, 511, 512, 513, 70000, 3u << 20, 5, 9};
  for (int i = 0; i < 9; i++) {
    sample *s = &ss[i];
    s->n = 2;
    s->fields[0] = i % 2 ? "png" : "jpg";
    s->fields[1] = "cls";
    s->sizes[0] = sizes[i];
    s->sizes[1] = 1 + (size_t)i % 3;
    snprintf(s->key, sizeof s->key, "class_%d/img_%d", i % 3, i);
  }
  /* 150 bytes: a ustar prefix and name; 300: a PAX path (> 255); 1,200
   * bytes in folders; UTF-8; not UTF-8; a folder with dots; three fields,
   * one of them with a dot and capitals. */
  memset(ss[2].key, 'p', 120);
  snprintf(ss[2].key + 120, sizeof ss[2].key - 120, "/%s",
           "q_long_enough_name");
  memset(ss[3].key, 'd', 150);
  ss[3].key[150] = '/';
  memset(ss[3].key + 151, 'e', 149);
  ss[3].key[300] = '\0';
  for (int j = 0; j < 12; j++)
    memset(ss[4].key + j * 100, j == 11 ? 'f' : 'a' + j, 99),
        ss[4].key[j * 100 + 99] = '/';
  ss[4].key[1199] = '\0';
  snprintf(ss[5].key, sizeof ss[5].key, "\xc3\xa9t\xc3\xa9/\xc3\xbc");
  snprintf(ss[6].key, sizeof ss[6].key, "bad\xff/x");
  snprintf(ss[7].key, sizeof ss[7].key, "dir.v1/x");
  ss[8].n = 3;
  ss[8].fields[2] = "Seg.PNG";
  ss[8].sizes[2] = 1000;
  for (int i = 0; i < 9; i++)
    fill(&ss[i], (uint64_t)i + 1);

  const char *dirs[2] = {make_dir("members"), make_dir("members2")};
  for (int r = 0; r < 2; r++) {
    gf_wds_writer *w = NULL;
    CHECK_OK(gf_wds_writer_open(dirs[r], NULL, &w));
    if (!w)
      return;
    for (int i = 0; i < 9; i++)
      CHECK_OK(add(w, &ss[i]));
    CHECK(count_shards(dirs[r]) == 0); /* nothing renamed before close */
    CHECK_OK(gf_wds_writer_close(w));
    gf_wds_writer_stats st;
    gf_wds_writer_stats_get(w, &st);
    CHECK(st.samples == 9 && st.members == 19 && st.shards == 1);
    uint64_t data = 0;
    for (int i = 0; i < 9; i++)
      for (int j = 0; j < ss[i].n; j++)
        data += ss[i].sizes[j];
    CHECK(st.data_bytes == data);
    struct stat sb;
    char p[4200];
    snprintf(p, sizeof p, "%s/shard-000000.tar", dirs[r]);
    CHECK(stat(p, &sb) == 0 && (uint64_t)sb.st_size == st.bytes);
    gf_wds_writer_free(w);
  }
  int one = 9;
  check_shards(dirs[0], ss, 9, &one, 1, 0);
  same_files(dirs[0], dirs[1], 1);
  printf("members: 9 samples, 19 members read back, identical twice\n");
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < ss[i].n; j++)
      free(ss[i].data[j]);
}

/* The split: 3 samples of 8,704 tar bytes fit 30 KiB (27,136 with the end
 * blocks, 30,720 padded), a fourth would not; a sample larger than the
 * limit gets a shard of its own. */
static void test_split(void) {
  const uint64_t limit = 30 * 1024;
  static sample ss[14];
  memset(ss, 0, sizeof ss);
  for (int i = 0; i < 14; i++) {
    sample *s = &ss[i];
    s->n = 2;
    s->fields[0] = "jpg";
    s->fields[1] = "cls";
    s->sizes[0] = i == 11 ? 50000 : 7000;
    s->sizes[1] = 2;
    snprintf(s->key, sizeof s->key, "k%02d", i);
    fill(s, 100 + (uint64_t)i);
  }
  const char *dir = make_dir("split");
  gf_wds_writer *w = NULL;
  gf_wds_writer_opts o = {.shard_bytes = limit, .tmp_tag = "test-1"};
  CHECK_OK(gf_wds_writer_open(dir, &o, &w));
  if (!w)
    return;
  for (int i = 0; i < 14; i++) {
    CHECK_OK(add(w, &ss[i]));
    /* Shards appear as they are closed: the one being written is not
     * visible, under its temporary name only. */
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s/.shard-%06d.tar.gftmp-test-1", dir,
             count_shards(dir));
    CHECK(access(tmp, F_OK) == 0);
  }
  CHECK_OK(gf_wds_writer_close(w));
  gf_wds_writer_stats st;
  gf_wds_writer_stats_get(w, &st);
  /* 0-2, 3-5, 6-8, 9-10, then 11 alone (50,000 bytes), then 12-13. */
  const int per[] = {3, 3, 3, 2, 1, 2};
  CHECK(st.shards == 6 && st.samples == 14);
  check_shards(dir, ss, 14, per, 6, limit);
  gf_wds_writer_free(w);
  printf("split: 14 samples into shards of 3, 3, 3, 2, 1 (over the limit), "
         "2\n");

  /* The same with the limit just below 3 samples: 2 a shard. */
  const char *dir2 = make_dir("split2");
  o.shard_bytes = 3 * 8704 + 1024 - 1; /* 27,135: 3 make 30,720 */
  CHECK_OK(gf_wds_writer_open(dir2, &o, &w));
  for (int i = 0; w && i < 6; i++)
    CHECK_OK(add(w, &ss[i]));
  CHECK_OK(w ? gf_wds_writer_close(w) : -1);
  const int per2[] = {2, 2, 2};
  check_shards(dir2, ss, 6, per2, 3, o.shard_bytes);
  gf_wds_writer_free(w);
  for (int i = 0; i < 14; i++)
    for (int j = 0; j < ss[i].n; j++)
      free(ss[i].data[j]);
}

static void test_refused(void) {
  const char *dir = make_dir("refused");
  gf_wds_writer *w = NULL;
  CHECK_OK(gf_wds_writer_open(dir, NULL, &w));
  if (!w)
    return;
  const char d[] = "x";
  gf_wds_member m[2] = {{.field = "jpg", .data = d, .size = 1},
                        {.field = "cls", .data = d, .size = 1}};
  CHECK_OK(gf_wds_writer_add(w, "a/b", m, 2));
  CHECK_ERR(gf_wds_writer_add(w, "a/b", m, 2), -EEXIST);
  CHECK(gf_wds_writer_has_key(w, "a/b") && !gf_wds_writer_has_key(w, "a"));
  const char *bad_keys[] = {"a/b.c", "",     "/a",         "a/",       "a//b",
                            "a/./b", "../a", "__meta__/x", "__m__/y/z"};
  for (size_t i = 0; i < sizeof bad_keys / sizeof *bad_keys; i++)
    CHECK_ERR(gf_wds_writer_add(w, bad_keys[i], m, 2), -EINVAL);
  /* webdataset lower-cases fields: "jpg" and "JPG" are one. */
  gf_wds_member dup[2] = {{.field = "jpg", .data = d, .size = 1},
                          {.field = "JPG", .data = d, .size = 1}};
  CHECK_ERR(gf_wds_writer_add(w, "c", dup, 2), -EINVAL);
  gf_wds_member slash = {.field = "x/y", .data = d, .size = 1};
  CHECK_ERR(gf_wds_writer_add(w, "c", &slash, 1), -EINVAL);
  gf_wds_member empty = {.field = "", .data = d, .size = 1};
  CHECK_ERR(gf_wds_writer_add(w, "c", &empty, 1), -EINVAL);
  CHECK_ERR(gf_wds_writer_add(w, "c", m, 0), -EINVAL);
  char longkey[GF_WDS_NAME_MAX + 8];
  memset(longkey, 'k', GF_WDS_NAME_MAX - 3);
  longkey[GF_WDS_NAME_MAX - 3] = '\0';
  /* 4,093 + ".jpg": one byte too many; 4,092 + 4: the limit. */
  CHECK_ERR(gf_wds_writer_add(w, longkey, m, 1), GF_ELIMIT);
  longkey[GF_WDS_NAME_MAX - 4] = '\0';
  CHECK_OK(gf_wds_writer_add(w, longkey, m, 1));
  /* Refusals are not sticky. */
  CHECK_OK(gf_wds_writer_add(w, "c", m, 2));
  /* Unique keys: the key itself, else _1, _2, ... */
  char buf[64];
  CHECK(gf_wds_writer_unique_key(w, "z", buf, sizeof buf) == 0 &&
        !strcmp(buf, "z"));
  CHECK(gf_wds_writer_unique_key(w, "c", buf, sizeof buf) == 1 &&
        !strcmp(buf, "c_1"));
  CHECK_OK(gf_wds_writer_add(w, "c_1", m, 2));
  CHECK(gf_wds_writer_unique_key(w, "c", buf, sizeof buf) == 1 &&
        !strcmp(buf, "c_2"));
  CHECK_ERR(gf_wds_writer_unique_key(w, "c", buf, 3), GF_ELIMIT);
  CHECK_OK(gf_wds_writer_close(w));
  CHECK_ERR(gf_wds_writer_add(w, "d", m, 2), -EINVAL);
  gf_wds_writer_stats st;
  gf_wds_writer_stats_get(w, &st);
  CHECK(st.samples == 4 && st.shards == 1);
  gf_wds_writer_free(w);
  CHECK(others_in(dir) == 0);

  /* A folder that is not one, a bad tag. */
  char file[4200];
  snprintf(file, sizeof file, "%s/shard-000000.tar", dir);
  CHECK_ERR(gf_wds_writer_open(file, NULL, &w), -ENOTDIR);
  gf_wds_writer_opts o = {.tmp_tag = "a/b"};
  CHECK_ERR(gf_wds_writer_open(dir, &o, &w), -EINVAL);
  CHECK(w == NULL);
  printf("refused: keys, fields and names as webdataset would misread "
         "them\n");
}

static void key_case(const char *path, int content, const char *key,
                     const char *field, uint32_t changes) {
  char k[256], f[8];
  uint32_t c = 99;
  int rc = gf_wds_file_key(path, content, k, sizeof k, f, sizeof f, &c);
  CHECK_OK(rc);
  if (rc == 0 && (strcmp(k, key) || strcmp(f, field) || c != changes))
    fprintf(stderr, "%s: key '%s' field '%s' changes %u; wanted '%s' '%s' %u\n",
            path, k, f, c, key, field, changes);
  CHECK(rc == 0 && !strcmp(k, key) && !strcmp(f, field) && c == changes);
}

static void test_file_keys(void) {
  key_case("cat/a.jpg", GF_CODEC_JPEG, "cat/a", "jpg", 0);
  key_case("cat/b.JPEG", GF_CODEC_JPEG, "cat/b", "jpeg", 0);
  key_case("Cat/c.Png", GF_CODEC_PNG, "Cat/c", "png", 0);
  key_case("cat/a.b.jpg", GF_CODEC_JPEG, "cat/a_b", "jpg", GF_WDS_KEY_DOTS);
  key_case("dir.v1/x.png", GF_CODEC_PNG, "dir.v1/x", "png", 0);
  key_case("./x//y/../z.png", GF_CODEC_PNG, "x/z", "png", 0);
  key_case("noext", GF_CODEC_PNG, "noext", "png", 0);
  key_case("a.bin", GF_CODEC_JPEG, "a_bin", "jpg", GF_WDS_KEY_DOTS);
  key_case("__x__/a.png", GF_CODEC_PNG, "_x__/a", "png", GF_WDS_KEY_META);
  key_case("_____/a.png", GF_CODEC_PNG, "___/a", "png", GF_WDS_KEY_META);
  key_case("__x__.png", GF_CODEC_PNG, "__x__", "png", 0);
  key_case("dir/.png", GF_CODEC_PNG, "dir/_", "png", GF_WDS_KEY_EMPTY);
  key_case("d/.a.b.png", GF_CODEC_PNG, "d/_a_b", "png", GF_WDS_KEY_DOTS);
  char k[8], f[8];
  uint32_t c;
  CHECK_ERR(gf_wds_file_key("a/..", GF_CODEC_PNG, k, sizeof k, f, sizeof f, &c),
            -EINVAL);
  CHECK_ERR(gf_wds_file_key("a.gif", -1, k, sizeof k, f, sizeof f, &c),
            -EINVAL);
  CHECK_ERR(gf_wds_file_key("toolongname.png", GF_CODEC_PNG, k, sizeof k, f,
                            sizeof f, &c),
            GF_ELIMIT);
  printf("file keys: extensions, dots, metadata folders, empty stems\n");
}

/* Abandoned writers and failed writes leave no temporary file; removing
 * the shards of a writer removes them all. */
static void test_failures(void) {
  const char *dir = make_dir("abandon");
  gf_wds_writer *w = NULL;
  /* 9,728 tar bytes a sample: 2 make 20,480, 3 would make 30,720. */
  gf_wds_writer_opts o = {.shard_bytes = 25000};
  const char d[9000] = {1};
  gf_wds_member m = {.field = "png", .data = d, .size = sizeof d};
  CHECK_OK(gf_wds_writer_open(dir, &o, &w));
  for (int i = 0; w && i < 5; i++) {
    char key[16];
    snprintf(key, sizeof key, "s%d", i);
    CHECK_OK(gf_wds_writer_add(w, key, &m, 1));
  }
  CHECK(count_shards(dir) == 2); /* 2 a shard: the third one is open */
  gf_wds_writer_free(w);         /* without close */
  CHECK(count_shards(dir) == 2);
  CHECK(others_in(dir) == 0);

  const char *dir2 = make_dir("removed");
  CHECK_OK(gf_wds_writer_open(dir2, &o, &w));
  for (int i = 0; w && i < 5; i++) {
    char key[16];
    snprintf(key, sizeof key, "s%d", i);
    CHECK_OK(gf_wds_writer_add(w, key, &m, 1));
  }
  CHECK(w && gf_wds_writer_remove_shards(w) == 2);
  CHECK(count_shards(dir2) == 0);
  CHECK(others_in(dir2) == 0);
  gf_wds_writer_free(w);

  /* The first write fails (the buffer's flush when the shard closes). */
  const char *dir3 = make_dir("enospc");
  CHECK_OK(gf_wds_writer_open(dir3, NULL, &w));
  CHECK_OK(w ? gf_wds_writer_add(w, "a", &m, 1) : -1);
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -ENOSPC, 0));
  gf_error_clear();
  CHECK_ERR(w ? gf_wds_writer_close(w) : -1, -ENOSPC);
  CHECK(strstr(gf_last_error()->path, ".shard-000000.tar.gftmp-") != NULL);
  gf_fault_disarm_all();
  CHECK_ERR(w ? gf_wds_writer_add(w, "b", &m, 1) : -1, -ENOSPC); /* sticky */
  CHECK(count_shards(dir3) == 0);
  CHECK(others_in(dir3) == 0);
  gf_wds_writer_free(w);

  /* A write failing in the middle of a sample (its data, written
   * straight after the header's flush). */
  const char *dir4 = make_dir("midway");
  static uint8_t big[2u << 20];
  gf_wds_member bm = {.field = "png", .data = big, .size = sizeof big};
  CHECK_OK(gf_wds_writer_open(dir4, NULL, &w));
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 2, -EIO, 0));
  CHECK_ERR(w ? gf_wds_writer_add(w, "big", &bm, 1) : -1, -EIO);
  gf_fault_disarm_all();
  CHECK(count_shards(dir4) == 0);
  CHECK(others_in(dir4) == 0);
  gf_wds_writer_free(w);
  printf("failures: no temporary file left, shards removed on request\n");
}

int main(void) {
  test_members();
  test_split();
  test_refused();
  test_file_keys();
  test_failures();
  return gf_test_finish();
}
