/* Container and instance credentials (lib/io/s3_creds.c, s3_creds_doc.c):
 *  - the document's reader: ECS's and IMDS's documents, Code, required
 *    fields, Expiration's forms, escapes and UTF-8, unknown fields of any
 *    shape skipped, duplicates, trailing bytes, a nesting bomb, numbers of
 *    any size, fields too long or unfit for a header;
 *  - the URLs the variables form (the relative URI's, the hosts a full URI
 *    may name over http, the IMDS endpoint and its modes), with no request;
 *  - against tests/s3/creds_server.py on 127.0.0.1 (no other address is
 *    ever contacted: the metadata service is disabled or pointed at it in
 *    every environment here): the container endpoint with its token
 *    (from the variable or a file; wrong or missing: 401, three tries),
 *    every failure of a configured endpoint, IMDSv2's token and headers,
 *    the IMDSv1 fallback, no role, a refused connection, a malformed
 *    document, IMDS disabled;
 *  - that no secret (keys, tokens, the authorization token, the metadata
 *    token, a query) reaches a message or a source, and that *out is wiped
 *    on anything but success.
 * Every environment is the test's own, through the getenv callback. */
#include "testutil.h"

#include "io/s3_creds.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The server's documents' secrets (tests/s3/creds_server.py). */
#define ECS_KEY "ASIAECSKEYID0001"
#define ECS_SECRET "ecsSECRETq7Zk/Wp+3xLm"
#define ECS_SESSION "ecsSESSIONr8Yj/Vo+4wKn"
#define ECS_EXPIRES 1795845600 /* 2026-11-28T06:00:00Z */
#define IMDS_KEY "ASIAIMDSKEYID002"
#define IMDS_SECRET "imdsSECRETs9Xh/Un+5vJo"
#define IMDS_SESSION "imdsSESSIONt1Wg/Tm+6uIp"
#define IMDS_EXPIRES 1795851000 /* 2026-11-28T07:30:00Z */
#define METADATA_TOKEN "imdsAPITOKENu2Vf-Sl7tHq=="
/* The container's authorization token, and a query that may be one. */
#define AUTH_TOKEN "authTOKENv3Ue/Rk+8sGr"
#define QUERY_SECRET "querySECRETw4Td"
/* The parse cases' own. */
#define DOC_SECRET "docSECRETx5Sc/Pi+0qEt"
#define DOC_TOKEN "docTOKENy6Rb/Oh+1pDu"
static const char *const SECRETS[] = {ECS_SECRET,   ECS_SESSION,    IMDS_SECRET,
                                      IMDS_SESSION, METADATA_TOKEN, AUTH_TOKEN,
                                      QUERY_SECRET, DOC_SECRET,     DOC_TOKEN,
                                      "pw@",        "hunter2pw",    NULL};

/* ---- an environment of the test's own ------------------------------------ */

typedef struct envtab {
  const char *name[24];
  const char *value[24];
  int n;
} envtab;

static const char *tab_get(void *ctx, const char *name) {
  envtab *e = ctx;
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0)
      return e->value[i];
  return NULL;
}

/* Sets (value NULL: unsets) a variable. */
static void put_env(envtab *e, const char *name, const char *value) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0) {
      e->name[i] = e->name[e->n - 1];
      e->value[i] = e->value[e->n - 1];
      e->n--;
      break;
    }
  if (value && e->n < 24) {
    e->name[e->n] = name;
    e->value[e->n++] = value;
  }
}

/* The base of every environment: the metadata service off, one try. */
static void fresh_env(envtab *e) {
  memset(e, 0, sizeof *e);
  put_env(e, "AWS_EC2_METADATA_DISABLED", "true");
  put_env(e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "1");
}

/* ---- checks -------------------------------------------------------------- */

static char why[1024];
static gf_aws_fetched f;

static bool has(const char *s, const char *part) {
  if (strstr(s, part))
    return true;
  fprintf(stderr, "  '%s' lacks '%s'\n", s, part);
  return false;
}

static bool is(const char *s, const char *want) {
  if (strcmp(s, want) == 0)
    return true;
  fprintf(stderr, "  '%s', wanted '%s'\n", s, want);
  return false;
}

static bool leaks(const char *what, const char *text) {
  for (const char *const *s = SECRETS; *s; s++)
    if (strstr(text, *s)) {
      fprintf(stderr, "  LEAK: %s holds '%s': %s\n", what, *s, text);
      return true;
    }
  return false;
}

static bool wiped(const gf_aws_fetched *x) {
  const unsigned char *p = (const unsigned char *)x;
  for (size_t i = 0; i < sizeof *x; i++)
    if (p[i])
      return false;
  return true;
}

static unsigned long requests(void) { return gf_aws_creds__test_requests; }

/* ---- the document ---------------------------------------------------------
 */

static int parse_n(const char *doc, size_t len) {
  memset(&f, 'x', sizeof f);
  memset(why, 'x', sizeof why);
  int rc = gf_aws_creds_parse(doc, len, &f, why, sizeof why);
  CHECK(memchr(why, '\0', sizeof why) != NULL);
  CHECK(!leaks("why", why));
  if (rc < 0) {
    CHECK(rc == -EPROTO && why[0]);
    CHECK(wiped(&f));
  } else
    CHECK(rc == 0 && !f.source[0]);
  return rc;
}

static int parse(const char *doc) { return parse_n(doc, strlen(doc)); }

