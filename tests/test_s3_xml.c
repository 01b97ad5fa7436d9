/* S3's XML replies (lib/io/s3_xml.c), from bodies as moto 5.2.1 wrote them
 * (captured from its server, byte for byte) and as AWS's API reference
 * shows them (pretty-printed, ETags as &quot;):
 *  - ListObjectsV2 pages: items in document order, sizes, ETags, common
 *    prefixes, the continuation token; the same keys from a plain page and
 *    an encoding-type=url one (moto writes EncodingType after the keys);
 *    '+', %2F, %25, UTF-8; entities and character references; <Prefix/>;
 *    unknown elements nested anywhere; namespace prefixes; fn stopping;
 *  - error documents (moto's NoSuchKey, AWS's with Resource, a
 *    SignatureDoesNotMatch with kilobytes of extra fields, a message cut
 *    on a UTF-8 boundary, control bytes) and bodies that are not one;
 *  - InitiateMultipartUpload's UploadId, CompleteMultipartUpload's result
 *    (moto's and S3's root) and its 200-with-<Error>; escaping;
 *  - every refusal: each -EPROTO, fn never called, and a why that quotes
 *    at most 40 bytes of the body, control bytes as '?';
 *  - 16 MiB bodies built to be slow (deep, long, many tokens) parse in
 *    linear time. */
#include "testutil.h"

#include "io/s3_xml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- bodies -------------------------------------------------------------- */

#define MOTO_ETAG "\"99fb31087791f6317ad7c6da1433f172\""
#define MOTO_ITEM_TAIL                                                         \
  "<LastModified>2026-11-28T05:28:36.000Z</LastModified><ETag>" MOTO_ETAG      \
  "</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><Size>15</Size>"         \
  "<StorageClass>STANDARD</StorageClass></Contents>"

