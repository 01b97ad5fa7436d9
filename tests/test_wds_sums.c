/* The verification sidecar of a tar shard (lib/format/wds_sums.c): what the
 * writer writes, read back by the parser; the lookup by offset and size;
 * the sidecar's name; every malformed file refused with its code, the file,
 * the line and the byte named; the writer refusing entries out of order. */
#include "format/wds_sums.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *text, uint64_t shard, gf_wds_sums **s) {
  gf_error_clear();
  return gf_wds_sums_parse("x.sums", text, strlen(text), shard, s);
}

static void refused(const char *text, uint64_t shard, int want,
                    const char *words) {
  gf_wds_sums *s = NULL;
  CHECK_ERR(parse(text, shard, &s), want);
  CHECK(s == NULL);
  const char *m = gf_last_error()->message;
  if (!strstr(m, words))
    fprintf(stderr, "message '%s' lacks '%s'\n", m, words);
  CHECK(strstr(m, words) != NULL);
  CHECK(gf_last_error()->code == want);
  CHECK(!strcmp(gf_last_error()->path, "x.sums"));
  printf("  refused: %s\n", m);
}

static bool same(const gf_wds_sum *a, const gf_wds_sum *b, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (a[i].offset != b[i].offset || a[i].size != b[i].size ||
        a[i].crc != b[i].crc)
      return false;
  return true;
}

static void round_trips(void) {
  const gf_wds_sum v[] = {
      {.offset = 512, .size = 100, .crc = 0xabcd},
      {.offset = 1536, .size = 0, .crc = 0xffffffffu},
      {.offset = 2048, .size = 512, .crc = 0x01234567},
      {.offset = 3072, .size = 7168, .crc = 0x89abcdef}, /* to the end */
  };
  char *text;
  size_t len;
  CHECK_OK(gf_wds_sums_write(v, 4, 10240, &text, &len));
  const char *want = "gpufeed-sums v1 10240 4\n"
                     "512 100 0000abcd\n"
                     "1536 0 ffffffff\n"
                     "2048 512 01234567\n"
                     "3072 7168 89abcdef\n";
  if (strcmp(text, want))
    fprintf(stderr, "wrote:\n%s\nwanted:\n%s", text, want);
  CHECK(!strcmp(text, want) && len == strlen(want));

  gf_wds_sums *s = NULL;
  CHECK_OK(gf_wds_sums_parse("x.sums", text, len, 10240, &s));
  CHECK(s && s->shard_size == 10240 && s->count == 4);
  if (s && s->count == 4) {
    CHECK(same(s->v, v, 4));
    /* Hits: first, middle, last. */
    CHECK(gf_wds_sums_find(s, 512, 100) == &s->v[0]);
    CHECK(gf_wds_sums_find(s, 1536, 0) == &s->v[1]);
    CHECK(gf_wds_sums_find(s, 2048, 512) == &s->v[2]);
    CHECK(gf_wds_sums_find(s, 3072, 7168) == &s->v[3]);
    /* Misses by offset (below, between, above) and by size. */
    CHECK(gf_wds_sums_find(s, 0, 100) == NULL);
    CHECK(gf_wds_sums_find(s, 1024, 100) == NULL);
    CHECK(gf_wds_sums_find(s, 1537, 0) == NULL);
    CHECK(gf_wds_sums_find(s, 10240, 0) == NULL);
    CHECK(gf_wds_sums_find(s, UINT64_MAX, 0) == NULL);
    CHECK(gf_wds_sums_find(s, 512, 101) == NULL);
    CHECK(gf_wds_sums_find(s, 512, 99) == NULL);
    CHECK(gf_wds_sums_find(s, 3072, 7167) == NULL);
  }
  gf_wds_sums_free(s);
  free(text);

  /* One entry, no final newline. */
  CHECK_OK(parse("gpufeed-sums v1 1024 1\n512 3 0123abcd", 1024, &s));
  CHECK(s && s->count == 1 && s->v[0].offset == 512 && s->v[0].size == 3 &&
        s->v[0].crc == 0x0123abcd);
  CHECK(s && gf_wds_sums_find(s, 512, 3) == &s->v[0]);
  gf_wds_sums_free(s);

  /* Zero entries: written, read back, nothing found. */
  CHECK_OK(gf_wds_sums_write(v, 0, 0, &text, &len));
  CHECK(!strcmp(text, "gpufeed-sums v1 0 0\n") && len == strlen(text));
  CHECK_OK(gf_wds_sums_parse("x.sums", text, len, 0, &s));
  CHECK(s && s->count == 0 && s->shard_size == 0);
  CHECK(gf_wds_sums_find(s, 512, 0) == NULL);
  gf_wds_sums_free(s);
  free(text);
  CHECK_OK(parse("gpufeed-sums v1 4096 0", 4096, &s));
  CHECK(s && s->count == 0);
  gf_wds_sums_free(s);
  CHECK(gf_wds_sums_find(NULL, 512, 0) == NULL);
  gf_wds_sums_free(NULL);

  /* The largest numbers there are. */
  const gf_wds_sum big[] = {{.offset = 18446744073709550592u, .size = 1023}};
  CHECK_OK(gf_wds_sums_write(big, 1, UINT64_MAX, &text, &len));
  CHECK(!strcmp(text, "gpufeed-sums v1 18446744073709551615 1\n"
                      "18446744073709550592 1023 00000000\n"));
  CHECK_OK(gf_wds_sums_parse("x.sums", text, len, UINT64_MAX, &s));
  CHECK(s && s->count == 1 && same(s->v, big, 1));
  gf_wds_sums_free(s);
  free(text);
}