#define GOOD_FIELDS                                                            \
  "\"AccessKeyId\":\"AKIDDOC\",\"SecretAccessKey\":\"" DOC_SECRET "\""

static void document(void) {
  /* ECS's document, and IMDS's with Code Success and its other fields. */
  CHECK_OK(parse("{\"RoleArn\":\"arn:aws:iam::1:role/r\","
                 "\"AccessKeyId\":\"AKIDDOC\",\"SecretAccessKey\":"
                 "\"" DOC_SECRET "\",\"Token\":\"" DOC_TOKEN "\","
                 "\"Expiration\":\"2026-11-28T06:00:00Z\"}"));
  CHECK(is(f.access_key, "AKIDDOC") && is(f.secret_key, DOC_SECRET) &&
        is(f.session_token, DOC_TOKEN) && f.expires == ECS_EXPIRES);
  CHECK_OK(parse("\r\n {\n  \"Code\" : \"Success\",\n"
                 "  \"LastUpdated\" : \"2026-11-28T01:30:00Z\",\n"
                 "  \"Type\" : \"AWS-HMAC\",\n  " GOOD_FIELDS ",\n"
                 "  \"Token\" : \"" DOC_TOKEN "\",\n"
                 "  \"Expiration\" : \"2026-11-28T07:30:00Z\"\n}\n\t "));
  CHECK(is(f.secret_key, DOC_SECRET) && f.expires == IMDS_EXPIRES);
  /* Without Token and Expiration (a long-term key): none, 0; null too. */
  CHECK(parse("{" GOOD_FIELDS "}") == 0 && !f.session_token[0] &&
        f.expires == 0);
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":null,\"Expiration\":null,"
              "\"Code\":null}") == 0 &&
        !f.session_token[0] && f.expires == 0);
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":\"\"}") == 0 && !f.session_token[0]);

  /* Code other than Success: named when a plain word, else not. */
  CHECK(parse("{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"Message\":\"x\","
              "\"LastUpdated\":\"2026-11-28T01:30:00Z\"}") == -EPROTO &&
        has(why, "Code is AssumeRoleUnauthorizedAccess"));
  CHECK(parse("{\"Code\":\"Failure\"," GOOD_FIELDS "}") == -EPROTO &&
        has(why, "Failure"));
  CHECK(parse("{\"Code\":\"" DOC_TOKEN "\"," GOOD_FIELDS "}") == -EPROTO &&
        has(why, "Code is not Success"));
  CHECK(parse("{\"Code\":\"success\"," GOOD_FIELDS "}") == -EPROTO);

  /* Required fields: missing, empty, null, not strings. */
  CHECK(parse("{\"AccessKeyId\":\"AKIDDOC\",\"Token\":\"" DOC_TOKEN "\"}") ==
            -EPROTO &&
        has(why, "no SecretAccessKey"));
  CHECK(parse("{\"SecretAccessKey\":\"" DOC_SECRET "\"}") == -EPROTO &&
        has(why, "no AccessKeyId"));
  CHECK(parse("{\"AccessKeyId\":\"\",\"SecretAccessKey\":\"" DOC_SECRET
              "\"}") == -EPROTO &&
        has(why, "an empty AccessKeyId"));
  CHECK(parse("{" GOOD_FIELDS ",\"SecretAccessKey\":null}") == -EPROTO &&
        has(why, "no SecretAccessKey"));
  CHECK(parse("{\"AccessKeyId\":12,\"SecretAccessKey\":\"s\"}") == -EPROTO &&
        has(why, "AccessKeyId is not a string"));
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":true}") == -EPROTO &&
        has(why, "Token is not a string"));
  CHECK(parse("{" GOOD_FIELDS ",\"Expiration\":{}}") == -EPROTO &&
        has(why, "Expiration is not a string"));
  CHECK(parse("{" GOOD_FIELDS ",\"Code\":[\"Success\"]}") == -EPROTO);

  /* Expiration: fractions and offsets; anything else refused. */
  static const char *const good_times[] = {
      "2026-11-28T06:00:00Z",      "2026-11-28T06:00:00.123456Z",
      "2026-11-28T06:00:00+00:00", "2026-11-28T06:00:00.5-00:00",
      "2026-11-28T08:30:00+02:30", "2026-11-28T01:00:00-0500"};
  for (size_t i = 0; i < sizeof good_times / sizeof good_times[0]; i++) {
    char doc[256];
    snprintf(doc, sizeof doc, "{" GOOD_FIELDS ",\"Expiration\":\"%s\"}",
             good_times[i]);
    CHECK(parse(doc) == 0);
    if (f.expires != ECS_EXPIRES)
      fprintf(stderr, "  %s read as %lld\n", good_times[i],
              (long long)f.expires);
    CHECK(f.expires == ECS_EXPIRES);
  }
  CHECK(parse("{" GOOD_FIELDS ",\"Expiration\":\"2024-02-29T00:00:00Z\"}") ==
            0 &&
        f.expires == 1709164800);
  static const char *const bad_times[] = {"2026-13-01T00:00:00Z",
                                          "2026-02-29T00:00:00Z",
                                          "2026-11-31T00:00:00Z",
                                          "2026-11-28 06:00:00Z",
                                          "2026-11-28T06:00:00",
                                          "2026-11-28T24:00:00Z",
                                          "2026-11-28T06:60:00Z",
                                          "2026-11-28T06:00:60Z",
                                          "2026-11-28T06:00:00.Z",
                                          "2026-11-28T06:00:00Zx",
                                          "2026-11-28T06:00Z",
                                          "26-11-28T06:00:00Z",
                                          "1969-12-31T23:59:59Z",
                                          "1970-01-01T00:00:00Z",
                                          "",
                                          "2026-11-28T06:00:00+24:00",
                                          "tomorrow"};
  for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
    char doc[256];
    snprintf(doc, sizeof doc, "{" GOOD_FIELDS ",\"Expiration\":\"%s\"}",
             bad_times[i]);
    if (parse(doc) != -EPROTO || !strstr(why, "Expiration"))
      fprintf(stderr, "  Expiration %s was not refused (%s)\n", bad_times[i],
              why);
    CHECK(f.expires == 0 && strstr(why, "Expiration"));
  }

  /* Escapes: \" \\ \/ \uXXXX in values; a pair makes one character. */
  CHECK_OK(parse("{\"AccessKeyId\":\"\\u0041KID\\/1\",\"Secret\\u0041ccessKey"
                 "\":\"s\\\"e\\\\c\",\"Note\":\"\\ud83d\\ude00 caf\xc3\xa9 "
                 "\\b\\f\\n\\r\\t\"}"));
  CHECK(is(f.access_key, "AKID/1") && is(f.secret_key, "s\"e\\c"));
  /* Bytes that cannot go into a header: refused in a credential. */
  CHECK(parse("{\"AccessKeyId\":\"AK\\u0000ID\",\"SecretAccessKey\":\"s\"}") ==
            -EPROTO &&
        has(why, "AccessKeyId holds"));
  CHECK(parse("{\"AccessKeyId\":\"AKID\",\"SecretAccessKey\":\"a b\"}") ==
            -EPROTO &&
        has(why, "SecretAccessKey holds"));
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":\"t\\r\\nX-Evil: 1\"}") == -EPROTO &&
        has(why, "Token holds"));
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":\"caf\xc3\xa9\"}") == -EPROTO);
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":\"\\u00e9\"}") == -EPROTO);
  /* Not JSON: where (a byte offset), never what. */
  static const char *const not_json[] = {
      "{" GOOD_FIELDS ",\"X\":\"\\ud800\"}",        /* a lone high surrogate */
      "{" GOOD_FIELDS ",\"X\":\"\\udc00\"}",        /* a lone low one */
      "{" GOOD_FIELDS ",\"X\":\"\\ud800\\u0041\"}", /* high, then no low */
      "{" GOOD_FIELDS ",\"X\":\"\\x41\"}",          /* no such escape */
      "{" GOOD_FIELDS ",\"X\":\"\\u00g1\"}",        /* not hex */
      "{" GOOD_FIELDS ",\"X\":\"a\tb\"}",           /* a raw control byte */
      "{" GOOD_FIELDS ",\"X\":\"\xc3\"}",           /* cut UTF-8 */
      "{" GOOD_FIELDS ",\"X\":\"\xc0\xaf\"}",       /* overlong */
      "{" GOOD_FIELDS ",\"X\":\"\xed\xa0\x80\"}",   /* a surrogate in UTF-8 */
      "{" GOOD_FIELDS ",\"X\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
      "{" GOOD_FIELDS ",\"X\":\"\xff\"}", "{" GOOD_FIELDS ",\"X\":01}",
      "{" GOOD_FIELDS ",\"X\":1.}", "{" GOOD_FIELDS ",\"X\":.5}",
      "{" GOOD_FIELDS ",\"X\":-}", "{" GOOD_FIELDS ",\"X\":1e}",
      "{" GOOD_FIELDS ",\"X\":+1}", "{" GOOD_FIELDS ",\"X\":NaN}",
      "{" GOOD_FIELDS ",\"X\":tru}", "{" GOOD_FIELDS ",\"X\":nul}",
      "{" GOOD_FIELDS ",}", "{" GOOD_FIELDS ",\"X\"}",
      "{" GOOD_FIELDS ",\"X\":}", "{" GOOD_FIELDS " \"X\":1}",
      "{" GOOD_FIELDS ",X:1}", "{" GOOD_FIELDS ",\"X\":[1,]}",
      "{" GOOD_FIELDS ",\"X\":[1}", "{" GOOD_FIELDS ",\"X\":{\"a\":1]}",
      "{" GOOD_FIELDS ",\"X\":'a'}", "{" GOOD_FIELDS, "{\"AccessKeyId\":\"AKID",
      "", "   ", "[]", "\"" DOC_SECRET "\"", "null",
      "\xef\xbb\xbf{" GOOD_FIELDS "}",
      /* trailing bytes */
      "{" GOOD_FIELDS "}x", "{" GOOD_FIELDS "}{}", "{" GOOD_FIELDS "},",
      "{" GOOD_FIELDS "}\"" DOC_SECRET "\""};
  for (size_t i = 0; i < sizeof not_json / sizeof not_json[0]; i++) {
    if (parse(not_json[i]) != -EPROTO || !strstr(why, "not JSON"))
      fprintf(stderr, "  case %zu: %s\n", i, why);
    CHECK(strstr(why, "not JSON") && strstr(why, "at byte"));
  }
  char off[32];
  snprintf(off, sizeof off, "at byte %zu", strlen("{" GOOD_FIELDS "}"));
  CHECK(parse("{" GOOD_FIELDS "}x") == -EPROTO && has(why, "after") &&
        has(why, off));
  /* A NUL byte inside the given length. */
  static const char nul[] = "{" GOOD_FIELDS ",\"X\":\"a\0b\"}";
  CHECK(parse_n(nul, sizeof nul - 1) == -EPROTO);
  CHECK(parse_n(NULL, 0) == -EPROTO);

  /* Unknown fields of every shape, nested keys of the same names not
   * taken, numbers of any size, literals. */
  CHECK_OK(parse("{\"Meta\":{\"AccessKeyId\":\"WRONG1\",\"a\":[1,2,{\"b\":[]}],"
                 "\"c\":{}},\"AccessKeyId\":\"AKIDDOC\",\"SecretAccessKey\":"
                 "\"" DOC_SECRET
                 "\",\"List\":[[],[[{}]],{\"Token\":\"WRONG2\"}],"
                 "\"n\":-1.5e+10,\"big\":1e999999999,\"long\":"
                 "123456789012345678901234567890123456789012345678901234567890,"
                 "\"z\":-0.0000E-0,\"t\":true,\"f\":false,\"u\":null,"
                 "\"Tail\":{\"SecretAccessKey\":\"WRONG3\"}}"));
  CHECK(is(f.access_key, "AKIDDOC") && is(f.secret_key, DOC_SECRET) &&
        !f.session_token[0]);
  /* A key given twice: the later wins (Python's json). */
  CHECK(parse("{\"AccessKeyId\":\"FIRSTLONGERVALUE\"," GOOD_FIELDS "}") == 0 &&
        is(f.access_key, "AKIDDOC"));
  /* ... and nothing of the first is left past the later's end. */
  for (size_t i = strlen(f.access_key); i < sizeof f.access_key; i++)
    CHECK(f.access_key[i] == '\0');
  CHECK(parse("{" GOOD_FIELDS ",\"Token\":\"" DOC_TOKEN "\",\"Token\":null}") ==
            0 &&
        !f.session_token[0]);

  /* A nesting bomb: refused at depth 65, at any length, without
   * recursion; 64 levels are read. */
  size_t deep = 200000;
  char *bomb = malloc(2 * deep + 64);
  CHECK(bomb != NULL);
  if (bomb) {
    size_t n = (size_t)sprintf(bomb, "{\"a\":");
    memset(bomb + n, '[', deep);
    memset(bomb + n + deep, ']', deep);
    strcpy(bomb + n + 2 * deep, "}");
    CHECK(parse(bomb) == -EPROTO && has(why, "deeper than 64"));
    n = (size_t)sprintf(bomb, "{" GOOD_FIELDS ",\"a\":");
    memset(bomb + n, '[', 63);
    memset(bomb + n + 63, ']', 63);
    strcpy(bomb + n + 126, "}");
    CHECK_OK(parse(bomb));
    n = (size_t)sprintf(bomb, "{" GOOD_FIELDS ",\"a\":");
    memset(bomb + n, '[', 64);
    memset(bomb + n + 64, ']', 64);
    strcpy(bomb + n + 128, "}");
    CHECK(parse(bomb) == -EPROTO);
    free(bomb);
  }

  /* Lengths: each field's room with its NUL, and one byte more. */
  static char doc[20000], val[8192];
  memset(val, 'A', 127);
  val[127] = '\0';
  snprintf(doc, sizeof doc,
           "{\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"s\"}", val);
  CHECK(parse(doc) == 0 && strlen(f.access_key) == 127);
  memset(val, 'A', 128);
  val[128] = '\0';
  snprintf(doc, sizeof doc,
           "{\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"s\"}", val);
  CHECK(parse(doc) == -EPROTO && has(why, "AccessKeyId is longer than 127") &&
        !strstr(why, "AAAA"));
  memset(val, 'T', 4095);
  val[4095] = '\0';
  snprintf(doc, sizeof doc, "{" GOOD_FIELDS ",\"Token\":\"%s\"}", val);
  CHECK(parse(doc) == 0 && strlen(f.session_token) == 4095);
  memset(val, 'T', 4096);
  val[4096] = '\0';
  snprintf(doc, sizeof doc, "{" GOOD_FIELDS ",\"Token\":\"%s\"}", val);
  CHECK(parse(doc) == -EPROTO && has(why, "Token is longer than 4095"));
  memset(val, 'S', 256);
  val[256] = '\0';
  snprintf(doc, sizeof doc,
           "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"%s\"}", val);
  CHECK(parse(doc) == -EPROTO && has(why, "SecretAccessKey is longer"));
  /* An unknown field of any length is skipped. */
  memset(val, 'u', sizeof val - 1);
  val[sizeof val - 1] = '\0';
  snprintf(doc, sizeof doc, "{\"%s\":\"%s\"," GOOD_FIELDS "}", val, val);
  CHECK_OK(parse(doc));

  gf_aws_fetched_clear(&f);
  CHECK(wiped(&f));
  gf_aws_fetched_clear(NULL);
}