/* GET /train?list-type=2&max-keys=3&delimiter=/&prefix=photos/ */
static const char MOTO_PLAIN[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<IsTruncated>true</IsTruncated>"
    "<Contents><Key>photos/\"q'\".jpg</Key>" MOTO_ITEM_TAIL
    "<Contents><Key>photos/a b+c%.jpg</Key>" MOTO_ITEM_TAIL
    "<Contents><Key>photos/caf\xc3\xa9 &amp; &lt;x&gt;.png</Key>" MOTO_ITEM_TAIL
    "<Name>train</Name><Prefix>photos/</Prefix><Delimiter>/</Delimiter>"
    "<MaxKeys>3</MaxKeys><KeyCount>3</KeyCount>"
    "<NextContinuationToken>ff04a0491f16ba58cf0e67856aaaf2f5"
    "</NextContinuationToken></ListBucketResult>";

/* The same with max-keys=4&encoding-type=url (what botocore asks). */
static const char MOTO_URL[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<IsTruncated>true</IsTruncated>"
    "<Contents><Key>photos/%22q%27%22.jpg</Key>" MOTO_ITEM_TAIL
    "<Contents><Key>photos/a%20b%2Bc%25.jpg</Key>" MOTO_ITEM_TAIL
    "<Contents><Key>photos/caf%C3%A9%20%26%20%3Cx%3E.png</Key>" MOTO_ITEM_TAIL
    "<Name>train</Name><Prefix>photos/</Prefix><Delimiter>/</Delimiter>"
    "<MaxKeys>4</MaxKeys><CommonPrefixes><Prefix>photos/sub/</Prefix>"
    "</CommonPrefixes><EncodingType>url</EncodingType><KeyCount>4</KeyCount>"
    "<NextContinuationToken>0a93c2d7cffda5924cc0702053731e55"
    "</NextContinuationToken></ListBucketResult>";

/* fetch-owner=true&start-after=a&delimiter=/&encoding-type=url */
static const char MOTO_OWNER[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<IsTruncated>false</IsTruncated><Contents><Key>readme.txt</Key>"
    "<LastModified>2026-11-28T05:21:45.000Z</LastModified><ETag>" MOTO_ETAG
    "</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><Size>15</Size>"
    "<StorageClass>STANDARD</StorageClass><Owner><DisplayName>webfile"
    "</DisplayName><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6"
    "caea54ba06a</ID></Owner></Contents><Name>train</Name><Prefix/>"
    "<Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys><CommonPrefixes><Prefix>"
    "data/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>photos/</Prefix>"
    "</CommonPrefixes><EncodingType>url</EncodingType><KeyCount>3</KeyCount>"
    "<StartAfter>a</StartAfter></ListBucketResult>";

/* As AWS's reference shows a page: indented, ETags as &quot;, and with
 * encoding-type=url a space as '+'. The unknown parts nest. */
static const char AWS_PAGE[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>example-bucket</Name>\n"
    "  <Prefix>photos%2F2006%2F</Prefix>\n"
    "  <EncodingType>url</EncodingType>\n"
    "  <KeyCount>3</KeyCount>\n"
    "  <MaxKeys>3</MaxKeys>\n"
    "  <Delimiter>%2F</Delimiter>\n"
    "  <IsTruncated>true</IsTruncated>\n"
    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="
    "</NextContinuationToken>\n"
    "  <Contents>\n"
    "    <Key>photos%2F2006%2Fmy+image+%2B+100%25.jpg</Key>\n"
    "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n"
    "    <ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm>\n"
    "    <ChecksumType>FULL_OBJECT</ChecksumType>\n"
    "    <Size>434234</Size>\n"
    "    <StorageClass>GLACIER</StorageClass>\n"
    "    <RestoreStatus>\n"
    "      <IsRestoreInProgress>false</IsRestoreInProgress>\n"
    "      <RestoreExpiryDate>2009-10-20T00:00:00.000Z</RestoreExpiryDate>\n"
    "    </RestoreStatus>\n"
    "    <Owner>\n"
    "      <ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a"
    "</ID>\n"
    "      <DisplayName>mtd@amazon.com</DisplayName>\n"
    "    </Owner>\n"
    "  </Contents>\n"
    "  <!-- a comment, and CDATA: -->\n"
    "  <Contents>\n"
    "    <Key><![CDATA[photos%2F2006%2Fcaf%C3%A9&.jpg]]></Key>\n"
    "    <Size>0</Size>\n"
    "  </Contents>\n"
    "  <CommonPrefixes>\n"
    "    <Prefix>photos%2F2006%2Ffeb%2F</Prefix>\n"
    "  </CommonPrefixes>\n"
    "</ListBucketResult>\n";

static const char MOTO_NOSUCHKEY[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Error><Code>NoSuchKey</Code>"
    "<Message>The specified key does not exist.</Message><Key>nope</Key>"
    "<RequestId>qa5fHac2tYC3xave5M00jSQpS0wtuJMcxjcGqKxZgVhjd3xqDWhP"
    "</RequestId><HostId>9Gjjt1m+cjU4OPvX9O9/8RuvnG41MRb/18Oux2o5H5MY7ISNTlXN"
    "+Dz9IG62/ILVxhAGI0qyPfg=</HostId></Error>";

static const char AWS_NOSUCHKEY[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error>\n"
    "  <Code>NoSuchKey</Code>\n"
    "  <Message>The resource you requested does not exist</Message>\n"
    "  <Resource>/mybucket/myfoto.jpg</Resource>\n"
    "  <RequestId>4442587FB7D0A2F9</RequestId>\n"
    "</Error>";

static const char MOTO_INITIATE[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/"
    "2006-03-01/\"><Bucket>train</Bucket><Key>big/obj</Key><UploadId>"
    "bIRjbmqgi8VgdFBy3d3pzEEmIu5IICAU6kOmbxEL78ZGp93DQmD4cH7XRg</UploadId>"
    "</InitiateMultipartUploadResult>";

static const char MOTO_COMPLETE[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<CompleteMultipartUploadResponse xmlns=\"http://s3.amazonaws.com/doc/"
    "2006-03-01/\"><Location>http://train.s3.amazonaws.com/big/obj</Location>"
    "<Bucket>train</Bucket><Key>big/obj</Key>"
    "<ETag>\"cb8d7289925309a05b2db09b7709c264-1\"</ETag>"
    "</CompleteMultipartUploadResponse>";

static const char AWS_COMPLETE[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<CompleteMultipartUploadResult "
    "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Location>http://Example-Bucket.s3.us-east-1.amazonaws.com/"
    "Example-Object</Location>\n"
    "  <Bucket>Example-Bucket</Bucket>\n"
    "  <Key>Example-Object</Key>\n"
    "  <ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>\n"
    "</CompleteMultipartUploadResult>";

/* S3 keeps a slow CompleteMultipartUpload alive with whitespace after its
 * 200, and may then fail. */
static const char AWS_COMPLETE_ERROR[] =
    "      \n     \n"
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error>\n"
    "  <Code>InternalError</Code>\n"
    "  <Message>We encountered an internal error. Please try again.</Message>\n"
    "  <RequestId>656c76696e6727732072657175657374</RequestId>\n"
    "  "
    "<HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</"
    "HostId>\n"
    "</Error>";

/* ---- helpers ------------------------------------------------------------- */

#define MAX_ITEMS 8

typedef struct got {
  int n;
  int stop_at; /* fn returns 42 at this item (from 0); -1: never */
  char key[MAX_ITEMS][300];
  size_t key_len[MAX_ITEMS];
  uint64_t size[MAX_ITEMS];
  char etag[MAX_ITEMS][80];
  bool prefix[MAX_ITEMS];
} got;

static int collect(void *ctx, const gf_s3_list_item *it) {
  got *g = ctx;
  CHECK(it->key && it->etag);
  CHECK(it->key[it->key_len] == '\0' && strlen(it->key) == it->key_len);
  if (g->n < MAX_ITEMS) {
    snprintf(g->key[g->n], sizeof g->key[0], "%s", it->key);
    g->key_len[g->n] = it->key_len;
    g->size[g->n] = it->size;
    snprintf(g->etag[g->n], sizeof g->etag[0], "%s", it->etag);
    g->prefix[g->n] = it->is_prefix;
  }
  return g->n++ == g->stop_at ? 42 : 0;
}

static char why[256];
static gf_s3_list_page page;

/* Lists body (len: strlen) into a fresh g. */
static int list_n(const char *body, size_t len, got *g) {
  memset(g, 0, sizeof *g);
  g->stop_at = -1;
  memset(why, 'x', sizeof why);
  memset(&page, 'x', sizeof page);
  int rc = gf_s3_xml_list(body, len, collect, g, &page, why, sizeof why);
  CHECK(memchr(why, '\0', sizeof why) != NULL);
  CHECK(memchr(page.next_token, '\0', sizeof page.next_token) != NULL);
  if (rc == 0 || rc == 42)
    CHECK(page.objects + page.prefixes == (uint64_t)g->n);
  return rc;
}

static int list(const char *body, got *g) {
  return list_n(body, strlen(body), g);
}

static bool is(const char *s, const char *want) {
  if (strcmp(s, want) == 0)
    return true;
  fprintf(stderr, "  '%s', wanted '%s'\n", s, want);
  return false;
}

static bool has(const char *s, const char *part) {
  if (strstr(s, part))
    return true;
  fprintf(stderr, "  '%s' lacks '%s'\n", s, part);
  return false;
}

/* A refusal: -EPROTO, a reason holding `part`, no item given, the page
 * zero. */
static bool refused_n(const char *body, size_t len, const char *part) {
  got g;
  int rc = list_n(body, len, &g);
  bool ok = rc == -EPROTO && g.n == 0 && !page.truncated &&
            !page.next_token[0] && page.objects == 0 && page.prefixes == 0 &&
            why[0] && (!part || has(why, part));
  if (!ok)
    fprintf(stderr, "  rc %d, %d items, why '%s'\n", rc, g.n, why);
  return ok;
}

static bool refused(const char *body, const char *part) {
  return refused_n(body, strlen(body), part);
}

/* A page of one Contents: <Key>key</Key><Size>size</Size>, and `extra`
 * at the top (an EncodingType...). */
static char one_buf[1 << 16];
static const char *one(const char *key, const char *size, const char *extra) {
  snprintf(one_buf, sizeof one_buf,
           "<ListBucketResult>%s<Contents><Key>%s</Key><Size>%s</Size>"
           "</Contents></ListBucketResult>",
           extra, key, size);
  return one_buf;
}

/* The longest run of c in s. */
static size_t run_of(const char *s, char c) {
  size_t best = 0, cur = 0;
  for (; *s; s++) {
    cur = *s == c ? cur + 1 : 0;
    best = cur > best ? cur : best;
  }
  return best;
}

/* ---- ListObjectsV2 ------------------------------------------------------- */

static const char *const MOTO_KEYS[] = {
    "photos/\"q'\".jpg", "photos/a b+c%.jpg", "photos/caf\xc3\xa9 & <x>.png"};

static void moto_pages(void) {
  got g;
  /* Plain: the keys as XML gives them ('+' and '%' are themselves). */
  CHECK_OK(list(MOTO_PLAIN, &g));
  CHECK(g.n == 3 && page.objects == 3 && page.prefixes == 0);
  for (int i = 0; i < 3 && i < g.n; i++) {
    CHECK(is(g.key[i], MOTO_KEYS[i]) && g.key_len[i] == strlen(MOTO_KEYS[i]));
    CHECK(g.size[i] == 15 && !g.prefix[i]);
    CHECK(is(g.etag[i], MOTO_ETAG));
  }
  CHECK(page.truncated &&
        is(page.next_token, "ff04a0491f16ba58cf0e67856aaaf2f5"));

  /* encoding-type=url, said after the keys: the same keys, then the
   * prefix, in document order. */
  CHECK_OK(list(MOTO_URL, &g));
  CHECK(g.n == 4 && page.objects == 3 && page.prefixes == 1);
  for (int i = 0; i < 3 && i < g.n; i++)
    CHECK(is(g.key[i], MOTO_KEYS[i]) && g.size[i] == 15 && !g.prefix[i]);
  CHECK(is(g.key[3], "photos/sub/") && g.prefix[3] && g.size[3] == UINT64_MAX &&
        is(g.etag[3], ""));
  CHECK(page.truncated &&
        is(page.next_token, "0a93c2d7cffda5924cc0702053731e55"));

  /* Owner nested in Contents, <Prefix/> at the top, two prefixes, not
   * truncated, no token. */
  CHECK_OK(list(MOTO_OWNER, &g));
  CHECK(g.n == 3 && page.objects == 1 && page.prefixes == 2);
  CHECK(is(g.key[0], "readme.txt") && g.size[0] == 15 && !g.prefix[0]);
  CHECK(is(g.key[1], "data/") && g.prefix[1] && is(g.key[2], "photos/") &&
        g.prefix[2]);
  CHECK(!page.truncated && is(page.next_token, ""));

  /* fn's nonzero return stops the page and is returned; the counts are
   * of the items given. */
  memset(&g, 0, sizeof g);
  g.stop_at = 1;
  CHECK(gf_s3_xml_list(MOTO_URL, strlen(MOTO_URL), collect, &g, &page, why,
                       sizeof why) == 42);
  CHECK(g.n == 2 && page.objects == 2 && page.prefixes == 0);
  CHECK(page.truncated && page.next_token[0]);

  /* fn, page and why may be NULL. */
  CHECK(gf_s3_xml_list(MOTO_URL, strlen(MOTO_URL), NULL, NULL, &page, NULL,
                       0) == 0);
  CHECK(page.objects == 3 && page.prefixes == 1);
  CHECK(gf_s3_xml_list(MOTO_URL, strlen(MOTO_URL), NULL, NULL, NULL, NULL, 0) ==
        0);
  CHECK(gf_s3_xml_list("<x", 2, NULL, NULL, NULL, NULL, 0) == -EPROTO);
}

static void aws_pages(void) {
  got g;
  CHECK_OK(list(AWS_PAGE, &g));
  CHECK(g.n == 3 && page.objects == 2 && page.prefixes == 1);
  /* '+' a space, %2B a '+', %25 a '%', %2F a '/'. */
  CHECK(is(g.key[0], "photos/2006/my image + 100%.jpg"));
  CHECK(g.size[0] == 434234 &&
        is(g.etag[0], "\"fba9dede5f27731c9771645a39863328\""));
  /* CDATA is text, '&' in it too; then url decoding. No ETag: "". */
  CHECK(is(g.key[1], "photos/2006/caf\xc3\xa9&.jpg") && g.size[1] == 0 &&
        is(g.etag[1], ""));
  CHECK(is(g.key[2], "photos/2006/feb/") && g.prefix[2]);
  CHECK(page.truncated &&
        is(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="));

  /* Names matched by their local part; the namespace's prefix and its
   * declaration ignored, but an end tag must match its start as written. */
  const char *ns =
      "<s3:ListBucketResult xmlns:s3='http://s3.amazonaws.com/doc/2006-03-01/'"
      "><s3:Contents><s3:Key>k</s3:Key><s3:Size>7</s3:Size></s3:Contents>"
      "<s3:IsTruncated>false</s3:IsTruncated></s3:ListBucketResult>";
  CHECK_OK(list(ns, &g));
  CHECK(g.n == 1 && is(g.key[0], "k") && g.size[0] == 7);
  CHECK(refused("<s3:ListBucketResult><s3:Contents><Key>k</s3:Key>"
                "</s3:Contents></s3:ListBucketResult>",
                "closes"));
  /* Known names in unknown places are not items; case counts. */
  CHECK_OK(list("<ListBucketResult><Other><Contents><Key>k</Key></Contents>"
                "</Other><contents><key>k</key></contents>"
                "<Contents><Key>real</Key><Size>1</Size><Owner><Key>no</Key>"
                "</Owner></Contents></ListBucketResult>",
                &g));
  CHECK(g.n == 1 && is(g.key[0], "real"));
  /* An empty page; a Contents with an empty key; a big Size. */
  CHECK_OK(list("<ListBucketResult/>", &g));
  CHECK(g.n == 0 && !page.truncated);
  CHECK_OK(list(one("", "18446744073709551615", ""), &g));
  CHECK(g.n == 1 && is(g.key[0], "") && g.key_len[0] == 0 &&
        g.size[0] == UINT64_MAX && !g.prefix[0]);
  CHECK_OK(list(one("k", " 0012 ", ""), &g));
  CHECK(g.n == 1 && g.size[0] == 12);
  /* A token of 2047 bytes fits. */
  static char body[8192], tok[4096];
  memset(tok, 'T', 2047);
  tok[2047] = '\0';
  snprintf(body, sizeof body,
           "<ListBucketResult><IsTruncated>true</IsTruncated>"
           "<NextContinuationToken>%s</NextContinuationToken>"
           "</ListBucketResult>",
           tok);
  CHECK_OK(list(body, &g));
  CHECK(page.truncated && strlen(page.next_token) == 2047);
}

static void keys(void) {
  got g;
  /* The five entities, decimal and hex references as UTF-8, leading
   * zeros. */
  CHECK_OK(list(one("&amp;&lt;&gt;&quot;&apos;&#x41;&#233;&#x1F600;&#0065;"
                    "&#x00000042;",
                    "1", ""),
                &g));
  CHECK(g.n == 1 && is(g.key[0], "&<>\"'A\xc3\xa9\xf0\x9f\x98\x80"
                                 "AB"));
  /* Line ends in text are "\n"; a reference to CR is a CR. */
  CHECK_OK(list(one("a\r\nb\rc\nd&#13;e", "1", ""), &g));
  CHECK(g.n == 1 && is(g.key[0], "a\nb\nc\nd\re"));
  /* Whitespace in a key is the key's. */
  CHECK_OK(list(one("  sp  ", "1", ""), &g));
  CHECK(is(g.key[0], "  sp  "));
  /* Without EncodingType, '%' and '+' are themselves, %00 included. */
  CHECK_OK(list(one("a%2Fb+c%00%zz", "1", ""), &g));
  CHECK(is(g.key[0], "a%2Fb+c%00%zz"));
  /* With it: percent-decoding after the entities (a %26amp; is "&amp;"). */
  const char *url = "<EncodingType>url</EncodingType>";
  CHECK_OK(list(one("a%2fb+c%25%2B%26amp%3B&#x25;41", "1", url), &g));
  CHECK(is(g.key[0], "a/b c%+&amp;A"));
  /* Empty keys, with and without url (no buffer ever needed). */
  CHECK_OK(list("<ListBucketResult><EncodingType>url</EncodingType>"
                "<Contents><Key/><Size>1</Size></Contents><CommonPrefixes>"
                "<Prefix></Prefix></CommonPrefixes></ListBucketResult>",
                &g));
  CHECK(g.n == 2 && is(g.key[0], "") && g.key_len[0] == 0 && is(g.key[1], "") &&
        g.prefix[1]);
  /* Non-ASCII written as bytes, not escaped. */
  CHECK_OK(list(one("\xe6\x97\xa5\xe6\x9c\xac/%E2%82%AC", "1", url), &g));
  CHECK(is(g.key[0], "\xe6\x97\xa5\xe6\x9c\xac/\xe2\x82\xac"));
  /* A key longer than any buffer: 200,000 bytes, decoded. */
  size_t n = 200000;
  char *big = malloc(n * 3 + 256), *k = malloc(n * 3 + 1);
  CHECK(big && k);
  if (big && k) {
    for (size_t i = 0; i < n; i++)
      memcpy(k + 3 * i, "%41", 3);
    k[3 * n] = '\0';
    int len = sprintf(big,
                      "<ListBucketResult><EncodingType>url</EncodingType>"
                      "<Contents><Key>%s</Key><Size>1</Size></Contents>"
                      "</ListBucketResult>",
                      k);
    memset(&g, 0, sizeof g);
    g.stop_at = -1;
    size_t got_len = 0;
    CHECK(gf_s3_xml_list(big, (size_t)len, collect, &g, &page, why,
                         sizeof why) == 0);
    got_len = g.key_len[0];
    CHECK(g.n == 1 && got_len == n && run_of(g.key[0], 'A') == 299);
  }
  free(big);
  free(k);
}

/* ---- error documents ----------------------------------------------------- */

static void errors(void) {
  gf_s3_error e;
  CHECK(gf_s3_xml_error(MOTO_NOSUCHKEY, strlen(MOTO_NOSUCHKEY), &e) == 1);
  CHECK(is(e.code, "NoSuchKey") &&
        is(e.message, "The specified key does not exist.") &&
        is(e.resource, ""));
  CHECK(gf_s3_xml_error(AWS_NOSUCHKEY, strlen(AWS_NOSUCHKEY), &e) == 1);
  CHECK(is(e.code, "NoSuchKey") &&
        is(e.message, "The resource you requested does not exist") &&
        is(e.resource, "/mybucket/myfoto.jpg"));
  CHECK(gf_s3_xml_error(AWS_NOSUCHKEY, strlen(AWS_NOSUCHKEY), NULL) == 1);

  /* AWS's SignatureDoesNotMatch: the request it signed, kilobytes of it. */
  static char sig[16384];
  char *p =
      sig + sprintf(sig, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
                         "<Code>SignatureDoesNotMatch</Code><Message>The "
                         "request signature we calculated does not match the "
                         "signature you provided. Check your key and signing "
                         "method.</Message><AWSAccessKeyId>AKIAIOSFODNN7EXAMP"
                         "LE</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256\n"
                         "20130524T000000Z\n20130524/us-east-1/s3/aws4_request"
                         "\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb"
                         "2dc43964946972</StringToSign><SignatureProvided>f0e8"
                         "bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6"
                         "036bdb41</SignatureProvided><StringToSignBytes>");
  for (int i = 0; i < 1200; i++)
    p += sprintf(p, "%02x ", i & 0xff);
  p += sprintf(p, "</StringToSignBytes><CanonicalRequest>GET\n/test.txt\n\n"
                  "host:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                  "</CanonicalRequest><CanonicalRequestBytes>");
  for (int i = 0; i < 1200; i++)
    p += sprintf(p, "%02x ", (i * 7) & 0xff);
  sprintf(p, "</CanonicalRequestBytes><RequestId>4442587FB7D0A2F9</RequestId>"
             "<HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7==</HostId></Error>");
  CHECK(strlen(sig) > 8000);
  CHECK(gf_s3_xml_error(sig, strlen(sig), &e) == 1);
  CHECK(is(e.code, "SignatureDoesNotMatch") &&
        has(e.message, "does not match") && is(e.resource, ""));

  /* A message longer than its field: cut whole UTF-8 sequences (255 "é",
   * "xy" then 300 "é": 511 bytes would end with half an "é", dropped).
   * Control bytes and references to them as '?'. */
  static char body[4096];
  p = body + sprintf(body, "<Error><Code>C&#9;d</Code><Message>xy");
  for (int i = 0; i < 300; i++)
    p += sprintf(p, "\xc3\xa9");
  sprintf(p, "</Message><Resource>/b/k&#1;\x7f</Resource></Error>");
  CHECK(gf_s3_xml_error(body, strlen(body), &e) == 1);
  CHECK(is(e.code, "C?d") && is(e.resource, "/b/k??"));
  CHECK(strlen(e.message) == 510 && e.message[0] == 'x');
  CHECK((unsigned char)e.message[508] == 0xc3 &&
        (unsigned char)e.message[509] == 0xa9);

  /* No Code: still an error document. */
  CHECK(gf_s3_xml_error("<Error/>", 8, &e) == 1 && is(e.code, ""));

  /* Not one: zeroed. */
  static const char *const not_error[] = {
      MOTO_PLAIN,
      "",
      "   ",
      "Not Found",
      "<html><body>502 Bad Gateway</body></html>",
      "<!DOCTYPE html><html></html>",
      "<Error><Code>NoSuchKey</Code>",         /* cut */
      "<Error><Code>A<b/></Code></Error>",     /* not text */
      "<Error><Code>A</Code></Error><Error/>", /* two roots */
      "<ErrorResponse><Error><Code>A</Code></Error></ErrorResponse>",
  };
  for (size_t i = 0; i < sizeof not_error / sizeof not_error[0]; i++) {
    memset(&e, 'x', sizeof e);
    CHECK(gf_s3_xml_error(not_error[i], strlen(not_error[i]), &e) == 0);
    static const gf_s3_error zero;
    CHECK(memcmp(&e, &zero, sizeof e) == 0);
  }
  CHECK(gf_s3_xml_error(NULL, 0, &e) == 0);

  /* A list asked of an error: the code in why. */
  CHECK(refused(MOTO_NOSUCHKEY, "an S3 error document (code \"NoSuchKey\")"));
}

/* ---- multipart ----------------------------------------------------------- */

static void multipart(void) {
  char id[128], etag[80];
  memset(why, 'x', sizeof why);
  CHECK_OK(gf_s3_xml_upload_id(MOTO_INITIATE, strlen(MOTO_INITIATE), id,
                               sizeof id, why, sizeof why));
  CHECK(is(id, "bIRjbmqgi8VgdFBy3d3pzEEmIu5IICAU6kOmbxEL78ZGp93DQmD4cH7XRg"));
  CHECK(is(why, ""));
  /* Exactly fits (58 bytes and the NUL); one byte short: refused. */
  size_t idn = strlen(id);
  CHECK(idn == 58);
  CHECK_OK(gf_s3_xml_upload_id(MOTO_INITIATE, strlen(MOTO_INITIATE), id,
                               idn + 1, why, sizeof why));
  CHECK(gf_s3_xml_upload_id(MOTO_INITIATE, strlen(MOTO_INITIATE), id, idn, why,
                            sizeof why) == -EPROTO);
  CHECK(has(why, "longer") && is(id, ""));
  static const struct {
    const char *body, *why;
  } bad_id[] = {
      {"<InitiateMultipartUploadResult><UploadId/>"
       "</InitiateMultipartUploadResult>",
       "empty"},
      {"<InitiateMultipartUploadResult><Bucket>b</Bucket>"
       "</InitiateMultipartUploadResult>",
       "without UploadId"},
      {"<InitiateMultipartUploadResult><UploadId>a</UploadId><UploadId>b"
       "</UploadId></InitiateMultipartUploadResult>",
       "second"},
      {"<Error><Code>NoSuchBucket</Code></Error>", "NoSuchBucket"},
      {"<CreateBucketResult/>", "CreateBucketResult"},
      {"<InitiateMultipartUploadResult><UploadId>abc</UploadId>", "ends"},
  };
  for (size_t i = 0; i < sizeof bad_id / sizeof bad_id[0]; i++) {
    strcpy(id, "stale");
    CHECK(gf_s3_xml_upload_id(bad_id[i].body, strlen(bad_id[i].body), id,
                              sizeof id, why, sizeof why) == -EPROTO);
    CHECK(has(why, bad_id[i].why) && is(id, ""));
  }

  /* moto's root and S3's. */
  gf_s3_error e;
  CHECK(gf_s3_xml_complete(MOTO_COMPLETE, strlen(MOTO_COMPLETE), etag,
                           sizeof etag, &e, why, sizeof why) == 0);
  CHECK(is(etag, "\"cb8d7289925309a05b2db09b7709c264-1\"") && is(e.code, ""));
  CHECK(gf_s3_xml_complete(AWS_COMPLETE, strlen(AWS_COMPLETE), etag,
                           sizeof etag, &e, why, sizeof why) == 0);
  CHECK(is(etag, "\"3858f62230ac3c915f300c664312c11f-9\""));
  CHECK(gf_s3_xml_complete(AWS_COMPLETE, strlen(AWS_COMPLETE), NULL, 0, NULL,
                           why, sizeof why) == 0);
  /* The 200 that is an error, after S3's whitespace. */
  strcpy(etag, "stale");
  CHECK(gf_s3_xml_complete(AWS_COMPLETE_ERROR, strlen(AWS_COMPLETE_ERROR), etag,
                           sizeof etag, &e, why, sizeof why) == 1);
  CHECK(is(e.code, "InternalError") && has(e.message, "Please try again") &&
        is(etag, ""));
  CHECK(gf_s3_xml_complete(AWS_COMPLETE_ERROR, strlen(AWS_COMPLETE_ERROR), NULL,
                           0, NULL, why, sizeof why) == 1);
  /* An ETag that does not fit is refused, not cut. */
  CHECK(gf_s3_xml_complete(AWS_COMPLETE, strlen(AWS_COMPLETE), etag, 37, &e,
                           why, sizeof why) == 0);
  CHECK(gf_s3_xml_complete(AWS_COMPLETE, strlen(AWS_COMPLETE), etag, 36, &e,
                           why, sizeof why) == -EPROTO);
  CHECK(has(why, "longer") && is(etag, ""));
  static const struct {
    const char *body, *why;
  } bad_done[] = {
      {"<CompleteMultipartUploadResult><Key>k</Key>"
       "</CompleteMultipartUploadResult>",
       "without ETag"},
      {"<CompleteMultipartUploadResult><ETag></ETag>"
       "</CompleteMultipartUploadResult>",
       "empty"},
      {"<InitiateMultipartUploadResult/>", "InitiateMultipartUploadResult"},
      {"<Error><Code>InternalError</Code>", "ends"},
      {"", "no element"},
  };
  for (size_t i = 0; i < sizeof bad_done / sizeof bad_done[0]; i++) {
    memset(&e, 'x', sizeof e);
    CHECK(gf_s3_xml_complete(bad_done[i].body, strlen(bad_done[i].body), etag,
                             sizeof etag, &e, why, sizeof why) == -EPROTO);
    CHECK(has(why, bad_done[i].why) && is(etag, "") && is(e.code, ""));
    /* ... also without a place for the ETag. */
    CHECK(gf_s3_xml_complete(bad_done[i].body, strlen(bad_done[i].body), NULL,
                             0, NULL, why, sizeof why) == -EPROTO);
  }
}

static void escape(void) {
  char buf[64];
  const char *in = "\"abc\"&<d>'\xc3\xa9";
  const char *out = "&quot;abc&quot;&amp;&lt;d&gt;&apos;\xc3\xa9";
  CHECK(gf_s3_xml_escape(in, buf, sizeof buf) == strlen(out));
  CHECK(is(buf, out));
  /* Cut: never inside an entity or a UTF-8 sequence; the need stays. */
  for (size_t cap = 1; cap <= strlen(out) + 1; cap++) {
    memset(buf, 'x', sizeof buf);
    CHECK(gf_s3_xml_escape(in, buf, cap) == strlen(out));
    /* The longest whole prefix (of units: an entity, a byte, "é"). */
    static const size_t whole[] = {0, 6, 7, 8, 9, 15, 20, 24, 25, 29, 35, 37};
    size_t want = 0;
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
      if (whole[i] < cap)
        want = whole[i];
    CHECK(strlen(buf) == want && strncmp(buf, out, want) == 0);
    CHECK(buf[cap] == 'x');
  }
  CHECK(gf_s3_xml_escape(NULL, buf, sizeof buf) == 0 && is(buf, ""));
  CHECK(gf_s3_xml_escape("plain", buf, sizeof buf) == 5 && is(buf, "plain"));

  /* What it writes reads back as it was. */
  char body[256], etag[80];
  const char *odd = "\"a&b<c>d'e\"";
  char esc[80];
  gf_s3_xml_escape(odd, esc, sizeof esc);
  snprintf(body, sizeof body,
           "<CompleteMultipartUploadResult><ETag>%s</ETag>"
           "</CompleteMultipartUploadResult>",
           esc);
  CHECK(gf_s3_xml_complete(body, strlen(body), etag, sizeof etag, NULL, why,
                           sizeof why) == 0);
  CHECK(is(etag, odd));
}

/* ---- refusals ------------------------------------------------------------ */

static void malformed(void) {
  /* Every cut of a good page is refused, and gives fn nothing. */
  size_t n = strlen(MOTO_URL);
  bool all = true;
  for (size_t len = 0; len < n; len++) {
    char *cut = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    memcpy(cut, MOTO_URL, len);
    if (!refused_n(cut, len, NULL)) {
      fprintf(stderr, "  the cut at %zu was read\n", len);
      all = false;
    }
    free(cut);
  }
  CHECK(all);
  CHECK(refused_n(MOTO_URL, n - 1, "ends inside an end tag"));
  CHECK(refused_n(MOTO_URL, n - 19, "ends inside <ListBucketResult>"));
  CHECK(refused_n(MOTO_URL, 20, "unterminated <?...?>"));
  CHECK(refused_n(MOTO_URL, 60, "ends inside a tag"));
  CHECK(refused_n(MOTO_URL, 0, "no element"));

  /* Not XML. */
  CHECK(refused("<ListBucketResult><Contents><Key>a</Size></Contents>"
                "</ListBucketResult>",
                "</Size> closes <Key>"));
  CHECK(refused("<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 "
                "\"&lol;&lol;&lol;\">]><ListBucketResult><Contents><Key>&lol2;"
                "</Key><Size>1</Size></Contents></ListBucketResult>",
                "DOCTYPE"));
  CHECK(
      refused("<ListBucketResult><!DOCTYPE x></ListBucketResult>", "DOCTYPE"));
  CHECK(refused(one("&lol;", "1", ""), "entity"));
  CHECK(refused(one("&nbsp;", "1", ""), "\"&nbsp;\""));
  CHECK(refused(one("a & b", "1", ""), "entity"));
  CHECK(refused(one("&#xD800;", "1", ""), "entity"));
  CHECK(refused(one("&#x110000;", "1", ""), "entity"));
  CHECK(refused(one("&#99999999999999999999;", "1", ""), "entity"));
  CHECK(refused(one("&#X41;", "1", ""), "entity"));
  CHECK(refused(one("&#;", "1", ""), "entity"));
  CHECK(refused("<ListBucketResult></ListBucketResult><ListBucketResult/>",
                "second root"));
  CHECK(refused("<ListBucketResult></ListBucketResult>x", "outside the root"));
  CHECK(refused("x<ListBucketResult></ListBucketResult>", "outside the root"));
  CHECK(
      refused("<ListBucketResult></ListBucketResult></x>", "no element open"));
  CHECK(refused("<ListBucketResult a=1/>", "without quotes"));
  CHECK(refused("<ListBucketResult a='<'/>", "'<'"));
  CHECK(refused("<ListBucketResult a='x'b='y'/>", "malformed attribute"));
  CHECK(refused("<ListBucketResult><!-- x </ListBucketResult>", "comment"));
  CHECK(refused("<ListBucketResult><![CDATA[x</ListBucketResult>", "CDATA"));
  CHECK(refused("<![CDATA[x]]><ListBucketResult/>", "CDATA"));
  CHECK(refused("<?xml version='1.0'<ListBucketResult/>", "<?"));
  CHECK(refused("< ListBucketResult/>", "starts no element"));
  CHECK(refused_n("<ListBucketResult>\0</ListBucketResult>", 38,
                  "a NUL byte (byte 18)"));
  static const char nul_key[] = "<ListBucketResult><Contents><Key>a\0b</Key>"
                                "<Size>1</Size></Contents></ListBucketResult>";
  CHECK(refused_n(nul_key, sizeof nul_key - 1, "a NUL byte"));

  /* Not a ListBucketResult. */
  CHECK(refused("<ListAllMyBucketsResult/>",
                "the root element is <ListAllMyBucketsResult>"));
  CHECK(
      refused("<s3:ListVersionsResult xmlns:s3='x'/>", "<ListVersionsResult>"));

  /* Nesting: 32 deep is read, 33 is not; a deep bomb fails at 33. */
  char deep[2048];
  for (int d = 32; d <= 33; d++) {
    char *p = deep + sprintf(deep, "<ListBucketResult><Contents><Key>k</Key>"
                                   "<Size>1</Size>");
    for (int i = 2; i < d; i++)
      p += sprintf(p, "<o>");
    for (int i = 2; i < d; i++)
      p += sprintf(p, "</o>");
    sprintf(p, "</Contents></ListBucketResult>");
    got g;
    if (d == 32)
      CHECK(list(deep, &g) == 0 && g.n == 1);
    else
      CHECK(list(deep, &g) == -EPROTO && has(why, "deeper than 32"));
  }
  size_t bomb_n = 18 + 3 * 1000000;
  char *bomb = malloc(bomb_n);
  memcpy(bomb, "<ListBucketResult>", 18);
  for (size_t i = 18; i < bomb_n; i += 3)
    memcpy(bomb + i, "<a>", 3);
  CHECK(refused_n(bomb, bomb_n, "deeper than 32 (byte 111)"));
  free(bomb);

  /* The page's own rules. */
  CHECK(refused("<ListBucketResult><Contents><Size>1</Size></Contents>"
                "</ListBucketResult>",
                "a Contents without Key"));
  CHECK(refused("<ListBucketResult><Contents><Key>k</Key></Contents>"
                "</ListBucketResult>",
                "a Contents without Size"));
  CHECK(refused("<ListBucketResult><CommonPrefixes/></ListBucketResult>",
                "a CommonPrefixes without Prefix"));
  CHECK(refused(one("k", "12x", ""), "not a decimal uint64: \"12x\""));
  CHECK(refused(one("k", "-1", ""), "\"-1\""));
  CHECK(refused(one("k", "", ""), "Size"));
  CHECK(refused(one("k", "1 2", ""), "Size"));
  CHECK(refused(one("k", "0x10", ""), "Size"));
  CHECK(refused(one("k", "18446744073709551616", ""), "Size"));
  CHECK(refused(one("k", "99999999999999999999999", ""), "Size"));
  CHECK(refused(one("k<b>x</b>", "1", ""), "an element <b> inside <Key>"));
  CHECK(refused("<ListBucketResult><Contents><Key>a</Key><Key>b</Key>"
                "<Size>1</Size></Contents></ListBucketResult>",
                "a second <Key> in one <Contents>"));
  CHECK(refused("<ListBucketResult><IsTruncated>true</IsTruncated>"
                "</ListBucketResult>",
                "no NextContinuationToken"));
  CHECK(refused("<ListBucketResult><IsTruncated>true</IsTruncated>"
                "<NextContinuationToken/></ListBucketResult>",
                "no NextContinuationToken"));
  CHECK(refused("<ListBucketResult><IsTruncated>yes</IsTruncated>"
                "</ListBucketResult>",
                "IsTruncated"));
  CHECK(refused("<ListBucketResult><EncodingType>base64</EncodingType>"
                "</ListBucketResult>",
                "EncodingType"));
  static char body[8192], tok[4096];
  memset(tok, 'T', 2048);
  tok[2048] = '\0';
  snprintf(body, sizeof body,
           "<ListBucketResult><IsTruncated>true</IsTruncated>"
           "<NextContinuationToken>%s</NextContinuationToken>"
           "</ListBucketResult>",
           tok);
  CHECK(refused(body, "longer than 2047"));
  snprintf(body, sizeof body,
           "<ListBucketResult><Contents><Key>k</Key><Size>1</Size><ETag>%s"
           "</ETag></Contents></ListBucketResult>",
           tok);
  CHECK(refused(body, "ETag longer"));

  /* A NUL in a key: by reference, or by %00 when the page says url
   * (before or after the keys). */
  const char *url = "<EncodingType>url</EncodingType>";
  CHECK(refused(one("a&#0;b", "1", ""), "\"&#0;\""));
  CHECK(refused(one("a&#x0;b", "1", ""), "entity"));
  CHECK(refused(one("a%00b", "1", url), "NUL"));
  CHECK(refused("<ListBucketResult><CommonPrefixes><Prefix>p%00/</Prefix>"
                "</CommonPrefixes><EncodingType>url</EncodingType>"
                "</ListBucketResult>",
                "a Prefix that encoding-type=url cannot decode"));
  CHECK(refused(one("a%zzb", "1", url), "two hex digits"));
  CHECK(refused(one("a%4", "1", url), "two hex digits"));
  CHECK(refused(one("a%", "1", url), "two hex digits"));

  /* Over GF_S3_XML_MAX. */
  char *huge = malloc(GF_S3_XML_MAX + 1);
  memset(huge, ' ', GF_S3_XML_MAX + 1);
  memcpy(huge, "<ListBucketResult/>", 19);
  got g;
  CHECK(list_n(huge, GF_S3_XML_MAX, &g) == 0);
  CHECK(refused_n(huge, GF_S3_XML_MAX + 1, "at most 16777216"));
  char id[64];
  CHECK(gf_s3_xml_upload_id(huge, GF_S3_XML_MAX + 1, id, sizeof id, why,
                            sizeof why) == -EPROTO);
  CHECK(gf_s3_xml_complete(huge, GF_S3_XML_MAX + 1, id, sizeof id, NULL, why,
                           sizeof why) == -EPROTO);
  free(huge);

  /* why: at most 40 bytes of the body quoted, control bytes as '?', cut
   * to cap. */
  char size[300];
  memset(size, 'A', 200);
  strcpy(size + 200, "\x01");
  CHECK(refused(one("k", size, ""), "Size"));
  CHECK(run_of(why, 'A') == 40 && !strchr(why, '\x01'));
  CHECK(refused(one("k", "1\x01\x1f\x7f", ""), "\"1???\""));
  char name[300];
  memset(name, 'N', 200);
  strcpy(name + 200, ">");
  snprintf(body, sizeof body, "<%s</ListBucketResult>", name);
  CHECK(refused(body, "not <ListBucketResult>"));
  CHECK(run_of(why, 'N') <= 40 && !strchr(why, '\x02'));
  snprintf(body, sizeof body, "<ListBucketResult><%s</ListBucketResult>", name);
  CHECK(refused(body, "closes"));
  CHECK(run_of(why, 'N') <= 40);
  memset(size, '%', 200);
  CHECK(refused(one(size, "1", url), "two hex digits"));
  CHECK(run_of(why, '%') <= 40);
  const char *bad = one("k", "12x", "");
  for (size_t cap = 0; cap < 12; cap++) {
    memset(why, 'x', sizeof why);
    CHECK(gf_s3_xml_list(bad, strlen(bad), NULL, NULL, NULL, why, cap) ==
          -EPROTO);
    CHECK(cap == 0 ? why[0] == 'x' : strlen(why) == cap - 1);
    CHECK(why[cap] == 'x');
  }
}

/* ---- time ---------------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_only(void *ctx, const gf_s3_list_item *it) {
  (void)it;
  (*(uint64_t *)ctx)++;
  return 0;
}

/* Bodies of 16 MiB built to be slow for a careless parser: a key of
 * entities, 500,000 items, a tag with 1M attributes, 4M comments, a key
 * of CDATA pieces. Linear time reads each well under a second; a
 * quadratic one would take hours. */
static void big_bodies(void) {
  size_t cap = GF_S3_XML_MAX;
  char *b = malloc(cap);
  CHECK(b != NULL);
  if (!b)
    return;
  static const struct {
    const char *head, *unit, *tail;
    uint64_t items;
  } shapes[] = {
      {"<ListBucketResult><Contents><Size>1</Size><Key>", "&amp;&#x41;",
       "</Key></Contents></ListBucketResult>", 1},
      {"<ListBucketResult>", "<Contents><Key>k</Key><Size>1</Size></Contents>",
       "</ListBucketResult>", 0},
      {"<ListBucketResult", " a='1'", "/>", 0},
      {"<ListBucketResult>", "<!---->", "</ListBucketResult>", 0},
      {"<ListBucketResult><Contents><Size>1</Size><Key>", "<![CDATA[x]]>",
       "</Key></Contents></ListBucketResult>", 1},
      {"<ListBucketResult>", "<x/>", "</ListBucketResult>", 0},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    size_t hn = strlen(shapes[s].head), un = strlen(shapes[s].unit),
           tn = strlen(shapes[s].tail);
    size_t units = (cap - hn - tn) / un, len = 0;
    memcpy(b, shapes[s].head, hn);
    len = hn;
    for (size_t i = 0; i < units; i++, len += un)
      memcpy(b + len, shapes[s].unit, un);
    memcpy(b + len, shapes[s].tail, tn);
    len += tn;
    uint64_t items = 0;
    double t0 = now();
    int rc = gf_s3_xml_list(b, len, count_only, &items, &page, why, sizeof why);
    double t = now() - t0;
    uint64_t want = shapes[s].items ? shapes[s].items : s == 1 ? units : 0;
    if (rc != 0 || items != want || t > 10)
      fprintf(stderr, "  shape %zu: rc %d (%s), %llu items, %.2f s\n", s, rc,
              why, (unsigned long long)items, t);
    CHECK(rc == 0 && items == want && t < 10);
  }
  free(b);
}

int main(void) {
  moto_pages();
  aws_pages();
  keys();
  errors();
  multipart();
  escape();
  malformed();
  big_bodies();
  return gf_test_finish();
}
