/* The AWS CLI's INI files (s3_config.h's gf_aws_ini_parse): botocore's
 * rules for sections, keys, comments, continued values and nested blocks,
 * over bytes in memory. Every buffer is fixed; the one that held a value
 * (perhaps a secret) is wiped before it is let go. */
#include "io/s3_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* explicit_bzero */

typedef struct ini {
  const char *path;
  gf_aws_ini_fn fn;
  void *ctx;
  char *why;
  size_t cap;
  bool have_section;
  bool pending;      /* a key whose value may go on (configparser's optname) */
  bool nested;       /* its value was "": deeper lines are its nested block */
  size_t key_indent; /* the pending key line's indent */
  unsigned key_line;
  size_t blanks; /* blank lines since the value's last line */
  size_t vlen;
  char section[GF_AWS_INI_SECTION_MAX];
  char key[GF_AWS_INI_KEY_MAX];
  char sub[GF_AWS_INI_KEY_MAX];
  char value[GF_AWS_INI_VALUE_MAX]; /* may be a secret */
} ini;

static bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* The reason is about the line, never its bytes (a secret pasted alone
 * on a line is still a secret). */
static int ini_fail(ini *p, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ini_fail(ini *p, unsigned line, const char *fmt, ...) {
  if (!p->why || !p->cap)
    return -EINVAL;
  int n = snprintf(p->why, p->cap, "%s line %u: ", p->path, line);
  if (n >= 0 && (size_t)n < p->cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why + n, p->cap - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}

static int ini_emit(ini *p, const char *key, const char *sub, const char *value,
                    unsigned line) {
  if (!p->fn)
    return 0;
  gf_aws_ini_entry e = {p->section, key, sub, value, line};
  return p->fn(p->ctx, &e, p->why, p->cap);
}

/* The pending key is complete: report it (a nested block's parent with
 * "", its pairs having gone already). */
static int ini_finish(ini *p) {
  p->pending = false;
  p->value[p->nested ? 0 : p->vlen] = '\0';
  return ini_emit(p, p->key, NULL, p->value, p->key_line);
}

/* A line deeper than the pending key's: a nested pair, or more value. */
static int ini_continue(ini *p, const char *t, size_t n, unsigned line) {
  if (!p->nested) {
    size_t need = p->vlen + p->blanks + 1 + n;
    if (need >= sizeof p->value)
      return ini_fail(p, line,
                      "the value of %s (from line %u) is longer than %zu "
                      "bytes",
                      p->key, p->key_line, sizeof p->value - 1);
    memset(p->value + p->vlen, '\n', p->blanks + 1);
    memcpy(p->value + p->vlen + p->blanks + 1, t, n);
    p->vlen = need;
    p->blanks = 0;
    return 0;
  }
  /* botocore's _parse_nested: split at the first '=', both sides
   * stripped, the name kept in its case. */
  const char *eq = memchr(t, '=', n);
  if (!eq)
    return ini_fail(p, line, "a line of the block under %s without '='",
                    p->key);
  size_t sn = (size_t)(eq - t);
  while (sn && blank(t[sn - 1]))
    sn--;
  if (sn >= sizeof p->sub)
    return ini_fail(p, line, "a name under %s longer than %zu bytes", p->key,
                    sizeof p->sub - 1);
  memcpy(p->sub, t, sn);
  p->sub[sn] = '\0';
  const char *v = eq + 1, *end = t + n;
  while (v < end && blank(*v))
    v++;
  size_t vn = (size_t)(end - v);
  if (vn >= sizeof p->value)
    return ini_fail(p, line, "the value of %s.%s is longer than %zu bytes",
                    p->key, p->sub, sizeof p->value - 1);
  memcpy(p->value, v, vn);
  p->value[vn] = '\0';
  return ini_emit(p, p->key, p->sub, p->value, line);
}

static int ini_line(ini *p, const char *s, size_t n, unsigned line) {
  if (memchr(s, '\0', n))
    return ini_fail(p, line, "a NUL byte");
  size_t indent = 0, end = n;
  while (indent < n && blank(s[indent]))
    indent++;
  while (end > indent && blank(s[end - 1]))
    end--;
  const char *t = s + indent;
  size_t tn = end - indent;
  if (tn == 0) {
    /* A blank line keeps a value going (configparser's
     * empty_lines_in_values). */
    if (p->pending && !p->nested)
      p->blanks++;
    return 0;
  }
  if (t[0] == '#' || t[0] == ';')
    return 0;
  /* Deeper than the key line: the key goes on, whatever the line holds
   * (a "[x]" there is not a section). */
  if (p->pending && indent > p->key_indent)
    return ini_continue(p, t, tn, line);
  int rc;
  if (p->pending && (rc = ini_finish(p)) < 0)
    return rc;

  /* "[" ... the last "]": what Python's \[(?P<header>.+)\] matches. */
  const char *close = t[0] == '[' ? memrchr(t, ']', tn) : NULL;
  if (close && close > t + 1) {
    size_t sn = (size_t)(close - t - 1);
    if (sn >= sizeof p->section)
      return ini_fail(p, line, "a section name longer than %zu bytes",
                      sizeof p->section - 1);
    memcpy(p->section, t + 1, sn);
    p->section[sn] = '\0';
    p->have_section = true;
    return ini_emit(p, NULL, NULL, "", line);
  }
  if (!p->have_section)
    return ini_fail(p, line, "a line before the first [section]");
  size_t d = 0;
  while (d < tn && t[d] != '=' && t[d] != ':')
    d++;
  if (d == tn)
    return ini_fail(p, line,
                    "neither a [section], a key = value line nor a comment");
  size_t kn = d;
  while (kn && blank(t[kn - 1]))
    kn--;
  if (kn == 0)
    return ini_fail(p, line, "a '%c' with no key before it", t[d]);
  if (kn >= sizeof p->key)
    return ini_fail(p, line, "a key name longer than %zu bytes",
                    sizeof p->key - 1);
  for (size_t i = 0; i < kn; i++) /* configparser's optionxform */
    p->key[i] = (char)(t[i] >= 'A' && t[i] <= 'Z' ? t[i] + 32 : t[i]);
  p->key[kn] = '\0';
  size_t v = d + 1;
  while (v < tn && blank(t[v]))
    v++;
  if (tn - v >= sizeof p->value)
    return ini_fail(p, line, "the value of %s is longer than %zu bytes", p->key,
                    sizeof p->value - 1);
  memcpy(p->value, t + v, tn - v);
  p->vlen = tn - v;
  p->pending = true;
  p->nested = p->vlen == 0;
  p->key_indent = indent;
  p->key_line = line;
  p->blanks = 0;
  return 0;
}

int gf_aws_ini_parse(const char *text, size_t len, const char *path,
                     gf_aws_ini_fn fn, void *ctx, char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  ini *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  p->path = path ? path : "config";
  p->fn = fn;
  p->ctx = ctx;
  p->why = why;
  p->cap = cap;
  int rc = 0;
  unsigned line = 0;
  size_t i = 0;
  /* Lines end at "\n", "\r\n" or a lone "\r" (Python's universal
   * newlines); the last one may have no end. */
  while (rc == 0 && i < len) {
    size_t start = i;
    while (i < len && text[i] != '\n' && text[i] != '\r')
      i++;
    size_t end = i;
    if (i < len)
      i += text[i] == '\r' && i + 1 < len && text[i + 1] == '\n' ? 2 : 1;
    rc = ini_line(p, text + start, end - start, ++line);
  }
  if (rc == 0 && p->pending)
    rc = ini_finish(p);
  explicit_bzero(p, sizeof *p);
  free(p);
  return rc;
}