/* ---- URLs, without a request -------------------------------------------- */

static char curl_url[4096], imds_url[4096];

static int urls(envtab *e) {
  unsigned long before = requests();
  memset(why, 'x', sizeof why);
  int rc = gf_aws_creds__test_urls(tab_get, e, curl_url, imds_url,
                                   sizeof curl_url, why, sizeof why);
  CHECK(requests() == before);
  CHECK(memchr(why, '\0', sizeof why) != NULL && !leaks("why", why));
  CHECK(rc == 0 || why[0]);
  return rc;
}

static void url_forms(void) {
  envtab e;
  fresh_env(&e);
  put_env(&e, "AWS_EC2_METADATA_DISABLED", NULL);

  /* The relative URI, after 169.254.170.2, wins over the full one. */
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
          "/v2/credentials/0f1e2d3c?x=1");
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/full");
  CHECK_OK(urls(&e));
  CHECK(is(curl_url, "http://169.254.170.2/v2/credentials/0f1e2d3c?x=1") &&
        !imds_url[0]);
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "v2/credentials");
  CHECK(urls(&e) == -EINVAL &&
        has(why, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") && has(why, "'/'"));
  /* Set to "": unset (the full URI is used). */
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "");
  CHECK(urls(&e) == 0 && is(curl_url, "http://127.0.0.1:9/full"));
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", NULL);

  /* The hosts a full URI may name over http; any over https. */
  static const char *const allowed[] = {"http://127.0.0.1:1/x",
                                        "http://127.255.0.9/",
                                        "http://localhost:9/creds",
                                        "http://LOCALHOST/",
                                        "http://[::1]:80/",
                                        "http://[0:0:0:0:0:0:0:1]/",
                                        "http://169.254.170.2/v1",
                                        "http://169.254.170.23/v1/credentials",
                                        "http://[fd00:ec2::23]/",
                                        "http://[FD00:EC2:0::23]/x",
                                        "HTTP://127.0.0.1/",
                                        "https://10.1.2.3/",
                                        "https://example.com/creds?a=b"};
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", allowed[i]);
    if (urls(&e) != 0 || !curl_url[0])
      fprintf(stderr, "  %s refused: %s\n", allowed[i], why);
    CHECK(curl_url[0] && !imds_url[0]);
  }
  static const char *const refused[] = {"http://10.1.2.3/",
                                        "http://169.254.170.3/",
                                        "http://169.254.169.254/",
                                        "http://[::2]/",
                                        "http://[fd00:ec2::24]/",
                                        "http://[::ffff:127.0.0.1]/",
                                        "http://localhost.example.com/",
                                        "http://127.0.0.1.example.com/",
                                        "http://example.com/",
                                        "ftp://127.0.0.1/",
                                        "file:///etc/passwd",
                                        "127.0.0.1:80/x",
                                        "http://",
                                        "not a url"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", refused[i]);
    if (urls(&e) != -EINVAL)
      fprintf(stderr, "  %s allowed (%s)\n", refused[i], curl_url);
    CHECK(has(why, "AWS_CONTAINER_CREDENTIALS_FULL_URI"));
  }
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/");
  CHECK(urls(&e) == -EINVAL && has(why, "10.1.2.3") && has(why, "not allowed"));
  /* A user:password is dropped, never sent. */
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI",
          "http://user:hunter2pw@127.0.0.1:9/c?q=1");
  CHECK(urls(&e) == 0 && is(curl_url, "http://127.0.0.1:9/c?q=1"));
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", NULL);

  /* The metadata service: its default, the modes, the endpoint. */
  CHECK(urls(&e) == 0 && is(imds_url, "http://169.254.169.254/") &&
        !curl_url[0]);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6");
  CHECK(urls(&e) == 0 && is(imds_url, "http://[fd00:ec2::254]/"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "ipv4");
  put_env(&e, "AWS_IMDS_USE_IPV6", "true");
  CHECK(urls(&e) == 0 && is(imds_url, "http://169.254.169.254/"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", NULL);
  CHECK(urls(&e) == 0 && is(imds_url, "http://[fd00:ec2::254]/"));
  put_env(&e, "AWS_IMDS_USE_IPV6", NULL);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "ipv7");
  CHECK(urls(&e) == -EINVAL &&
        has(why, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6");
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9");
  CHECK(urls(&e) == 0 && is(imds_url, "http://127.0.0.1:9/"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", NULL);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", "ftp://127.0.0.1/");
  CHECK(urls(&e) == -EINVAL && has(why, "AWS_EC2_METADATA_SERVICE_ENDPOINT"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", "not a url");
  CHECK(urls(&e) == -EINVAL && has(why, "AWS_EC2_METADATA_SERVICE_ENDPOINT"));
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", NULL);
  /* Disabled: "true" in any case; another value is not. */
  put_env(&e, "AWS_EC2_METADATA_DISABLED", "TRUE");
  CHECK(urls(&e) == 0 && !imds_url[0] && !curl_url[0]);
  put_env(&e, "AWS_EC2_METADATA_DISABLED", "false");
  CHECK(urls(&e) == 0 && imds_url[0]);
  put_env(&e, "AWS_EC2_METADATA_DISABLED", "1");
  CHECK(urls(&e) == 0 && imds_url[0]);

  /* The counts: whole numbers in range, else refused by name. */
  static const char *const bad_counts[] = {
      "0", "abc", "1.5", "-1", " 1", "3601", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
    put_env(&e, "AWS_METADATA_SERVICE_TIMEOUT", bad_counts[i]);
    CHECK(urls(&e) == -EINVAL && has(why, "AWS_METADATA_SERVICE_TIMEOUT"));
  }
  put_env(&e, "AWS_METADATA_SERVICE_TIMEOUT", "3600");
  CHECK_OK(urls(&e));
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "0");
  CHECK(urls(&e) == -EINVAL && has(why, "AWS_METADATA_SERVICE_NUM_ATTEMPTS"));
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "101");
  CHECK(urls(&e) == -EINVAL);
}

/* ---- the server ------------------------------------------------------------
 */

static pid_t server_pid;
static int server_stdin = -1;
static int port, closed_port;
static char log_path[4300], tok_path[4300];
static size_t log_mark;

static const char *python(void) {
  return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

static bool server_start(void) {
  const char *src = getenv("GPUFEED_SOURCE_DIR");
  if (!src || !src[0]) {
    fprintf(stderr, "GPUFEED_SOURCE_DIR is not set\n");
    return false;
  }
  char script[4200], port_path[4300];
  snprintf(script, sizeof script, "%s/tests/s3/creds_server.py", src);
  snprintf(port_path, sizeof port_path, "%s/port", gf_test_tmpdir());
  snprintf(log_path, sizeof log_path, "%s/requests.log", gf_test_tmpdir());
  int fds[2];
  if (pipe(fds) != 0)
    return false;
  server_pid = fork();
  if (server_pid == 0) {
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    execlp(python(), "python3", script, port_path, log_path, AUTH_TOKEN,
           (char *)NULL);
    _exit(127);
  }
  close(fds[0]);
  server_stdin = fds[1];
  if (server_pid < 0)
    return false;
  for (int i = 0; i < 200; i++) {
    size_t len;
    char *text = gf_test_read_file(port_path, &len);
    if (text) {
      char buf[16] = {0};
      memcpy(buf, text, len < 15 ? len : 15);
      free(text);
      port = atoi(buf);
      return port > 0;
    }
    int status;
    if (waitpid(server_pid, &status, WNOHANG) == server_pid) {
      fprintf(stderr, "creds_server.py exited (%d)\n", status);
      server_pid = 0;
      return false;
    }
    usleep(50000);
  }
  fprintf(stderr, "creds_server.py did not start in 10 s\n");
  return false;
}

static void server_stop(void) {
  if (server_stdin >= 0)
    close(server_stdin); /* it exits at the end of its input */
  if (server_pid > 0) {
    int status;
    for (int i = 0; i < 100; i++) {
      if (waitpid(server_pid, &status, WNOHANG) == server_pid)
        return;
      usleep(50000);
    }
    kill(server_pid, SIGKILL);
    waitpid(server_pid, &status, 0);
  }
}

/* A port of 127.0.0.1 that nothing listens on. */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &n) != 0) {
    if (s >= 0)
      close(s);
    return 0;
  }
  close(s);
  return ntohs(a.sin_port);
}

/* The requests the server logged since the last call (malloc'd). */
static char *logged(void) {
  size_t len = 0;
  char *text = gf_test_read_file(log_path, &len);
  char *out = malloc(len - (len >= log_mark ? log_mark : len) + 1);
  if (!out) {
    free(text);
    return NULL;
  }
  size_t from = len >= log_mark ? log_mark : len;
  memcpy(out, text ? text + from : "", len - from);
  out[len - from] = '\0';
  log_mark = len;
  free(text);
  return out;
}

static int count(const char *text, const char *part) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, part)); p++)
    n++;
  return n;
}

