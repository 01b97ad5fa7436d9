/* DALI's index files (lib/format/wds_index.c): what the writer writes for
 * a member list (wds2idx.py's grouping, hidden files and its no-dot quirk),
 * read back by the parser; v1.1 read; v1.0 and malformed files refused
 * with the file and line named. */
#include "format/wds_index.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *text, uint64_t shard, gf_wds_index **ix) {
  gf_error_clear();
  return gf_wds_index_parse("x.idx", text, strlen(text), shard, ix);
}

static void refused(const char *text, uint64_t shard, int want,
                    const char *line) {
  gf_wds_index *ix = NULL;
  CHECK_ERR(parse(text, shard, &ix), want);
  CHECK(ix == NULL);
  const char *m = gf_last_error()->message;
  if (!strstr(m, line))
    fprintf(stderr, "message '%s' lacks '%s'\n", m, line);
  CHECK(strstr(m, line) != NULL);
  CHECK(!strcmp(gf_last_error()->path, "x.idx"));
  printf("  refused: %s\n", m);
}

int main(void) {
  const gf_tar_member m[] = {
      {.path = "a/1.jpg", .data_offset = 512, .size = 100},
      {.path = "a/1.Cls", .data_offset = 1024, .size = 1},
      {.path = "a/.hidden.txt", .data_offset = 2048, .size = 3},
      {.path = "a/2.seg.png", .data_offset = 3072, .size = 2000},
      {.path = "dir.v1/noext", .data_offset = 5632, .size = 0},
      {.path = "a/1.txt", .data_offset = 6144, .size = 4},
  };
  char *text;
  size_t len;
  CHECK_OK(gf_wds_index_write("s.tar", m, 6, &text, &len));
  const char *want = "v1.2 4\n"
                     "jpg 512 100 a/1.jpg Cls 1024 1 a/1.Cls\n"
                     "seg.png 3072 2000 a/2.seg.png\n"
                     "dir.v1/noext 5632 0 dir.v1/noext\n"
                     "txt 6144 4 a/1.txt\n";
  if (strcmp(text, want))
    fprintf(stderr, "wrote:\n%s\nwanted:\n%s", text, want);
  CHECK(!strcmp(text, want) && len == strlen(want));

  gf_wds_index *ix = NULL;
  CHECK_OK(parse(text, 6148, &ix));
  CHECK(ix && ix->minor == 2 && ix->sample_count == 4 && ix->entry_count == 5);
  if (ix && ix->entry_count == 5) {
    CHECK(ix->first[0] == 0 && ix->first[1] == 2 && ix->first[4] == 5);
    CHECK(!strcmp(ix->entries[1].ext, "Cls") && ix->entries[1].offset == 1024);
    CHECK(!strcmp(ix->entries[2].filename, "a/2.seg.png"));
    CHECK(ix->entries[2].size == 2000);
  }
  gf_wds_index_free(ix);
  free(text);
  /* One byte short of the last member's end. */
  refused("v1.2 1\ntxt 6144 4 a/1.txt\n", 6147, GF_ECORRUPT, "line 2:");

  /* Nothing left, white space in a name. */
  CHECK_ERR(gf_wds_index_write("s.tar", m + 2, 1, &text, &len), GF_EBADSOURCE);
  const gf_tar_member sp[] = {{.path = "a b.txt", .data_offset = 512}};
  CHECK_ERR(gf_wds_index_write("s.tar", sp, 1, &text, &len), GF_EUNSUPPORTED);

  /* v1.1, CRLF, no final newline. */
  CHECK_OK(
      parse("v1.1 2\r\njpg 512 3 cls 1024 1\r\njpg 2048 5", UINT64_MAX, &ix));
  CHECK(ix && ix->minor == 1 && ix->entry_count == 3 &&
        ix->entries[0].filename == NULL && ix->entries[2].size == 5);
  gf_wds_index_free(ix);
  CHECK_OK(parse("v1.2 0\n", 0, &ix));
  CHECK(ix && ix->sample_count == 0);
  gf_wds_index_free(ix);

  refused("v1.0 1\njpg 512 3\n", UINT64_MAX, GF_EVERSION, "v1.0");
  refused("v2.0 1\n", UINT64_MAX, GF_EVERSION, "v2.0");
  refused("hello\n", UINT64_MAX, GF_EFORMAT, "line 1:");
  refused("v1.2 x\n", UINT64_MAX, GF_EFORMAT, "line 1:");
  refused("", UINT64_MAX, GF_EFORMAT, "line 1:");
  refused("v1.2 2\njpg 512 3 a.jpg\n", UINT64_MAX, GF_ECORRUPT, "2 samples");
  refused("v1.2 1\njpg 512 3 a.jpg\njpg 1024 3 b.jpg\n", UINT64_MAX,
          GF_ECORRUPT, "1 samples");
  refused("v1.2 1\njpg 500 3 a.jpg\n", UINT64_MAX, GF_ECORRUPT, "line 2:");
  refused("v1.2 1\njpg 0 3 a.jpg\n", UINT64_MAX, GF_ECORRUPT, "line 2:");
  refused("v1.2 1\njpg 1000 3 a.jpg\n", UINT64_MAX, GF_ECORRUPT, "line 2:");
  refused("v1.2 2\njpg 512 3 a.jpg\njpg 1024 3\n", UINT64_MAX, GF_ECORRUPT,
          "line 3:");
  refused("v1.2 1\njpg 512 -3 a.jpg\n", UINT64_MAX, GF_ECORRUPT, "line 2:");
  refused("v1.2 1\njpg 512 99999999999999999999 a\n", UINT64_MAX, GF_ECORRUPT,
          "line 2:");
  refused("v1.2 1\njpg 18446744073709551104 1024 a\n", UINT64_MAX, GF_ECORRUPT,
          "line 2:");
  refused("v1.2 2\njpg 512 3 a.jpg\n\njpg 1024 3 b.jpg\n", UINT64_MAX,
          GF_ECORRUPT, "line 3:");
  /* Strings with a NUL: the length says where the text ends. */
  CHECK_ERR(gf_wds_index_parse("x.idx", "v1.2 0\n\0", 8, 0, &ix), GF_ECORRUPT);
  /* The sidecar's name: ".tar" replaced, else ".idx" appended. */
  char nm[32];
  CHECK_OK(gf_wds_sidecar_name("d/train-000001.tar", nm, sizeof nm));
  CHECK(strcmp(nm, "d/train-000001.idx") == 0);
  CHECK_OK(gf_wds_sidecar_name("s3.tarball", nm, sizeof nm));
  CHECK(strcmp(nm, "s3.tarball.idx") == 0);
  CHECK_OK(gf_wds_sidecar_name("a.tar", nm, 6));
  CHECK(strcmp(nm, "a.idx") == 0);
  CHECK_ERR(gf_wds_sidecar_name("ab.tar", nm, 6), GF_ELIMIT);
  return gf_test_finish();
}