static void parse_errors(void) {
  /* Not a sums file: no magic, a field missing or extra, not numbers. */
  refused("", 1024, GF_EFORMAT, "line 1:");
  refused("\n", 1024, GF_EFORMAT, "line 1:");
  refused("hello\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sum v1 1024 0\n", 1024, GF_EFORMAT, "line 1:");
  refused("Gpufeed-sums v1 1024 0\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums \n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v2 \n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums x1 1024 0\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1 1024\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1 1024 0 0\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1 1024 0 \n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums  v1 1024 0\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1 1024 0\r\n", 1024, GF_EFORMAT, "line 1:");
  refused("gpufeed-sums v1 x 0\n", 1024, GF_EFORMAT, "not a size");
  refused("gpufeed-sums v1 1024 -1\n", 1024, GF_EFORMAT, "not a size");
  refused("gpufeed-sums v1 01024 0\n", 1024, GF_EFORMAT, "not a size");
  refused("gpufeed-sums v1 +1024 0\n", 1024, GF_EFORMAT, "not a size");
  refused("gpufeed-sums v1 18446744073709551616 0\n", 1024, GF_EFORMAT,
          "not a size");
  /* Another version. */
  refused("gpufeed-sums v2 1024 0\n", 1024, GF_EVERSION, "'v2'");
  refused("gpufeed-sums v0 1024 0\n", 1024, GF_EVERSION, "'v0'");
  refused("gpufeed-sums v11 1024 0\n", 1024, GF_EVERSION, "'v11'");
  refused("gpufeed-sums v2\n", 1024, GF_EVERSION, "'v2'");

  /* Made for another shard. */
  refused("gpufeed-sums v1 1024 0\n", 1025, GF_ECORRUPT, "line 1:");
  refused("gpufeed-sums v1 1024 0\n", 1023, GF_ECORRUPT, "1024 bytes");

  const char *h1 = "gpufeed-sums v1 10240 1\n";
  char t[512];
  /* Lines that are not three fields of the right form. */
  const char *bad_lines[] = {
      "\n",
      "512\n",
      "512 100\n",
      "512 100 0000abcd 1\n",
      "512 100 0000abcd \n",
      " 512 100 0000abcd\n",
      "512  100 0000abcd\n",
      "512\t100 0000abcd\n",
      "512 100 0000abcd\r\n",
      "x 100 0000abcd\n",
      "0512 100 0000abcd\n",
      "512 -1 0000abcd\n",
      "512 +1 0000abcd\n",
      "512 99999999999999999999 0000abcd\n",
      "512 100 0000abcg\n", /* not hex */
      "512 100 0000ABCD\n", /* upper case */
      "512 100 0000abcD\n",
      "512 100 000abcd\n",   /* 7 digits */
      "512 100 00000abcd\n", /* 9 digits */
      "512 100 \n",
      "512 100 0x00abcd\n",
  };
  for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
    snprintf(t, sizeof t, "%s%s", h1, bad_lines[i]);
    refused(t, 10240, GF_ECORRUPT, "line 2: not '<offset> <size>");
  }
  /* The error names the line's byte in the file. */
  gf_wds_sums *s = NULL;
  snprintf(t, sizeof t, "%s%s", "gpufeed-sums v1 10240 2\n512 1 00000000\n",
           "1024 1 0000000G\n");
  CHECK_ERR(parse(t, 10240, &s), GF_ECORRUPT);
  CHECK(gf_last_error()->offset == strlen("gpufeed-sums v1 10240 2\n"
                                          "512 1 00000000\n"));
  CHECK(strstr(gf_last_error()->message, "line 3:") != NULL);

  /* Offsets: not a multiple of 512, below 512, not after the member
   * before (equal, smaller, inside it, where its header would be). */
  refused("gpufeed-sums v1 10240 1\n1000 1 00000000\n", 10240, GF_ECORRUPT,
          "multiple of 512");
  refused("gpufeed-sums v1 10240 1\n256 1 00000000\n", 10240, GF_ECORRUPT,
          "multiple of 512");
  refused("gpufeed-sums v1 10240 1\n0 1 00000000\n", 10240, GF_ECORRUPT,
          "line 2:");
  refused("gpufeed-sums v1 10240 1\n0 0 00000000\n", 10240, GF_ECORRUPT,
          "not after");
  refused("gpufeed-sums v1 10240 2\n1024 1 00000000\n512 1 00000000\n", 10240,
          GF_ECORRUPT, "line 3:");
  refused("gpufeed-sums v1 10240 2\n512 1 00000000\n512 1 00000000\n", 10240,
          GF_ECORRUPT, "not after");
  refused("gpufeed-sums v1 10240 2\n512 600 00000000\n1024 1 00000000\n", 10240,
          GF_ECORRUPT, "not after");
  refused("gpufeed-sums v1 10240 2\n512 512 00000000\n1024 1 00000000\n", 10240,
          GF_ECORRUPT, "line 3:");
  CHECK_OK(parse("gpufeed-sums v1 10240 2\n512 512 00000000\n1536 1 00000000\n",
                 10240, &s));
  gf_wds_sums_free(s);
  refused("gpufeed-sums v1 10240 3\n512 1 00000000\n2048 1 00000000\n"
          "1536 1 00000000\n",
          10240, GF_ECORRUPT, "line 4:");
  /* A member past the shard's end, or whose end overflows. */
  refused("gpufeed-sums v1 10240 1\n9728 513 00000000\n", 10240, GF_ECORRUPT,
          "past the shard's end");
  refused("gpufeed-sums v1 10240 1\n10752 0 00000000\n", 10240, GF_ECORRUPT,
          "past the shard's end");
  refused("gpufeed-sums v1 18446744073709551615 1\n"
          "1024 18446744073709551104 00000000\n",
          UINT64_MAX, GF_ECORRUPT, "line 2:");
  /* A member to the last byte of the largest shard leaves no room for
   * another: the next offset must not wrap around to 512. */
  refused("gpufeed-sums v1 18446744073709551615 2\n"
          "512 18446744073709551103 00000000\n512 0 00000000\n",
          UINT64_MAX, GF_ECORRUPT, "line 3:");

  /* Line counts other than the header's. */
  refused("gpufeed-sums v1 10240 3\n512 1 00000000\n1536 1 00000000\n", 10240,
          GF_ECORRUPT, "2 members listed, the first line gives 3");
  refused("gpufeed-sums v1 10240 1\n", 10240, GF_ECORRUPT,
          "0 members listed, the first line gives 1");
  refused("gpufeed-sums v1 10240 1\n512 1 00000000\n1536 1 00000000\n", 10240,
          GF_ECORRUPT, "line 3: more members than the 1");
  refused("gpufeed-sums v1 10240 0\n512 1 00000000\n", 10240, GF_ECORRUPT,
          "line 2: more members than the 0");
  refused("gpufeed-sums v1 10240 1\n512 1 00000000\n\n", 10240, GF_ECORRUPT,
          "line 3:");
  /* Counts that cannot fit in the text: refused before any allocation. */
  refused("gpufeed-sums v1 10240 1000\n512 1 00000000\n", 10240, GF_ECORRUPT,
          "1000 members cannot fit");
  refused("gpufeed-sums v1 10240 18446744073709551615\n", 10240, GF_ECORRUPT,
          "cannot fit");

  /* A NUL byte: the length, not the NUL, says where the text ends. */
  static const char nul[] = "gpufeed-sums v1 1024 1\n512 1 00\00000000\n";
  gf_error_clear();
  CHECK_ERR(gf_wds_sums_parse("x.sums", nul, sizeof nul - 1, 1024, &s),
            GF_ECORRUPT);
  CHECK(s == NULL);
  CHECK(gf_last_error()->offset == 31);
  CHECK(strstr(gf_last_error()->message, "NUL") != NULL);
  CHECK(!strcmp(gf_last_error()->path, "x.sums"));
  gf_error_clear();
  CHECK_ERR(gf_wds_sums_parse("y.sums", "gpufeed-sums v1 0 0\n", 21, 0, &s),
            GF_ECORRUPT);
  CHECK(!strcmp(gf_last_error()->path, "y.sums"));
  /* Text that stops early is read only as far as len says. */
  CHECK_ERR(gf_wds_sums_parse("y.sums", "gpufeed-sums v1 0 0\n", 12, 0, &s),
            GF_EFORMAT);
  CHECK(!strcmp(gf_last_error()->path, "y.sums"));
  /* Any name is the one recorded. */
  CHECK_ERR(gf_wds_sums_parse("d/train-000001.sums", "x", 1, 0, &s),
            GF_EFORMAT);
  CHECK(!strcmp(gf_last_error()->path, "d/train-000001.sums"));
}