/* The server's URL with a path. */
static const char *at(const char *path) {
  static char buf[8][256];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "http://127.0.0.1:%d%s", port, path);
  return b;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fetches, with the checks of after(); never with the metadata service
 * on and pointed anywhere but 127.0.0.1. */
static int fetch(envtab *e) {
  const char *off = tab_get(e, "AWS_EC2_METADATA_DISABLED"),
             *ep = tab_get(e, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  bool container = tab_get(e, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") ||
                   tab_get(e, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!container && !(off && strcasecmp(off, "true") == 0) &&
      !(ep && strncmp(ep, "http://127.0.0.1:", 17) == 0)) {
    fprintf(stderr, "test bug: the metadata service would be asked\n");
    CHECK(false);
    return -1000;
  }
  memset(&f, 'x', sizeof f);
  memset(why, 'x', sizeof why);
  int rc = gf_aws_creds_fetch(tab_get, e, &f, why, sizeof why);
  CHECK(memchr(why, '\0', sizeof why) != NULL);
  CHECK(!leaks("why", why) && !leaks("source", f.source) &&
        !leaks("access key", f.access_key));
  if (rc != 1) {
    CHECK(wiped(&f) && why[0]);
    CHECK(!strchr(why, '\n'));
  } else
    CHECK(f.source[0] && f.access_key[0] && f.secret_key[0]);
  return rc;
}

/* ---- the container endpoint ---------------------------------------------- */

static void container(void) {
  envtab e;
  char *log;
  fresh_env(&e);
  char full[512];
  snprintf(full, sizeof full,
           "http://user:hunter2pw@127.0.0.1:%d/ecs/creds?id=" QUERY_SECRET,
           port);
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", full);
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH_TOKEN);
  free(logged());

  /* The document, its source without the query or the user:password;
   * the server saw the token and Accept, and no Basic credentials. */
  CHECK(fetch(&e) == 1);
  CHECK(is(f.access_key, ECS_KEY) && is(f.secret_key, ECS_SECRET) &&
        is(f.session_token, ECS_SESSION) && f.expires == ECS_EXPIRES);
  char want[512];
  snprintf(want, sizeof want, "container credentials endpoint %s",
           at("/ecs/creds"));
  CHECK(is(f.source, want));
  log = logged();
  CHECK(log && count(log, "GET /ecs/creds?id=" QUERY_SECRET " ") == 1 &&
        count(log, "auth=ok accept=application/json") == 1 &&
        count(log, "\n") == 1);
  free(log);

  /* A wrong token: 401 after botocore's three tries, 1 s apart; the
   * message names the endpoint and the status, not the token. */
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrongTOKEN");
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", NULL);
  double t0 = now_s();
  CHECK(fetch(&e) == -EACCES);
  double took = now_s() - t0;
  CHECK(took >= 1.9 && took < 10);
  CHECK(has(why, at("/ecs/creds")) && has(why, "HTTP 401") &&
        has(why, "3 tries") && has(why, "AWS_CONTAINER_CREDENTIALS_FULL_URI") &&
        !strstr(why, "wrongTOKEN") && !strstr(why, "?id"));
  log = logged();
  CHECK(log && count(log, "auth=wrong") == 3 && count(log, "\n") == 3);
  free(log);
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "1");
  /* No token: none sent (and no Basic credentials from the URL). */
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", NULL);
  CHECK(fetch(&e) == -EACCES && has(why, "HTTP 401"));
  log = logged();
  CHECK(log && count(log, "auth=none") == 1 && count(log, "\n") == 1);
  free(log);

  /* The token from a file, trimmed, over the variable; read at each
   * fetch. */
  snprintf(tok_path, sizeof tok_path, "%s/token", gf_test_tmpdir());
  CHECK_OK(gf_test_write_file(tok_path, " \t" AUTH_TOKEN "\r\n\n",
                              strlen(" \t" AUTH_TOKEN "\r\n\n")));
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tok_path);
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrongTOKEN");
  CHECK(fetch(&e) == 1 && is(f.secret_key, ECS_SECRET));
  log = logged();
  CHECK(log && count(log, "auth=ok") == 1);
  free(log);
  CHECK_OK(gf_test_write_file(tok_path, "stale", 5));
  CHECK(fetch(&e) == -EACCES);
  /* A line break inside: refused before any request. */
  static const char split[] = AUTH_TOKEN "\r\nX-Evil: 1\n";
  CHECK_OK(gf_test_write_file(tok_path, split, sizeof split - 1));
  unsigned long before = requests();
  CHECK(fetch(&e) == -EINVAL &&
        has(why, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") &&
        has(why, "line break"));
  CHECK(requests() == before);
  unlink(tok_path);
  CHECK(fetch(&e) == -ENOENT && has(why, tok_path));
  CHECK(requests() == before);
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", NULL);
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH_TOKEN "\nX-Evil: 1");
  CHECK(fetch(&e) == -EINVAL && has(why, "AWS_CONTAINER_AUTHORIZATION_TOKEN"));
  CHECK(requests() == before);
  put_env(&e, "AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH_TOKEN);

  /* A host not allowed over http: refused at once, no connection. */
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds");
  t0 = now_s();
  CHECK(fetch(&e) == -EINVAL && has(why, "10.1.2.3") &&
        has(why, "not allowed"));
  CHECK(now_s() - t0 < 0.5 && requests() == before);

  /* Every failure of a configured endpoint is an error, named; the
   * metadata service is not asked after it. */
  put_env(&e, "AWS_EC2_METADATA_DISABLED", NULL);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", at("/imds/good"));
  free(logged());
  static const struct {
    const char *path;
    int rc;
    const char *says;
  } fails[] = {
      {"/ecs/status/500", -EIO, "HTTP 500"},
      {"/ecs/status/403", -EACCES, "HTTP 403"},
      {"/ecs/status/404", -EIO, "HTTP 404"},
      {"/ecs/redirect", -EIO, "HTTP 302"},
      {"/ecs/doc/malformed", -EPROTO, "not JSON"},
      {"/ecs/doc/nosecret", -EPROTO, "no SecretAccessKey"},
      {"/ecs/doc/empty", -EPROTO, "not JSON"},
      {"/ecs/doc/big", -EPROTO, "larger than 65536 bytes"},
      {"/ecs/bigstream", -EPROTO, "larger than 65536 bytes"},
  };
  for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
    put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", at(fails[i].path));
    int rc = fetch(&e);
    if (rc != fails[i].rc)
      fprintf(stderr, "  %s: %d (%s)\n", fails[i].path, rc, why);
    CHECK(rc == fails[i].rc && has(why, fails[i].says) &&
          has(why, at(fails[i].path)));
  }
  log = logged();
  CHECK(log && !strstr(log, "/imds/") && !strstr(log, "GET /ecs/creds") &&
        count(log, "\n") == sizeof fails / sizeof fails[0]);
  free(log);
  /* Nothing listening; no answer in time. */
  char closed[128];
  snprintf(closed, sizeof closed, "http://127.0.0.1:%d/creds", closed_port);
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", closed);
  CHECK(fetch(&e) == -ECONNREFUSED && has(why, "refused the connection") &&
        has(why, closed));
  put_env(&e, "AWS_CONTAINER_CREDENTIALS_FULL_URI", at("/ecs/slow"));
  put_env(&e, "AWS_METADATA_SERVICE_TIMEOUT", "1");
  t0 = now_s();
  CHECK(fetch(&e) == -ETIMEDOUT && has(why, "did not answer in 1 s"));
  took = now_s() - t0;
  CHECK(took >= 0.9 && took < 5);
  free(logged());
}

