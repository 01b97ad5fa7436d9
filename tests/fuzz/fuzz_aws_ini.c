/* Fuzz target: the AWS shared files (lib/io/s3_config.c): the INI reader
 * botocore's rules describe, and the chain that reads a profile from it.
 *
 * Input: byte 0 chooses.
 *   'R': bytes 1 and 2 choose the environment (byte 1: AWS_PROFILE unset,
 *        "default", "dev" or "my team"; byte 2's bits: AWS_REGION set,
 *        the environment's credentials, AWS_ENDPOINT_URL set,
 *        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true); the rest, cut at its
 *        first NUL byte, is the credentials file then the config file
 *        (no NUL: the config file alone); then the chain resolves.
 *   else: the whole input is one file, read by gf_aws_ini_parse.
 * Promises: the reader's entries are well formed (a section named, keys
 * trimmed and lower-cased, values trimmed, lines in order and in range)
 * and the same with every LF made CRLF; a refusal names the file and a
 * line; a resolved configuration holds a valid region, an addressing
 * style, sources, and never the secret key outside its field. */
#include "fuzz.h"

#include "io/s3_config.h"

#include <strings.h>

typedef struct seen {
  unsigned lines;     /* the input's line count, an upper bound */
  unsigned last_line; /* the last header's or key's line */
  uint64_t hash;      /* of everything reported, for the CRLF copy */
  unsigned count;
} seen;

static bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static void mix(seen *s, const char *p) {
  for (; p && *p; p++)
    s->hash = (s->hash ^ (unsigned char)*p) * 0x100000001b3ull;
  s->hash = (s->hash ^ 0xff) * 0x100000001b3ull;
}

static int check_entry(void *ctx, const gf_aws_ini_entry *e, char *why,
                       size_t cap) {
  (void)why;
  (void)cap;
  seen *s = ctx;
  FUZZ_ASSERT(e->section && e->section[0] && e->value);
  FUZZ_ASSERT(strlen(e->section) < GF_AWS_INI_SECTION_MAX);
  FUZZ_ASSERT(strlen(e->value) < GF_AWS_INI_VALUE_MAX);
  FUZZ_ASSERT(e->line >= 1 && e->line <= s->lines);
  size_t vn = strlen(e->value);
  FUZZ_ASSERT(!vn || (!blank(e->value[0]) && !blank(e->value[vn - 1])));
  if (!e->key) {
    FUZZ_ASSERT(!e->sub && !e->value[0]);
  } else {
    size_t kn = strlen(e->key);
    FUZZ_ASSERT(kn > 0 && kn < GF_AWS_INI_KEY_MAX);
    FUZZ_ASSERT(!blank(e->key[0]) && !blank(e->key[kn - 1]));
    FUZZ_ASSERT(!strpbrk(e->key, "=:\n\r"));
    for (const char *p = e->key; *p; p++)
      FUZZ_ASSERT(!(*p >= 'A' && *p <= 'Z'));
    if (e->sub) {
      FUZZ_ASSERT(strlen(e->sub) < GF_AWS_INI_KEY_MAX && !strchr(e->sub, '='));
      FUZZ_ASSERT(!strchr(e->value, '\n'));
    }
  }
  /* A key comes after its nested pairs, so its line is not after
   * theirs; anything else moves forward. */
  if (!e->key || e->sub)
    FUZZ_ASSERT(e->line >= s->last_line);
  if (!e->key || e->sub)
    s->last_line = e->line;
  mix(s, e->section);
  mix(s, e->key);
  mix(s, e->sub);
  mix(s, e->value);
  s->hash ^= e->line;
  s->count++;
  return 0;
}

static unsigned count_lines(const uint8_t *d, size_t n) {
  unsigned lines = 0;
  for (size_t i = 0; i < n;) {
    while (i < n && d[i] != '\n' && d[i] != '\r')
      i++;
    if (i < n)
      i += d[i] == '\r' && i + 1 < n && d[i + 1] == '\n' ? 2 : 1;
    lines++;
  }
  return lines;
}

static int parse_checked(const uint8_t *d, size_t n, seen *s, char *why,
                         size_t cap) {
  memset(s, 0, sizeof *s);
  s->lines = count_lines(d, n);
  s->hash = 0xcbf29ce484222325ull;
  int rc = gf_aws_ini_parse((const char *)d, n, "fuzz.ini", check_entry, s, why,
                            cap);
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
  FUZZ_ASSERT(memchr(why, 0, cap));
  if (rc == -EINVAL) {
    unsigned line;
    FUZZ_ASSERT(sscanf(why, "fuzz.ini line %u: ", &line) == 1);
    FUZZ_ASSERT(line >= 1 && line <= s->lines);
  }
  return rc;
}