static void write_errors(void) {
  char unset = 'u', *text = &unset;
  size_t len = 99;
  const gf_wds_sum desc[] = {{.offset = 1024, .size = 1},
                             {.offset = 512, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(desc, 2, 10240, &text, &len), -EINVAL);
  CHECK(text == NULL && len == 0);
  const gf_wds_sum equal[] = {{.offset = 512, .size = 1},
                              {.offset = 512, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(equal, 2, 10240, &text, &len), -EINVAL);
  const gf_wds_sum overlap[] = {{.offset = 512, .size = 512},
                                {.offset = 1024, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(overlap, 2, 10240, &text, &len), -EINVAL);
  const gf_wds_sum zero[] = {{.offset = 0, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(zero, 1, 10240, &text, &len), -EINVAL);
  const gf_wds_sum odd[] = {{.offset = 1000, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(odd, 1, 10240, &text, &len), -EINVAL);
  const gf_wds_sum past[] = {{.offset = 9728, .size = 513}};
  CHECK_ERR(gf_wds_sums_write(past, 1, 10240, &text, &len), -EINVAL);
  const gf_wds_sum wrap[] = {{.offset = 1024, .size = UINT64_MAX - 512}};
  CHECK_ERR(gf_wds_sums_write(wrap, 1, UINT64_MAX, &text, &len), -EINVAL);
  const gf_wds_sum last[] = {{.offset = 512, .size = UINT64_MAX - 512},
                             {.offset = 512, .size = 0}};
  CHECK_ERR(gf_wds_sums_write(last, 2, UINT64_MAX, &text, &len), -EINVAL);
  /* The bad entry last: nothing returned either. */
  const gf_wds_sum tail[] = {{.offset = 512, .size = 1},
                             {.offset = 1536, .size = 1},
                             {.offset = 1536, .size = 1}};
  CHECK_ERR(gf_wds_sums_write(tail, 3, 10240, &text, &len), -EINVAL);
  CHECK(text == NULL && len == 0);
  CHECK_OK(gf_wds_sums_write(tail, 2, 10240, &text, &len));
  free(text);
}

static void names(void) {
  char nm[32];
  CHECK_OK(gf_wds_sums_name("d/train-000001.tar", nm, sizeof nm));
  CHECK(!strcmp(nm, "d/train-000001.sums"));
  CHECK_OK(gf_wds_sums_name("https://h/a/s-1.tar", nm, sizeof nm));
  CHECK(!strcmp(nm, "https://h/a/s-1.sums"));
  CHECK_OK(gf_wds_sums_name("s3.tarball", nm, sizeof nm));
  CHECK(!strcmp(nm, "s3.tarball.sums"));
  CHECK_OK(gf_wds_sums_name("shard", nm, sizeof nm));
  CHECK(!strcmp(nm, "shard.sums"));
  CHECK_OK(gf_wds_sums_name("a.TAR", nm, sizeof nm));
  CHECK(!strcmp(nm, "a.TAR.sums"));
  CHECK_OK(gf_wds_sums_name("a.tar.tar", nm, sizeof nm));
  CHECK(!strcmp(nm, "a.tar.sums"));
  CHECK_OK(gf_wds_sums_name(".tar", nm, sizeof nm));
  CHECK(!strcmp(nm, ".sums"));
  CHECK_OK(gf_wds_sums_name("tar", nm, sizeof nm));
  CHECK(!strcmp(nm, "tar.sums"));
  /* Exactly fits, one byte short. */
  CHECK_OK(gf_wds_sums_name("a.tar", nm, 7));
  CHECK(!strcmp(nm, "a.sums"));
  gf_error_clear();
  CHECK_ERR(gf_wds_sums_name("ab.tar", nm, 7), GF_ELIMIT);
  CHECK(!strcmp(gf_last_error()->path, "ab.tar"));
  CHECK_ERR(gf_wds_sums_name("a", nm, 6), GF_ELIMIT);
  CHECK_OK(gf_wds_sums_name("a", nm, 7));
  CHECK(!strcmp(nm, "a.sums"));
  CHECK_ERR(gf_wds_sums_name("", nm, 5), GF_ELIMIT);
  CHECK_OK(gf_wds_sums_name("", nm, 6));
  CHECK(!strcmp(nm, ".sums"));
}

int main(void) {
  round_trips();
  parse_errors();
  write_errors();
  names();
  return gf_test_finish();
}