/* ---- the instance metadata service --------------------------------------- */

static int imds_mode(envtab *e, const char *mode) {
  char path[128];
  snprintf(path, sizeof path, "/imds/%s", mode);
  put_env(e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", at(path));
  return fetch(e);
}

static void instance(void) {
  envtab e;
  char *log;
  fresh_env(&e);
  put_env(&e, "AWS_EC2_METADATA_DISABLED", NULL);
  free(logged());

  /* IMDSv2: the token's PUT with its TTL, then both GETs with it. */
  CHECK(imds_mode(&e, "good") == 1);
  CHECK(is(f.access_key, IMDS_KEY) && is(f.secret_key, IMDS_SECRET) &&
        is(f.session_token, IMDS_SESSION) && f.expires == IMDS_EXPIRES);
  CHECK(is(f.source, "EC2 instance metadata (IMDSv2), role test-role"));
  log = logged();
  CHECK(log &&
        count(log, "PUT /imds/good/latest/api/token ttl=21600 tok=0") == 1 &&
        count(log, "GET /imds/good/latest/meta-data/iam/security-credentials/ "
                   "ttl=- tok=1") == 1 &&
        count(log, "GET /imds/good/latest/meta-data/iam/security-credentials/"
                   "test-role ttl=- tok=1") == 1 &&
        count(log, "\n") == 3);
  free(log);
  /* An endpoint given with its '/' works alike. */
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", at("/imds/good/"));
  CHECK(fetch(&e) == 1 && is(f.secret_key, IMDS_SECRET));
  free(logged());

  /* The token refused with 403 or 405: IMDSv1, as botocore, unless
   * AWS_EC2_METADATA_V1_DISABLED. */
  CHECK(imds_mode(&e, "v1") == 1 && is(f.secret_key, IMDS_SECRET) &&
        is(f.source, "EC2 instance metadata (IMDSv1), role test-role"));
  log = logged();
  CHECK(log && count(log, "tok=0") == 3 && count(log, "\n") == 3);
  free(log);
  CHECK(imds_mode(&e, "v1-405") == 1 && has(f.source, "IMDSv1"));
  /* ... at once: a 403 is not tried again. */
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "3");
  free(logged());
  CHECK(imds_mode(&e, "v1") == 1 && has(f.source, "IMDSv1"));
  log = logged();
  CHECK(log && count(log, "PUT ") == 1 && count(log, "GET ") == 2);
  free(log);
  put_env(&e, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "1");
  put_env(&e, "AWS_EC2_METADATA_V1_DISABLED", "true");
  CHECK(imds_mode(&e, "v1") == -EACCES &&
        has(why, "AWS_EC2_METADATA_V1_DISABLED") && has(why, "HTTP 403"));
  CHECK(imds_mode(&e, "good") == 1);
  put_env(&e, "AWS_EC2_METADATA_V1_DISABLED", NULL);
  free(logged());

  /* No credentials, not an error: disabled (no request), nothing
   * listening, no role, the token refused with 400, the document gone. */
  put_env(&e, "AWS_EC2_METADATA_DISABLED", "True");
  unsigned long before = requests();
  CHECK(imds_mode(&e, "good") == 0 &&
        is(why, "no container credentials variable; instance metadata "
                "disabled (AWS_EC2_METADATA_DISABLED)"));
  CHECK(requests() == before);
  put_env(&e, "AWS_EC2_METADATA_DISABLED", "false");
  char closed[128], want[300];
  snprintf(closed, sizeof closed, "http://127.0.0.1:%d", closed_port);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT", closed);
  before = requests();
  CHECK(fetch(&e) == 0);
  snprintf(want, sizeof want,
           "no container credentials variable; instance metadata at %s "
           "refused the connection or is unreachable",
           closed);
  CHECK(is(why, want));
  CHECK(requests() == before + 1); /* no IMDSv1 try after it */
  CHECK(imds_mode(&e, "norole") == 0 && has(why, "no IAM role") &&
        has(why, "HTTP 404") && has(why, at("/imds/norole")));
  CHECK(imds_mode(&e, "emptyrole") == 0 && has(why, "no IAM role"));
  CHECK(imds_mode(&e, "token400") == 0 && has(why, "HTTP 400"));
  CHECK(imds_mode(&e, "gone") == 0 && has(why, "HTTP 404") &&
        has(why, "test-role"));
  log = logged();
  CHECK(log && !strstr(log, "/imds/token400/latest/meta-data"));
  free(log);

  /* Answered, but wrong: errors. */
  CHECK(imds_mode(&e, "baddoc") == -EPROTO && has(why, "not JSON") &&
        has(why, at("/imds/baddoc")));
  CHECK(imds_mode(&e, "failcode") == -EPROTO &&
        has(why, "AssumeRoleUnauthorizedAccess"));
  CHECK(imds_mode(&e, "badrole") == -EPROTO && has(why, "role") &&
        !strstr(why, "passwd"));
  log = logged();
  CHECK(log && !strstr(log, "passwd"));
  free(log);

  /* A bad variable: refused before any request. */
  before = requests();
  put_env(&e, "AWS_METADATA_SERVICE_TIMEOUT", "soon");
  CHECK(imds_mode(&e, "good") == -EINVAL &&
        has(why, "AWS_METADATA_SERVICE_TIMEOUT"));
  put_env(&e, "AWS_METADATA_SERVICE_TIMEOUT", NULL);
  put_env(&e, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv5");
  CHECK(imds_mode(&e, "good") == -EINVAL);
  CHECK(requests() == before);
}

int main(void) {
  document();
  url_forms();
  closed_port = free_port();
  if (!server_start()) {
    server_stop();
    if (gf_test_failures)
      return gf_test_finish();
    gf_test_skip(false, "tests/s3/creds_server.py did not start (%s)",
                 python());
  }
  container();
  instance();
  server_stop();
  return gf_test_finish();
}
