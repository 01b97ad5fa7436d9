/* The XML reader behind S3's replies (s3_xml_reader.h): a pull tokenizer
 * over the body (one loop, no recursion; the open elements' names kept as
 * offsets into the body, so closing one costs its name's length), the
 * decoding of a field's text into a sink (a fixed buffer, cut when over,
 * or one growing buffer), and text escaped for a request. What the
 * documents mean is s3_xml.c's. */
#include "io/s3_xml_reader.h"

#include "common/common.h" /* gf_say */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* memrchr */

#define ENTITY_MAX 40 /* "&...;" longer than this is refused */

/* ---- messages ------------------------------------------------------------ */

void gf_xml_quote(char *dst, size_t dcap, const char *s, size_t n, size_t max) {
  size_t k = n < max ? n : max;
  if (k < n) /* back to a UTF-8 sequence's start */
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
      k--;
  size_t o = 0;
  for (size_t i = 0; i < k && o + 1 < dcap; i++) {
    unsigned char c = (unsigned char)s[i];
    dst[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  if (k < n)
    for (int i = 0; i < 3 && o + 1 < dcap; i++)
      dst[o++] = '.';
  if (dcap)
    dst[o] = '\0';
}

int gf_xml_fail(gf_xml *x, size_t off, const char *fmt, ...) {
  if (!x->why || !x->wcap)
    return -EPROTO;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(x->why, x->wcap, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < x->wcap)
    snprintf(x->why + n, x->wcap - (size_t)n, " (byte %zu)", off);
  return -EPROTO;
}

/* ---- the tokenizer ------------------------------------------------------- */

static bool xml_ws(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool name_start(unsigned char c) {
  return ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_' || c == ':' ||
         c >= 0x80;
}

static bool name_char(unsigned char c) {
  return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* The length of the name at i (0: none there). */
static size_t name_at(const gf_xml *x, size_t i) {
  size_t j = i;
  if (j < x->len && name_start((unsigned char)x->b[j]))
    for (j++; j < x->len && name_char((unsigned char)x->b[j]);)
      j++;
  return j - i;
}

static void set_name(gf_xml_tok *t, const char *s, size_t n) {
  t->s = s;
  t->n = n;
  const char *colon = memrchr(s, ':', n);
  t->local = colon ? colon + 1 : s;
  t->ln = n - (size_t)(t->local - s);
}

void gf_xml_init(gf_xml *x, const char *body, size_t len, char *why,
                 size_t wcap) {
  memset(x, 0, sizeof *x);
  x->b = body ? body : "";
  x->len = body ? len : 0;
  x->why = why;
  x->wcap = wcap;
  /* A UTF-8 byte order mark, which some servers write. */
  if (x->len >= 3 && memcmp(x->b, "\xef\xbb\xbf", 3) == 0)
    x->i = 3;
}

/* The innermost open element ends. */
static int xml_close(gf_xml *x, gf_xml_tok *t, size_t off) {
  x->depth--;
  int d = x->depth;
  t->kind = GF_XML_END;
  t->off = off;
  t->depth = d + 1;
  set_name(t, x->b + x->name_off[d], x->name_len[d]);
  if (d == 0)
    x->root_done = true;
  return 0;
}

static int xml_start_tag(gf_xml *x, gf_xml_tok *t, size_t i) {
  const char *b = x->b;
  size_t len = x->len, n = name_at(x, i + 1);
  char q[64];
  if (n == 0) {
    gf_xml_quote(q, sizeof q, b + i, len - i < 8 ? len - i : 8,
                 GF_XML_QUOTE_MAX);
    return gf_xml_fail(x, i, "a '<' that starts no element: \"%s\"", q);
  }
  if (x->root_done) {
    gf_xml_quote(q, sizeof q, b + i + 1, n, GF_XML_QUOTE_MAX);
    return gf_xml_fail(x, i, "a second root element <%s>", q);
  }
  if (x->depth == GF_XML_DEPTH)
    return gf_xml_fail(x, i, "elements nested deeper than %d", GF_XML_DEPTH);
  bool empty = false;
  size_t j = i + 1 + n;
  for (;;) {
    size_t before = j;
    while (j < len && xml_ws(b[j]))
      j++;
    if (j == len)
      return gf_xml_fail(x, i, "the body ends inside a tag");
    if (b[j] == '>') {
      j++;
      break;
    }
    if (b[j] == '/') {
      if (j + 1 < len && b[j + 1] == '>') {
        empty = true;
        j += 2;
        break;
      }
      return gf_xml_fail(x, j, "a '/' inside a tag");
    }
    size_t an = name_at(x, j);
    if (an == 0 || j == before)
      return gf_xml_fail(x, j, "a malformed attribute");
    j += an;
    while (j < len && xml_ws(b[j]))
      j++;
    if (j < len && b[j] != '=')
      return gf_xml_fail(x, j, "an attribute without '='");
    for (j++; j < len && xml_ws(b[j]);)
      j++;
    if (j < len && b[j] != '"' && b[j] != '\'')
      return gf_xml_fail(x, j, "an attribute's value without quotes");
    if (j >= len)
      return gf_xml_fail(x, i, "the body ends inside a tag");
    const char *v = b + j + 1;
    const char *end = memchr(v, b[j], len - j - 1);
    if (!end)
      return gf_xml_fail(x, j, "the body ends inside an attribute's value");
    if (memchr(v, '<', (size_t)(end - v)))
      return gf_xml_fail(x, j, "a '<' in an attribute's value");
    j = (size_t)(end - b) + 1;
  }
  x->name_off[x->depth] = i + 1;
  x->name_len[x->depth] = n;
  x->depth++;
  x->root_seen = true;
  x->close_next = empty;
  x->i = j;
  t->kind = GF_XML_START;
  t->off = i;
  t->depth = x->depth;
  set_name(t, b + i + 1, n);
  return 0;
}

static int xml_end_tag(gf_xml *x, gf_xml_tok *t, size_t i) {
  const char *b = x->b;
  size_t len = x->len, n = name_at(x, i + 2), j = i + 2 + n;
  while (j < len && xml_ws(b[j]))
    j++;
  if (j == len)
    return gf_xml_fail(x, i, "the body ends inside an end tag");
  if (n == 0 || b[j] != '>')
    return gf_xml_fail(x, i, "a malformed end tag");
  char q[64], q2[64];
  gf_xml_quote(q, sizeof q, b + i + 2, n, GF_XML_QUOTE_MAX / 2);
  if (x->depth == 0)
    return gf_xml_fail(x, i, "an end tag </%s> with no element open", q);
  int d = x->depth - 1;
  if (n != x->name_len[d] || memcmp(b + i + 2, b + x->name_off[d], n) != 0) {
    gf_xml_quote(q2, sizeof q2, b + x->name_off[d], x->name_len[d],
                 GF_XML_QUOTE_MAX / 2);
    return gf_xml_fail(x, i, "the end tag </%s> closes <%s>", q, q2);
  }
  x->i = j + 1;
  return xml_close(x, t, i);
}

/* The first pat (n bytes) in s[0, len), or NULL. Not memmem: the
 * sanitizers' memmem checks the whole haystack at each call, which makes a
 * body of many comments quadratic under ASan; memchr's checks up to what
 * it finds. */
static const char *find(const char *s, size_t len, const char *pat, size_t n) {
  const char *end = s + len;
  while ((size_t)(end - s) >= n) {
    const char *c = memchr(s, pat[0], (size_t)(end - s) - n + 1);
    if (!c || memcmp(c, pat, n) == 0)
      return c;
    s = c + 1;
  }
  return NULL;
}

/* Text outside the root (whitespace only), comments and processing
 * instructions are passed over; anything that is not XML as S3 writes it
 * is -EPROTO. GF_XML_EOF only after the root has closed. */
int gf_xml_next(gf_xml *x, gf_xml_tok *t) {
  const char *b = x->b;
  size_t len = x->len;
  if (!x->nul_checked) {
    /* XML has no NUL byte, raw or referred to (&#0; is refused). */
    x->nul_checked = true;
    const char *nul = memchr(b, '\0', len);
    if (nul)
      return gf_xml_fail(x, (size_t)(nul - b), "a NUL byte");
  }
  if (x->close_next) {
    x->close_next = false;
    return xml_close(x, t, x->i);
  }
  for (;;) {
    size_t i = x->i, rest = len - i;
    char q[64];
    if (i == len) {
      if (x->depth) {
        int d = x->depth - 1;
        gf_xml_quote(q, sizeof q, b + x->name_off[d], x->name_len[d],
                     GF_XML_QUOTE_MAX);
        return gf_xml_fail(x, i, "the body ends inside <%s>", q);
      }
      if (!x->root_seen)
        return gf_xml_fail(x, i, "no element");
      t->kind = GF_XML_EOF;
      t->off = i;
      return 0;
    }
    if (b[i] != '<') {
      const char *lt = memchr(b + i, '<', rest);
      size_t j = lt ? (size_t)(lt - b) : len;
      x->i = j;
      if (x->depth == 0) {
        for (size_t k = i; k < j; k++)
          if (!xml_ws(b[k]))
            return gf_xml_fail(x, k, "text outside the root element");
        continue;
      }
      t->kind = GF_XML_TEXT;
      t->s = b + i;
      t->n = j - i;
      t->off = i;
      return 0;
    }
    if (rest >= 2 && b[i + 1] == '?') {
      const char *e = find(b + i + 2, rest - 2, "?>", 2);
      if (!e)
        return gf_xml_fail(x, i, "an unterminated <?...?>");
      x->i = (size_t)(e - b) + 2;
      continue;
    }
    if (rest >= 4 && memcmp(b + i, "<!--", 4) == 0) {
      const char *e = find(b + i + 4, rest - 4, "-->", 3);
      if (!e)
        return gf_xml_fail(x, i, "an unterminated comment");
      x->i = (size_t)(e - b) + 3;
      continue;
    }
    if (rest >= 9 && memcmp(b + i, "<![CDATA[", 9) == 0) {
      if (x->depth == 0)
        return gf_xml_fail(x, i, "a CDATA section outside the root element");
      const char *s = b + i + 9, *e = find(s, rest - 9, "]]>", 3);
      if (!e)
        return gf_xml_fail(x, i, "an unterminated CDATA section");
      x->i = (size_t)(e - b) + 3;
      t->kind = GF_XML_CDATA;
      t->s = s;
      t->n = (size_t)(e - s);
      t->off = i;
      return 0;
    }
    if (rest >= 2 && b[i + 1] == '!') {
      if (rest >= 9 && memcmp(b + i, "<!DOCTYPE", 9) == 0)
        return gf_xml_fail(x, i, "a DOCTYPE (no DTD is read)");
      gf_xml_quote(q, sizeof q, b + i, rest < 9 ? rest : 9, GF_XML_QUOTE_MAX);
      return gf_xml_fail(x, i, "an unknown or cut declaration \"%s\"", q);
    }
    if (rest >= 2 && b[i + 1] == '/')
      return xml_end_tag(x, t, i);
    return xml_start_tag(x, t, i);
  }
}

/* ---- text ---------------------------------------------------------------- */

void gf_xml_sink_fixed(gf_xml_sink *s, char *p, size_t cap) {
  memset(s, 0, sizeof *s);
  s->p = p;
  s->cap = cap;
  if (p && cap)
    p[0] = '\0';
}

void gf_xml_sink_reset(gf_xml_sink *s) {
  s->len = 0;
  s->over = false;
  if (s->p && s->cap)
    s->p[0] = '\0';
}

static int sink_put(gf_xml *x, gf_xml_sink *s, const char *d, size_t n) {
  if (!s || n == 0)
    return 0;
  if (n >= s->cap - s->len) {
    if (s->grow) {
      size_t c = s->cap ? s->cap : 256;
      while (c <= s->len + n)
        c *= 2;
      char *p = realloc(s->p, c);
      if (!p) {
        gf_say(x->why, x->wcap, "out of memory (a field of %zu bytes)",
               s->len + n);
        return -ENOMEM;
      }
      s->p = p;
      s->cap = c;
    } else {
      size_t room = s->cap ? s->cap - 1 - s->len : 0;
      if (n > room) {
        n = room;
        s->over = true;
      }
    }
  }
  if (n)
    memcpy(s->p + s->len, d, n);
  s->len += n;
  return 0;
}

void gf_xml_sink_end(gf_xml_sink *s) {
  if (s && s->p && s->cap)
    s->p[s->len] = '\0';
}

/* Shortens *len so that p[0, *len) does not end inside a UTF-8 sequence. */
static void utf8_trim(const char *p, size_t *len) {
  size_t n = *len, k = n;
  while (k > 0 && n - k < 3 && ((unsigned char)p[k - 1] & 0xc0) == 0x80)
    k--;
  if (k == 0)
    return;
  unsigned char lead = (unsigned char)p[k - 1];
  size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (want > 1 && n - (k - 1) < want)
    *len = k - 1;
}

void gf_xml_sink_for_people(gf_xml_sink *s) {
  if (!s || !s->p || !s->cap)
    return;
  if (s->over)
    utf8_trim(s->p, &s->len);
  for (size_t i = 0; i < s->len; i++)
    if ((unsigned char)s->p[i] < 0x20 || s->p[i] == 0x7f)
      s->p[i] = '?';
  s->p[s->len] = '\0';
}

void gf_xml_sink_trimmed(const gf_xml_sink *s, const char **p, size_t *n) {
  const char *a = s->p, *e = s->p + s->len;
  while (a < e && xml_ws(*a))
    a++;
  while (e > a && xml_ws(e[-1]))
    e--;
  *p = a;
  *n = (size_t)(e - a);
}

bool gf_xml_sink_is(const gf_xml_sink *s, const char *want) {
  const char *v;
  size_t n;
  gf_xml_sink_trimmed(s, &v, &n);
  return !s->over && strlen(want) == n && memcmp(v, want, n) == 0;
}

bool gf_xml_sink_u64(const gf_xml_sink *s, uint64_t *out) {
  const char *v;
  size_t n;
  gf_xml_sink_trimmed(s, &v, &n);
  uint64_t x = 0;
  if (s->over || n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned)(v[i] - '0');
    if (d > 9 || x > (UINT64_MAX - d) / 10)
      return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

static size_t utf8_put(char *u, uint32_t c) {
  if (c < 0x80) {
    u[0] = (char)c;
    return 1;
  }
  if (c < 0x800) {
    u[0] = (char)(0xc0 | (c >> 6));
    u[1] = (char)(0x80 | (c & 0x3f));
    return 2;
  }
  if (c < 0x10000) {
    u[0] = (char)(0xe0 | (c >> 12));
    u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
    u[2] = (char)(0x80 | (c & 0x3f));
    return 3;
  }
  u[0] = (char)(0xf0 | (c >> 18));
  u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
  u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
  u[3] = (char)(0x80 | (c & 0x3f));
  return 4;
}

int gf_xml_hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if ((c | 32) >= 'a' && (c | 32) <= 'f')
    return (c | 32) - 'a' + 10;
  return -1;
}

/* The entity e[0, n) (between '&' and ';') as UTF-8 into u; 0 if it is
 * none of the five nor a character reference XML allows here. */
static size_t entity(const char *e, size_t n, char *u) {
  static const struct {
    const char *name;
    char c;
  } named[] = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
    if (strlen(named[k].name) == n && memcmp(e, named[k].name, n) == 0) {
      u[0] = named[k].c;
      return 1;
    }
  if (n < 2 || e[0] != '#')
    return 0;
  bool hex = e[1] == 'x';
  size_t i = hex ? 2 : 1;
  if (i == n)
    return 0;
  uint32_t v = 0;
  for (; i < n; i++) {
    int d = hex ? gf_xml_hexval(e[i])
                : (e[i] >= '0' && e[i] <= '9' ? e[i] - '0' : -1);
    if (d < 0)
      return 0;
    v = v * (hex ? 16u : 10u) + (uint32_t)d;
    if (v > 0x10ffff)
      return 0; /* (and never wraps: at most 0x10ffff * 16 + 15) */
  }
  if (v == 0 || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  return utf8_put(u, v);
}

int gf_xml_text(gf_xml *x, const gf_xml_tok *t, gf_xml_sink *out) {
  const char *s = t->s, *end = t->s + t->n;
  bool cdata = t->kind == GF_XML_CDATA;
  int rc;
  while (s < end) {
    const char *run = s;
    while (s < end && *s != '\r' && (cdata || *s != '&'))
      s++;
    if ((rc = sink_put(x, out, run, (size_t)(s - run))) != 0)
      return rc;
    if (s == end)
      break;
    if (*s == '\r') {
      s += s + 1 < end && s[1] == '\n' ? 2 : 1;
      if ((rc = sink_put(x, out, "\n", 1)) != 0)
        return rc;
      continue;
    }
    size_t room = (size_t)(end - s);
    const char *semi = memchr(s, ';', room < ENTITY_MAX ? room : ENTITY_MAX);
    char u[4], q[64];
    size_t un = semi ? entity(s + 1, (size_t)(semi - s - 1), u) : 0;
    if (un == 0) {
      size_t qn = semi ? (size_t)(semi - s) + 1 : room;
      gf_xml_quote(q, sizeof q, s, qn, GF_XML_QUOTE_MAX / 2);
      return gf_xml_fail(
          x, (size_t)(s - x->b),
          "an entity that is none of the five XML predefines nor a "
          "character reference allowed: \"%s\"",
          q);
    }
    if ((rc = sink_put(x, out, u, un)) != 0)
      return rc;
    s = semi + 1;
  }
  return 0;
}

/* ---- writing ------------------------------------------------------------- */

size_t gf_xml_escape(const char *text, char *buf, size_t cap) {
  size_t need = 0, len = 0;
  bool full = !buf || cap == 0;
  for (const char *p = text ? text : ""; *p; p++) {
    const char *e = p;
    size_t n = 1;
    switch (*p) {
    case '&':
      e = "&amp;", n = 5;
      break;
    case '<':
      e = "&lt;", n = 4;
      break;
    case '>':
      e = "&gt;", n = 4;
      break;
    case '"':
      e = "&quot;", n = 6;
      break;
    case '\'':
      e = "&apos;", n = 6;
      break;
    }
    if (!full && n < cap - len) {
      memcpy(buf + len, e, n);
      len += n;
    } else if (!full) {
      full = true;
      utf8_trim(buf, &len);
    }
    need += n;
  }
  if (buf && cap)
    buf[len] = '\0';
  return need;
}