static void parse_case(const uint8_t *data, size_t size) {
  seen a, b;
  char why_a[512], why_b[512];
  int rc = parse_checked(data, size, &a, why_a, sizeof why_a);
  /* The same text with CRLF line ends reads the same (not where a lone
   * CR is already there: "\r\r\n" would be two ends). */
  if (memchr(data, '\r', size) || size > (1u << 16))
    return;
  size_t lf = 0;
  for (size_t i = 0; i < size; i++)
    lf += data[i] == '\n';
  uint8_t *crlf = fuzz_alloc(size + lf);
  size_t n = 0;
  for (size_t i = 0; i < size; i++) {
    if (data[i] == '\n')
      crlf[n++] = '\r';
    crlf[n++] = data[i];
  }
  int rc2 = parse_checked(crlf, n, &b, why_b, sizeof why_b);
  FUZZ_ASSERT(rc == rc2 && a.count == b.count && a.hash == b.hash);
  if (rc)
    FUZZ_ASSERT(strcmp(why_a, why_b) == 0);
  free(crlf);
}

typedef struct fenv {
  const char *name[12], *value[12];
  int n;
} fenv;

static const char *fenv_get(void *ctx, const char *name) {
  fenv *e = ctx;
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0)
      return e->value[i];
  return NULL;
}

static void fenv_put(fenv *e, const char *name, const char *value) {
  e->name[e->n] = name;
  e->value[e->n++] = value;
}

static void resolve_case(const uint8_t *data, size_t size) {
  if (size < 3)
    return;
  static const char *const profiles[] = {NULL, "default", "dev", "my team"};
  const char *profile = profiles[data[1] & 3];
  uint8_t bits = data[2];
  const uint8_t *text = data + 3;
  size_t n = size - 3;
  const uint8_t *nul = memchr(text, 0, n);
  char cred[4200], conf[4200];
  snprintf(cred, sizeof cred, "%s/credentials", fuzz_tmpdir());
  snprintf(conf, sizeof conf, "%s/config", fuzz_tmpdir());
  if (nul) {
    fuzz_write_file(cred, text, (size_t)(nul - text));
    fuzz_write_file(conf, nul + 1, n - (size_t)(nul - text) - 1);
  } else {
    fuzz_write_file(cred, "", 0);
    fuzz_write_file(conf, text, n);
  }
  fenv e = {0};
  fenv_put(&e, "HOME", "/nonexistent-home");
  fenv_put(&e, "AWS_SHARED_CREDENTIALS_FILE", cred);
  fenv_put(&e, "AWS_CONFIG_FILE", conf);
  if (profile)
    fenv_put(&e, "AWS_PROFILE", profile);
  if (bits & 1)
    fenv_put(&e, "AWS_REGION", "eu-west-1");
  if (bits & 2) {
    fenv_put(&e, "AWS_ACCESS_KEY_ID", "AKIDFUZZ");
    fenv_put(&e, "AWS_SECRET_ACCESS_KEY", "fuzzSECRETk3J9/q+Zr");
  }
  if (bits & 4)
    fenv_put(&e, "AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  if (bits & 8)
    fenv_put(&e, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");

  gf_aws_config *c = fuzz_alloc(sizeof *c);
  char why[512];
  int rc = gf_aws_config_resolve(fenv_get, &e, c, why, sizeof why);
  FUZZ_ASSERT(memchr(why, 0, sizeof why));
  if (rc < 0) {
    FUZZ_ASSERT(rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
    FUZZ_ASSERT(why[0] && !c->have_credentials && !c->secret_key[0]);
  } else {
    FUZZ_ASSERT(c->region[0] && c->region_source[0] && c->profile[0] &&
                c->endpoint_source[0]);
    FUZZ_ASSERT(c->addressing >= GF_AWS_ADDRESSING_AUTO &&
                c->addressing <= GF_AWS_ADDRESSING_VIRTUAL);
    FUZZ_ASSERT(strspn(c->region, "abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") ==
                strlen(c->region));
    FUZZ_ASSERT(!c->endpoint[0] || strncasecmp(c->endpoint, "http", 4) == 0);
    FUZZ_ASSERT(!(bits & 8) || !c->endpoint[0]);
    FUZZ_ASSERT(c->have_credentials == (c->cred_source[0] != 0));
    FUZZ_ASSERT(!(bits & 2) || strcmp(c->cred_source, "environment") == 0);
    /* The secret is nowhere but in its field: not in a source string,
     * unless the fixed parts of one (paths, profile name, words, the
     * "[section name]" it names) hold it by chance. */
    const char *sk = c->secret_key;
    if (c->have_credentials && strlen(sk) >= 8) {
      char fixed[12000];
      snprintf(fixed, sizeof fixed,
               "%s %s %s shared credentials file config file environment "
               "profile AWS_REGION AWS_DEFAULT_REGION default [%s %s] "
               "[profile %s %s]",
               cred, conf, c->profile, c->profile, c->profile, c->profile,
               c->profile);
      if (!strstr(fixed, sk))
        FUZZ_ASSERT(!strstr(c->cred_source, sk) &&
                    !strstr(c->region_source, sk) && !strstr(c->cred_note, sk));
    }
  }
  gf_aws_config_clear(c);
  for (size_t i = 0; i < sizeof *c; i++)
    FUZZ_ASSERT(((const uint8_t *)c)[i] == 0);
  free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 1 && data[0] == 'R')
    resolve_case(data, size);
  else
    parse_case(data, size);
  return 0;
}
