/* AWS Signature Version 4 (lib/io/s3_sigv4.c) against published and
 * independent results:
 *  - the four worked examples of AWS's S3 documentation ("Signature
 *    Calculations for the Authorization Header: Transferring Payload in a
 *    Single Chunk": GET Object with a range, PUT Object with a body and an
 *    encoded key, GET Bucket Lifecycle, GET Bucket with a query), with
 *    their canonical request where the page shows it;
 *  - cases signed by botocore's S3SigV4Auth (tests/s3/sigv4_vectors.py
 *    made the table): keys with spaces, '+', '%', '~', '*', quotes and
 *    non-ASCII bytes, a session token, a listing's query given unsorted
 *    with '/' and '=' in values, a part upload's query;
 *  - the encoder's rules, requests refused (CR/LF in a header, a header
 *    the signer owns, one given twice), and that no output holds the
 *    secret. */
#include "testutil.h"

#include "io/s3_sigv4.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const AK = "AKIAIOSFODNN7EXAMPLE";
static const char *const SK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
#define MAY24 1369353600 /* Fri, 24 May 2013 00:00:00 GMT */

static void aws_examples(void) {
  gf_sigv4_key k = {AK, SK, NULL};
  gf_sigv4_out o;
  char canon[2048];

  /* GET Object, bytes 0-9. */
  gf_sigv4_pair range[] = {{"Range", "bytes=0-9"}};
  gf_sigv4_request get = {"GET",       "examplebucket.s3.amazonaws.com",
                          "/test.txt", NULL,
                          0,           range,
                          1,           GF_SIGV4_EMPTY_SHA256,
                          "us-east-1", "s3",
                          MAY24,       false};
  CHECK_OK(gf_sigv4_sign(&get, &k, &o, canon, sizeof canon));
  CHECK(
      strcmp(
          canon,
          "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
          "range:bytes=0-9\nx-amz-content-sha256:"
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
          "\nx-amz-date:20130524T000000Z\n\n"
          "host;range;x-amz-content-sha256;x-amz-date\n"
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") ==
      0);
  CHECK(
      strcmp(
          o.authorization,
          "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
          "us-east-1/s3/aws4_request,SignedHeaders=host;range;"
          "x-amz-content-sha256;x-amz-date,Signature="
          "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") ==
      0);
  CHECK(strcmp(o.amz_date, "20130524T000000Z") == 0);

  /* PUT Object: "test$file.text", a body, a storage class and a Date. */
  char body_hash[65];
  gf_sigv4_sha256_hex("Welcome to Amazon S3.", 21, body_hash);
  CHECK(strcmp(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42"
                          "034a8b803f8b072") == 0);
  gf_sigv4_pair put_h[] = {{"X-Amz-Storage-Class", "REDUCED_REDUNDANCY"},
                           {"Date", "Fri, 24 May 2013 00:00:00 GMT"}};
  gf_sigv4_request put = {"PUT",
                          "examplebucket.s3.amazonaws.com",
                          "/test$file.text",
                          NULL,
                          0,
                          put_h,
                          2,
                          body_hash,
                          "us-east-1",
                          "s3",
                          MAY24,
                          false};
  CHECK_OK(gf_sigv4_sign(&put, &k, &o, canon, sizeof canon));
  CHECK(strncmp(canon, "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013", 43) ==
        0);
  CHECK(strcmp(o.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1"
                            "b5971af0ece108bd") == 0);

  /* GET Bucket Lifecycle: a query name without a value. */
  gf_sigv4_pair lifecycle[] = {{"lifecycle", ""}};
  gf_sigv4_request lc = {"GET",       "examplebucket.s3.amazonaws.com",
                         "/",         lifecycle,
                         1,           NULL,
                         0,           NULL,
                         "us-east-1", "s3",
                         MAY24,       false};
  CHECK_OK(gf_sigv4_sign(&lc, &k, &o, canon, sizeof canon));
  CHECK(strncmp(canon, "GET\n/\nlifecycle=\nhost:", 22) == 0);
  CHECK(strcmp(o.signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac"
                            "7a200a0136783543") == 0);

  /* GET Bucket (List Objects): max-keys=2&prefix=J, given unsorted. */
  gf_sigv4_pair list_q[] = {{"prefix", "J"}, {"max-keys", "2"}};
  gf_sigv4_request list = {"GET",       "examplebucket.s3.amazonaws.com",
                           "/",         list_q,
                           2,           NULL,
                           0,           NULL,
                           "us-east-1", "s3",
                           MAY24,       false};
  CHECK_OK(gf_sigv4_sign(&list, &k, &o, canon, sizeof canon));
  CHECK(strncmp(canon, "GET\n/\nmax-keys=2&prefix=J\n", 26) == 0);
  CHECK(strcmp(o.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db667"
                            "0ed5711ef69dc6f7") == 0);
  for (const char *s = SK; s; s = NULL)
    CHECK(!strstr(o.authorization, s) && !strstr(canon, s));

  /* The PUT again with its path as the request URL has it (encoded
   * already): taken as it is, the same signature. */
  put.path = "/test%24file.text";
  put.path_encoded = true;
  CHECK_OK(gf_sigv4_sign(&put, &k, &o, NULL, 0));
  CHECK(strcmp(o.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1"
                            "b5971af0ece108bd") == 0);
}

typedef struct boto_case {
  const char *key, *secret, *token, *method, *host, *path;
  gf_sigv4_pair query[5];
  size_t nquery;
  gf_sigv4_pair headers[2];
  size_t nheaders;
  const char *payload_hash;
  const char *signature;
} boto_case;

/* tests/s3/sigv4_vectors.py's output: signed at 2026-11-27 23:59:58 UTC,
 * us-east-1, s3. */
static const boto_case boto[] = {
    /* key with spaces, plus, percent, tilde */
    {"AKIDEXAMPLE",
     "secret/with+chars=",
     NULL,
     "GET",
     "127.0.0.1:9000",
     "/bucket/a b+c%d~e.jpg",
     {{NULL, NULL}},
     0,
     {{"Range", "bytes=0-99"}},
     1,
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "22643a88a6cf4f6670d881692e9950ec87d6b684f7633e94fd906775854533f7"},
    /* non-ASCII key and a session token */
    {"ASIAEXAMPLE",
     "s3cr3t",
     "FQoGZXIvYXdzEXAMPLE//token+=",
     "GET",
     "bucket.s3.us-west-2.amazonaws.com",
     "/\xd0\xba\xd0\xbb\xd0\xb0\xd1\x81\xd1\x81/"
     "\xd1\x84\xd0\xbe\xd1\x82\xd0\xbe 1.png",
     {{NULL, NULL}},
     0,
     {{"Range", "bytes=100-4195"},
      {"If-Match", "\"9b2cf535f27731c974343645a3985328\""}},
     2,
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "fc3db16b897ecb93b525a8b9689080eb643546e6e295f7c9b16959fe3998aa6b"},
    /* a listing: prefix with '/', a continuation token, unsorted */
    {"AKIDEXAMPLE",
     "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
     NULL,
     "GET",
     "localhost:5000",
     "/train-data",
     {{"list-type", "2"},
      {"prefix", "imagenet/train/n01440764/"},
      {"continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="},
      {"delimiter", "/"},
      {"max-keys", "1000"}},
     5,
     {{NULL, NULL}},
     0,
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "a3f917b08d993cc248f2812e45dd6160ca21149d9c152c89d413b50853a44e52"},
    /* a key of ~, *, parentheses and a double slash */
    {"AKIDEXAMPLE",
     "x",
     NULL,
     "HEAD",
     "s3.example.test",
     "/b/dir//x~(1)*'!.tar",
     {{NULL, NULL}},
     0,
     {{NULL, NULL}},
     0,
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "0f25a599ad36511ae374dd1edff567b5966bb719c64e90cc1f70f545607de6e2"},
    /* a part upload: query names alone and values */
    {"AKIDEXAMPLE",
     "x",
     NULL,
     "PUT",
     "127.0.0.1:9000",
     "/b/shard-000001.gfs",
     {{"partNumber", "3"},
      {"uploadId",
       "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"}},
     2,
     {{"Content-Length", "8388608"}},
     1,
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
     "e7a6042b50b802941ae677ad72b8c2ede2b37806174c0ead47c2cb9c8f33f492"},
};

static void botocore_cases(void) {
  for (size_t i = 0; i < sizeof boto / sizeof boto[0]; i++) {
    const boto_case *b = &boto[i];
    gf_sigv4_key k = {b->key, b->secret, b->token};
    gf_sigv4_request r = {b->method,   b->host,    b->path,     b->query,
                          b->nquery,   b->headers, b->nheaders, b->payload_hash,
                          "us-east-1", "s3",       1795823998,  false};
    gf_sigv4_out o;
    char canon[2048];
    CHECK_OK(gf_sigv4_sign(&r, &k, &o, canon, sizeof canon));
    if (strcmp(o.signature, b->signature) != 0) {
      fprintf(stderr,
              "case %zu (%s): signature %s, botocore's %s\n"
              "canonical request:\n%s\n",
              i, b->path, o.signature, b->signature, canon);
      CHECK(false);
    }
    CHECK(strcmp(o.amz_date, "20261127T235958Z") == 0);
    if (strlen(b->secret) >= 6) /* "x" is in every header name */
      CHECK(!strstr(o.authorization, b->secret));
    if (b->token) /* signed, as a header the request then carries */
      CHECK(strstr(o.authorization, "x-amz-security-token") != NULL);
  }
}

static void encoding_and_refusals(void) {
  char buf[256];
  CHECK(gf_sigv4_encode("a b+c%d~e/f", true, buf, sizeof buf) == 17 &&
        strcmp(buf, "a%20b%2Bc%25d~e/f") == 0);
  CHECK(gf_sigv4_encode("a/b", false, buf, sizeof buf) == 5 &&
        strcmp(buf, "a%2Fb") == 0);
  CHECK(gf_sigv4_encode("\xd1\x84", false, buf, sizeof buf) == 6 &&
        strcmp(buf, "%D1%84") == 0);
  /* Cut to fit, the whole length still said. */
  CHECK(gf_sigv4_encode("a b c", false, buf, 4) == 9 && strlen(buf) == 3);

  gf_sigv4_key k = {AK, SK, NULL};
  gf_sigv4_out o;
  gf_sigv4_pair bad[][1] = {{{"Range", "bytes=0-9\r\nX-Evil: 1"}},
                            {{"X-Amz-Date", "20130524T000000Z"}},
                            {{"host", "other"}},
                            {{"bad:name", "v"}}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_sigv4_request r = {"GET", "h",  "/k",        NULL, 0,     bad[i],
                          1,     NULL, "us-east-1", "s3", MAY24, false};
    CHECK(gf_sigv4_sign(&r, &k, &o, NULL, 0) == -EINVAL);
    CHECK(o.authorization[0] == '\0');
  }
  gf_sigv4_pair twice[] = {{"Range", "bytes=0-9"}, {"range", "bytes=1-9"}};
  gf_sigv4_request r2 = {"GET", "h",  "/k",        NULL, 0,     twice,
                         2,     NULL, "us-east-1", "s3", MAY24, false};
  CHECK(gf_sigv4_sign(&r2, &k, &o, NULL, 0) == -EINVAL);
  gf_sigv4_request relative = {"GET", "h",  "k",         NULL, 0,     NULL,
                               0,     NULL, "us-east-1", "s3", MAY24, false};
  CHECK(gf_sigv4_sign(&relative, &k, &o, NULL, 0) == -EINVAL);
  /* Header values: trimmed, inner runs of spaces made one. */
  gf_sigv4_pair spaced[] = {{"X-Amz-Meta-Note", "  a   b  c "}};
  gf_sigv4_request r3 = {"GET", "h",  "/k",        NULL, 0,     spaced,
                         1,     NULL, "us-east-1", "s3", MAY24, false};
  char canon[1024];
  CHECK_OK(gf_sigv4_sign(&r3, &k, &o, canon, sizeof canon));
  CHECK(strstr(canon, "\nx-amz-meta-note:a b c\n") != NULL);
  /* Another secret, another signature. */
  char first[65];
  memcpy(first, o.signature, sizeof first);
  gf_sigv4_key k2 = {AK, "another", NULL};
  CHECK_OK(gf_sigv4_sign(&r3, &k2, &o, NULL, 0));
  CHECK(strcmp(first, o.signature) != 0);
}

int main(void) {
  aws_examples();
  botocore_cases();
  encoding_and_refusals();
  return gf_test_finish();
}
