/* Fuzz target: S3's XML replies (lib/io/s3_xml.c).
 *
 * Input: a reply body, read by all four readers (the error document, a
 * ListObjectsV2 page, the UploadId, the CompleteMultipartUpload reply);
 * the same bytes up to their first NUL are escaped, and the escaping read
 * back. The last byte picks the item at which fn stops the page in a
 * second reading, and the small capacities tried.
 * Promises: every output NUL-terminated within its buffer; a reason on
 * every refusal and none on success, never past its cap (the bytes after
 * it untouched), a bounded length; a refused page gives fn nothing and
 * leaves the page zero; the counts match the items given; a prefix has no
 * size nor ETag; a key holds no NUL and ends at key_len; fn's stop is
 * returned and leaves the items before it as they were; the readers agree
 * (an <Error> is an error to gf_s3_xml_error and gf_s3_xml_complete alike,
 * with the same fields, and refused by the others); an UploadId or ETag
 * that fits a large buffer fits a small one exactly when it is shorter;
 * what gf_s3_xml_escape writes reads back as the text. */
#include "fuzz.h"

#include "io/s3_xml.h"

#define WHY_CAP 400
#define CANARY 0xa5

typedef struct seen {
  uint64_t n, objects, prefixes;
  uint64_t stop_at; /* fn returns 7 at this item (from 0) */
  uint64_t hash;    /* of the items given so far */
  uint64_t hash_at; /* the hash when item `mark` was given */
  uint64_t mark;
  size_t body_len;
} seen;

static void mix(seen *s, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    s->hash = (s->hash ^ b[i]) * 0x100000001b3ull;
  s->hash = (s->hash ^ 0xff) * 0x100000001b3ull;
}

static int check_item(void *ctx, const gf_s3_list_item *it) {
  seen *s = ctx;
  FUZZ_ASSERT(it->key && it->etag);
  FUZZ_ASSERT(it->key_len <= s->body_len);
  FUZZ_ASSERT(it->key[it->key_len] == '\0');
  FUZZ_ASSERT(!memchr(it->key, '\0', it->key_len));
  FUZZ_ASSERT(strlen(it->etag) < 1024);
  if (it->is_prefix) {
    FUZZ_ASSERT(it->size == UINT64_MAX && !it->etag[0]);
    s->prefixes++;
  } else {
    s->objects++;
  }
  mix(s, it->key, it->key_len);
  mix(s, it->etag, strlen(it->etag));
  mix(s, &it->size, sizeof it->size);
  mix(s, &it->is_prefix, sizeof it->is_prefix);
  if (s->n == s->mark)
    s->hash_at = s->hash;
  return s->n++ == s->stop_at ? 7 : 0;
}

/* why holds a NUL before cap, nothing written after it, and a reason
 * exactly when rc is a refusal (where cap leaves room for one). */
static void check_why(const uint8_t *why, size_t cap, int rc, bool refused) {
  if (cap) {
    FUZZ_ASSERT(memchr(why, '\0', cap));
    FUZZ_ASSERT(refused ? why[0] != '\0' || cap == 1 : why[0] == '\0');
    FUZZ_ASSERT(strlen((const char *)why) < 256);
  }
  for (size_t i = cap; i < WHY_CAP; i++)
    FUZZ_ASSERT(why[i] == CANARY);
  (void)rc;
}

static bool people_text(const char *s, size_t cap) {
  const char *end = memchr(s, '\0', cap);
  if (!end)
    return false;
  for (; s < end; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return false;
  return true;
}

static void check_error(const gf_s3_error *e, int rc) {
  static const gf_s3_error zero;
  if (rc == 0) {
    FUZZ_ASSERT(memcmp(e, &zero, sizeof *e) == 0);
    return;
  }
  FUZZ_ASSERT(rc == 1);
  FUZZ_ASSERT(people_text(e->code, sizeof e->code));
  FUZZ_ASSERT(people_text(e->message, sizeof e->message));
  FUZZ_ASSERT(people_text(e->resource, sizeof e->resource));
}

/* The page read twice (whole, then stopped at an item), and refused
 * again with a small cap. */
static void list_case(const char *body, size_t size, uint8_t pick,
                      int error_rc) {
  uint8_t why[WHY_CAP];
  gf_s3_list_page *page = fuzz_alloc(sizeof *page);
  seen s = {.stop_at = UINT64_MAX, .mark = pick % 8, .body_len = size};
  memset(why, CANARY, sizeof why);
  memset(page, 'x', sizeof *page);
  size_t cap = 300;
  int rc = gf_s3_xml_list(body, size, check_item, &s, page, (char *)why, cap);
  FUZZ_ASSERT(rc == 0 || rc == -EPROTO || rc == -ENOMEM);
  check_why(why, cap, rc, rc != 0);
  FUZZ_ASSERT(memchr(page->next_token, '\0', sizeof page->next_token));
  FUZZ_ASSERT(page->objects == s.objects && page->prefixes == s.prefixes);
  if (rc != 0) {
    FUZZ_ASSERT(s.n == 0 && !page->truncated && !page->next_token[0]);
  } else {
    FUZZ_ASSERT(!page->truncated || page->next_token[0]);
  }
  if (error_rc == 1)
    FUZZ_ASSERT(rc == -EPROTO &&
                strstr((const char *)why, "an S3 error document"));
  if (rc == 0 && s.n > s.mark) {
    /* Stopped at item `mark`: 7, the items before it as they were. */
    seen t = {.stop_at = s.mark, .mark = s.mark, .body_len = size};
    size_t small = 1 + pick % 64;
    memset(why, CANARY, sizeof why);
    int rc2 =
        gf_s3_xml_list(body, size, check_item, &t, page, (char *)why, small);
    FUZZ_ASSERT(rc2 == 7 && t.n == s.mark + 1 && t.hash == s.hash_at);
    FUZZ_ASSERT(page->objects + page->prefixes == t.n);
    FUZZ_ASSERT(page->objects == t.objects);
    check_why(why, small, rc2, false);
  }
  if (rc != 0) {
    /* A small cap cuts the same reason. */
    size_t small = pick % 48;
    uint8_t why2[WHY_CAP];
    memset(why2, CANARY, sizeof why2);
    int rc2 = gf_s3_xml_list(body, size, NULL, NULL, NULL, (char *)why2, small);
    FUZZ_ASSERT(rc2 == rc);
    check_why(why2, small, rc2, true);
    if (small)
      FUZZ_ASSERT(strncmp((const char *)why2, (const char *)why, small - 1) ==
                  0);
  }
  free(page);
}

static void upload_case(const char *body, size_t size, uint8_t pick,
                        int error_rc) {
  uint8_t why[WHY_CAP];
  char *id = fuzz_alloc(size + 1);
  memset(why, CANARY, sizeof why);
  int rc = gf_s3_xml_upload_id(body, size, id, size + 1, (char *)why, 200);
  FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
  check_why(why, 200, rc, rc != 0);
  FUZZ_ASSERT(memchr(id, '\0', size + 1));
  size_t n = strlen(id);
  FUZZ_ASSERT(rc == 0 ? n > 0 : n == 0);
  if (error_rc == 1)
    FUZZ_ASSERT(rc == -EPROTO);
  /* A small buffer: the same id exactly when it fits. */
  char small[64];
  size_t cap = pick % sizeof small;
  memset(why, CANARY, sizeof why);
  memset(small, 'x', sizeof small);
  int rc2 = gf_s3_xml_upload_id(body, size, small, cap, (char *)why, 100);
  check_why(why, 100, rc2, rc2 != 0);
  if (rc == 0 && n < cap)
    FUZZ_ASSERT(rc2 == 0 && strcmp(small, id) == 0);
  else
    FUZZ_ASSERT(rc2 == -EPROTO && (cap == 0 || small[0] == '\0'));
  for (size_t i = cap; i < sizeof small; i++)
    FUZZ_ASSERT(small[i] == 'x');
  free(id);
}

static void complete_case(const char *body, size_t size, uint8_t pick,
                          const gf_s3_error *error, int error_rc) {
  uint8_t why[WHY_CAP];
  char *etag = fuzz_alloc(size + 1);
  gf_s3_error *e = fuzz_alloc(sizeof *e);
  memset(why, CANARY, sizeof why);
  memset(e, 'x', sizeof *e);
  int rc = gf_s3_xml_complete(body, size, etag, size + 1, e, (char *)why, 200);
  FUZZ_ASSERT(rc == 0 || rc == 1 || rc == -EPROTO);
  check_why(why, 200, rc, rc < 0);
  FUZZ_ASSERT(memchr(etag, '\0', size + 1));
  FUZZ_ASSERT(rc == 0 ? etag[0] != '\0' : etag[0] == '\0');
  check_error(e, rc == 1);
  /* The same answer as gf_s3_xml_error's, and the same fields. */
  FUZZ_ASSERT((rc == 1) == (error_rc == 1));
  if (rc == 1)
    FUZZ_ASSERT(memcmp(e, error, sizeof *e) == 0);
  /* Without a place for the ETag or the error: the same answer. */
  memset(why, CANARY, sizeof why);
  int rc2 = gf_s3_xml_complete(body, size, NULL, 0, NULL, (char *)why, 200);
  FUZZ_ASSERT(rc2 == rc);
  /* A small buffer: the same ETag exactly when it fits. */
  char small[48];
  size_t cap = pick % sizeof small;
  rc2 = gf_s3_xml_complete(body, size, small, cap, NULL, (char *)why, 200);
  if (rc != 0 || strlen(etag) < cap)
    FUZZ_ASSERT(rc2 == rc && (rc != 0 || strcmp(small, etag) == 0));
  else
    FUZZ_ASSERT(rc2 == -EPROTO);
  free(e);
  free(etag);
}

static void escape_case(const uint8_t *data, size_t size, uint8_t pick) {
  const uint8_t *nul = memchr(data, '\0', size);
  size_t n = nul ? (size_t)(nul - data) : size;
  if (n > (1u << 16))
    return;
  char *text = fuzz_alloc(n + 1);
  memcpy(text, data, n);
  text[n] = '\0';
  size_t cap = 6 * n + 1;
  char *esc = fuzz_alloc(cap);
  size_t need = gf_s3_xml_escape(text, esc, cap);
  FUZZ_ASSERT(need == strlen(esc) && need >= n && need < cap);
  FUZZ_ASSERT(!strpbrk(esc, "<>\"'"));
  /* Cut: a prefix, the need unchanged. */
  size_t small = 1 + pick % (need + 1);
  char *cut = fuzz_alloc(small + 1);
  cut[small] = 'x';
  FUZZ_ASSERT(gf_s3_xml_escape(text, cut, small) == need);
  size_t cn = strlen(cut);
  FUZZ_ASSERT(cn < small && memcmp(cut, esc, cn) == 0 && cut[small] == 'x');
  /* Cut no more than the unit that did not fit (an entity: 6 bytes) and
   * a UTF-8 sequence begun before it (3). */
  FUZZ_ASSERT(cn + 9 >= small);
  /* Read back as an ETag: the text, where XML can carry it (no CR, which
   * reads as a line end). */
  if (n && !memchr(text, '\r', n)) {
    static const char head[] = "<CompleteMultipartUploadResult><ETag>",
                      tail[] = "</ETag></CompleteMultipartUploadResult>";
    size_t bn = sizeof head - 1 + need + sizeof tail - 1;
    char *body = fuzz_alloc(bn);
    memcpy(body, head, sizeof head - 1);
    memcpy(body + sizeof head - 1, esc, need);
    memcpy(body + sizeof head - 1 + need, tail, sizeof tail - 1);
    char *back = fuzz_alloc(n + 1);
    char why[200];
    int rc = gf_s3_xml_complete(body, bn, back, n + 1, NULL, why, sizeof why);
    FUZZ_ASSERT(rc == 0 && strcmp(back, text) == 0);
    free(back);
    free(body);
  }
  free(cut);
  free(esc);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > GF_S3_XML_MAX)
    return 0;
  /* An exact-size copy, so that a read past the body is seen. */
  char *body = fuzz_alloc(size);
  memcpy(body, data, size);
  uint8_t pick = size ? data[size - 1] : 0;
  gf_s3_error *e = fuzz_alloc(sizeof *e);
  memset(e, 'x', sizeof *e);
  int error_rc = gf_s3_xml_error(body, size, e);
  check_error(e, error_rc);
  list_case(body, size, pick, error_rc);
  upload_case(body, size, pick, error_rc);
  complete_case(body, size, pick, e, error_rc);
  escape_case(data, size, pick);
  free(e);
  free(body);
  return 0;
}
