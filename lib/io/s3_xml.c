/* S3's XML replies (s3_xml.h): a pull tokenizer over the body (one loop, no
 * recursion; the open elements' names kept as offsets into the body, so
 * closing one costs its name's length), and above it one walker that knows
 * the few fields of the four documents read and skips everything else. A
 * field's text goes to a sink: a fixed buffer (cut or refused when over)
 * or, for a list's key, one growing buffer. */
#include "io/s3_xml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* memrchr */

#define XML_DEPTH 32  /* the deepest nesting read */
#define QUOTE_MAX 40  /* the most bytes of the body a message quotes */
#define ENTITY_MAX 40 /* "&...;" longer than this is refused */
#define ETAG_MAX 1024 /* a list item's ETag, NUL included */

/* ---- messages ------------------------------------------------------------ */

/* Writes at most max bytes of s (n bytes) into dst (dcap bytes): control
 * bytes as '?', never cut inside a UTF-8 sequence, "..." when cut. */
static void quote(char *dst, size_t dcap, const char *s, size_t n, size_t max) {
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

static void say(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...) {
  if (!why || !cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}

/* ---- the tokenizer ------------------------------------------------------- */

enum { T_EOF, T_START, T_END, T_TEXT, T_CDATA };

typedef struct xtok {
  int kind;
  const char *s; /* T_START, T_END: the name as written; else raw text */
  size_t n;
  const char *local; /* the name without its "prefix:" */
  size_t ln;
  size_t off; /* where the token starts in the body */
} xtok;

typedef struct xml {
  const char *b;
  size_t len, i;
  int depth;
  bool root_seen, root_done;
  bool close_next; /* a "<X/>" gave its start: its end comes next */
  size_t name_off[XML_DEPTH], name_len[XML_DEPTH];
  char *why;
  size_t wcap;
} xml;

static int xfail(xml *x, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int xfail(xml *x, size_t off, const char *fmt, ...) {
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
static size_t name_at(const xml *x, size_t i) {
  size_t j = i;
  if (j < x->len && name_start((unsigned char)x->b[j]))
    for (j++; j < x->len && name_char((unsigned char)x->b[j]);)
      j++;
  return j - i;
}

static void set_name(xtok *t, const char *s, size_t n) {
  t->s = s;
  t->n = n;
  const char *colon = memrchr(s, ':', n);
  t->local = colon ? colon + 1 : s;
  t->ln = n - (size_t)(t->local - s);
}

static void xml_init(xml *x, const char *body, size_t len, char *why,
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
static int xml_close(xml *x, xtok *t, size_t off) {
  x->depth--;
  int d = x->depth;
  t->kind = T_END;
  t->off = off;
  set_name(t, x->b + x->name_off[d], x->name_len[d]);
  if (d == 0)
    x->root_done = true;
  return 0;
}

static int xml_start_tag(xml *x, xtok *t, size_t i) {
  const char *b = x->b;
  size_t len = x->len, n = name_at(x, i + 1);
  char q[64];
  if (n == 0) {
    quote(q, sizeof q, b + i, len - i < 8 ? len - i : 8, QUOTE_MAX);
    return xfail(x, i, "a '<' that starts no element: \"%s\"", q);
  }
  if (x->root_done) {
    quote(q, sizeof q, b + i + 1, n, QUOTE_MAX);
    return xfail(x, i, "a second root element <%s>", q);
  }
  if (x->depth == XML_DEPTH)
    return xfail(x, i, "elements nested deeper than %d", XML_DEPTH);
  bool empty = false;
  size_t j = i + 1 + n;
  for (;;) {
    size_t before = j;
    while (j < len && xml_ws(b[j]))
      j++;
    if (j == len)
      return xfail(x, i, "the body ends inside a tag");
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
      return xfail(x, j, "a '/' inside a tag");
    }
    size_t an = name_at(x, j);
    if (an == 0 || j == before)
      return xfail(x, j, "a malformed attribute");
    j += an;
    while (j < len && xml_ws(b[j]))
      j++;
    if (j < len && b[j] != '=')
      return xfail(x, j, "an attribute without '='");
    for (j++; j < len && xml_ws(b[j]);)
      j++;
    if (j < len && b[j] != '"' && b[j] != '\'')
      return xfail(x, j, "an attribute's value without quotes");
    if (j >= len)
      return xfail(x, i, "the body ends inside a tag");
    const char *v = b + j + 1;
    const char *end = memchr(v, b[j], len - j - 1);
    if (!end)
      return xfail(x, j, "the body ends inside an attribute's value");
    if (memchr(v, '<', (size_t)(end - v)))
      return xfail(x, j, "a '<' in an attribute's value");
    j = (size_t)(end - b) + 1;
  }
  x->name_off[x->depth] = i + 1;
  x->name_len[x->depth] = n;
  x->depth++;
  x->root_seen = true;
  x->close_next = empty;
  x->i = j;
  t->kind = T_START;
  t->off = i;
  set_name(t, b + i + 1, n);
  return 0;
}

static int xml_end_tag(xml *x, xtok *t, size_t i) {
  const char *b = x->b;
  size_t len = x->len, n = name_at(x, i + 2), j = i + 2 + n;
  while (j < len && xml_ws(b[j]))
    j++;
  if (j == len)
    return xfail(x, i, "the body ends inside an end tag");
  if (n == 0 || b[j] != '>')
    return xfail(x, i, "a malformed end tag");
  char q[64], q2[64];
  quote(q, sizeof q, b + i + 2, n, QUOTE_MAX / 2);
  if (x->depth == 0)
    return xfail(x, i, "an end tag </%s> with no element open", q);
  int d = x->depth - 1;
  if (n != x->name_len[d] || memcmp(b + i + 2, b + x->name_off[d], n) != 0) {
    quote(q2, sizeof q2, b + x->name_off[d], x->name_len[d], QUOTE_MAX / 2);
    return xfail(x, i, "the end tag </%s> closes <%s>", q, q2);
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

/* The next token. Text outside the root (whitespace only), comments and
 * processing instructions are passed over; anything that is not XML as S3
 * writes it is -EPROTO. T_EOF only after the root has closed. */
static int xml_next(xml *x, xtok *t) {
  const char *b = x->b;
  size_t len = x->len;
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
        quote(q, sizeof q, b + x->name_off[d], x->name_len[d], QUOTE_MAX);
        return xfail(x, i, "the body ends inside <%s>", q);
      }
      if (!x->root_seen)
        return xfail(x, i, "no element");
      t->kind = T_EOF;
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
            return xfail(x, k, "text outside the root element");
        continue;
      }
      t->kind = T_TEXT;
      t->s = b + i;
      t->n = j - i;
      t->off = i;
      return 0;
    }
    if (rest >= 2 && b[i + 1] == '?') {
      const char *e = find(b + i + 2, rest - 2, "?>", 2);
      if (!e)
        return xfail(x, i, "an unterminated <?...?>");
      x->i = (size_t)(e - b) + 2;
      continue;
    }
    if (rest >= 4 && memcmp(b + i, "<!--", 4) == 0) {
      const char *e = find(b + i + 4, rest - 4, "-->", 3);
      if (!e)
        return xfail(x, i, "an unterminated comment");
      x->i = (size_t)(e - b) + 3;
      continue;
    }
    if (rest >= 9 && memcmp(b + i, "<![CDATA[", 9) == 0) {
      if (x->depth == 0)
        return xfail(x, i, "a CDATA section outside the root element");
      const char *s = b + i + 9, *e = find(s, rest - 9, "]]>", 3);
      if (!e)
        return xfail(x, i, "an unterminated CDATA section");
      x->i = (size_t)(e - b) + 3;
      t->kind = T_CDATA;
      t->s = s;
      t->n = (size_t)(e - s);
      t->off = i;
      return 0;
    }
    if (rest >= 2 && b[i + 1] == '!') {
      if (rest >= 9 && memcmp(b + i, "<!DOCTYPE", 9) == 0)
        return xfail(x, i, "a DOCTYPE (no DTD is read)");
      quote(q, sizeof q, b + i, rest < 9 ? rest : 9, QUOTE_MAX);
      return xfail(x, i, "an unknown or cut declaration \"%s\"", q);
    }
    if (rest >= 2 && b[i + 1] == '/')
      return xml_end_tag(x, t, i);
    return xml_start_tag(x, t, i);
  }
}

/* ---- text ---------------------------------------------------------------- */

/* Where a field's text goes: p holds cap bytes (NUL included). A fixed one
 * drops what does not fit and says so (over); a growing one is realloc'd
 * (p owned, kept between fields). */
typedef struct sink {
  char *p;
  size_t len, cap;
  bool grow;
  bool over;
} sink;

static void sink_fixed(sink *s, char *p, size_t cap) {
  memset(s, 0, sizeof *s);
  s->p = p;
  s->cap = cap;
  if (p && cap)
    p[0] = '\0';
}

static void sink_reset(sink *s) {
  s->len = 0;
  s->over = false;
  if (s->p && s->cap)
    s->p[0] = '\0';
}

static int sink_put(xml *x, sink *s, const char *d, size_t n) {
  if (!s || n == 0)
    return 0;
  if (n >= s->cap - s->len) {
    if (s->grow) {
      size_t c = s->cap ? s->cap : 256;
      while (c <= s->len + n)
        c *= 2;
      char *p = realloc(s->p, c);
      if (!p) {
        say(x->why, x->wcap, "out of memory (a field of %zu bytes)",
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

static void sink_end(sink *s) {
  if (s && s->p && s->cap)
    s->p[s->len] = '\0';
}

/* Drops a UTF-8 sequence cut at the end of p[0, *len). */
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

/* A field cut to fit, for a person to read: whole UTF-8 sequences,
 * control bytes as '?'. */
static void sink_for_people(sink *s) {
  if (!s || !s->p || !s->cap)
    return;
  if (s->over)
    utf8_trim(s->p, &s->len);
  for (size_t i = 0; i < s->len; i++)
    if ((unsigned char)s->p[i] < 0x20 || s->p[i] == 0x7f)
      s->p[i] = '?';
  s->p[s->len] = '\0';
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

static int hexval(char c) {
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
    int d = hex ? hexval(e[i]) : (e[i] >= '0' && e[i] <= '9' ? e[i] - '0' : -1);
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

/* Appends a text token's decoded bytes to out (NULL: checks them only):
 * entities and character references, and "\r\n" or a lone "\r" as "\n". */
static int text_decode(xml *x, const xtok *t, sink *out) {
  const char *s = t->s, *end = t->s + t->n;
  bool cdata = t->kind == T_CDATA;
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
      quote(q, sizeof q, s, qn, QUOTE_MAX / 2);
      return xfail(x, (size_t)(s - x->b),
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

/* ---- the documents ------------------------------------------------------- */

enum { DOC_OTHER, DOC_LIST, DOC_ERROR, DOC_INITIATE, DOC_COMPLETE };

/* What an open element is to the walker. Fields (from ID_TRUNCATED) hold
 * text only; containers hold fields; ID_SKIP what is not known. */
enum {
  ID_SKIP,
  ID_ROOT,
  ID_CONTENTS,
  ID_PREFIXES,
  ID_TRUNCATED,
  ID_TOKEN,
  ID_ENCODING,
  ID_KEY,
  ID_SIZE,
  ID_ETAG,
  ID_PREFIX,
  ID_CODE,
  ID_MESSAGE,
  ID_RESOURCE,
  ID_UPLOAD_ID,
  ID_RESULT_ETAG,
  ID_COUNT
};

static const char *const id_name[ID_COUNT] = {
    [ID_SKIP] = "?",
    [ID_ROOT] = "root",
    [ID_CONTENTS] = "Contents",
    [ID_PREFIXES] = "CommonPrefixes",
    [ID_TRUNCATED] = "IsTruncated",
    [ID_TOKEN] = "NextContinuationToken",
    [ID_ENCODING] = "EncodingType",
    [ID_KEY] = "Key",
    [ID_SIZE] = "Size",
    [ID_ETAG] = "ETag",
    [ID_PREFIX] = "Prefix",
    [ID_CODE] = "Code",
    [ID_MESSAGE] = "Message",
    [ID_RESOURCE] = "Resource",
    [ID_UPLOAD_ID] = "UploadId",
    [ID_RESULT_ETAG] = "ETag",
};

static bool is_name(const char *s, size_t n, const char *want) {
  return strlen(want) == n && memcmp(s, want, n) == 0;
}

static int root_kind(const char *s, size_t n) {
  if (is_name(s, n, "ListBucketResult"))
    return DOC_LIST;
  if (is_name(s, n, "Error"))
    return DOC_ERROR;
  if (is_name(s, n, "InitiateMultipartUploadResult"))
    return DOC_INITIATE;
  if (is_name(s, n, "CompleteMultipartUploadResult") ||
      is_name(s, n, "CompleteMultipartUploadResponse"))
    return DOC_COMPLETE;
  return DOC_OTHER;
}

/* The id of a child named s[0, n) of an element `parent`. */
static int child_id(int doc, int parent, const char *s, size_t n) {
  static const struct {
    int doc, parent;
    const char *name;
    int id;
  } known[] = {
      {DOC_LIST, ID_ROOT, "IsTruncated", ID_TRUNCATED},
      {DOC_LIST, ID_ROOT, "NextContinuationToken", ID_TOKEN},
      {DOC_LIST, ID_ROOT, "EncodingType", ID_ENCODING},
      {DOC_LIST, ID_ROOT, "Contents", ID_CONTENTS},
      {DOC_LIST, ID_ROOT, "CommonPrefixes", ID_PREFIXES},
      {DOC_LIST, ID_CONTENTS, "Key", ID_KEY},
      {DOC_LIST, ID_CONTENTS, "Size", ID_SIZE},
      {DOC_LIST, ID_CONTENTS, "ETag", ID_ETAG},
      {DOC_LIST, ID_PREFIXES, "Prefix", ID_PREFIX},
      {DOC_ERROR, ID_ROOT, "Code", ID_CODE},
      {DOC_ERROR, ID_ROOT, "Message", ID_MESSAGE},
      {DOC_ERROR, ID_ROOT, "Resource", ID_RESOURCE},
      {DOC_INITIATE, ID_ROOT, "UploadId", ID_UPLOAD_ID},
      {DOC_COMPLETE, ID_ROOT, "ETag", ID_RESULT_ETAG},
  };
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (known[k].doc == doc && known[k].parent == parent &&
        is_name(s, n, known[k].name))
      return known[k].id;
  return ID_SKIP;
}

typedef struct doc {
  xml x;
  int want;      /* the DOC_* bits the caller reads */
  int kind;      /* the root's DOC_* */
  char root[64]; /* its local name, quoted, for messages */
  int id[XML_DEPTH];
  int field; /* the open field's ID_*, 0 when none */
  sink *fs;  /* where its text goes (NULL: checked only) */
  size_t field_off;
  unsigned seen_root, seen_item; /* the fields seen, a bit an ID_* */

  /* ListBucketResult */
  bool emit; /* the second pass: items go to fn */
  bool url;  /* <EncodingType>url</EncodingType> */
  bool truncated;
  gf_s3_list_fn fn;
  void *ctx;
  gf_s3_list_page *page;
  sink key, etag, small, token;
  uint64_t size;
  bool url_bad;      /* a key that url decoding refuses ... */
  char url_why[256]; /* ... and why, should the page say url */
  char etag_buf[ETAG_MAX], small_buf[64];
  char token_buf[sizeof((gf_s3_list_page *)0)->next_token];

  /* Error, InitiateMultipartUploadResult, CompleteMultipartUploadResult */
  sink code, message, resource, value;
  bool value_loose; /* value's length is not the caller's concern */
} doc;

static void doc_init(doc *d, int want, const char *body, size_t len, char *why,
                     size_t wcap) {
  memset(d, 0, sizeof *d);
  xml_init(&d->x, body, len, why, wcap);
  d->want = want;
  sink_fixed(&d->etag, d->etag_buf, sizeof d->etag_buf);
  sink_fixed(&d->small, d->small_buf, sizeof d->small_buf);
  sink_fixed(&d->token, d->token_buf, sizeof d->token_buf);
  d->key.grow = true;
}

/* The walk met a root it was not asked to read. */
#define WALK_OTHER_ROOT 1

static sink *field_sink(doc *d, int id) {
  switch (id) {
  case ID_KEY:
  case ID_PREFIX:
    return &d->key;
  case ID_ETAG:
    return &d->etag;
  case ID_TOKEN:
    return &d->token;
  case ID_TRUNCATED:
  case ID_ENCODING:
  case ID_SIZE:
    return &d->small;
  case ID_CODE:
    return &d->code;
  case ID_MESSAGE:
    return &d->message;
  case ID_RESOURCE:
    return &d->resource;
  default:
    return &d->value;
  }
}

/* s without XML's whitespace around it. */
static void trim(const sink *s, const char **p, size_t *n) {
  const char *a = s->p, *e = s->p + s->len;
  while (a < e && xml_ws(*a))
    a++;
  while (e > a && xml_ws(e[-1]))
    e--;
  *p = a;
  *n = (size_t)(e - a);
}

/* Checks (check) or does in place S3's encoding-type=url decoding of
 * s->p: "%XX" a byte, '+' a space. Returns NULL, or why it cannot. */
static const char *url_decode(sink *s, bool check) {
  char *p = s->p;
  size_t o = 0;
  for (size_t i = 0; i < s->len; i++) {
    char c = p[i];
    if (c == '%') {
      if (s->len - i < 3 || hexval(p[i + 1]) < 0 || hexval(p[i + 2]) < 0)
        return "a '%' not followed by two hex digits";
      c = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
      if (c == '\0')
        return "%00, a NUL byte";
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (!check)
      p[o] = c;
    o++;
  }
  if (!check && p) { /* (an empty key may never have needed a buffer) */
    s->len = o;
    p[o] = '\0';
  }
  return NULL;
}

static int field_end(doc *d, int id) {
  sink *s = d->fs;
  xml *x = &d->x;
  size_t off = d->field_off;
  const char *v;
  size_t n;
  char q[64];
  sink_end(s);
  switch (id) {
  case ID_TRUNCATED:
    trim(s, &v, &n);
    if (!s->over && is_name(v, n, "true"))
      d->truncated = true;
    else if (!s->over && is_name(v, n, "false"))
      d->truncated = false;
    else {
      quote(q, sizeof q, v, n, QUOTE_MAX);
      return xfail(x, off, "an IsTruncated neither true nor false: \"%s\"", q);
    }
    return 0;
  case ID_ENCODING:
    trim(s, &v, &n);
    if (!s->over && is_name(v, n, "url"))
      d->url = true;
    else if (s->over || n) {
      quote(q, sizeof q, v, n, QUOTE_MAX);
      return xfail(x, off, "an EncodingType other than url: \"%s\"", q);
    }
    return 0;
  case ID_TOKEN:
    if (s->over)
      return xfail(x, off, "a NextContinuationToken longer than %zu bytes",
                   sizeof d->token_buf - 1);
    return 0;
  case ID_SIZE: {
    trim(s, &v, &n);
    uint64_t size = 0;
    bool ok = !s->over && n > 0;
    for (size_t i = 0; ok && i < n; i++) {
      unsigned dg = (unsigned)(v[i] - '0');
      if (dg > 9 || size > (UINT64_MAX - dg) / 10)
        ok = false;
      else
        size = size * 10 + dg;
    }
    if (!ok) {
      quote(q, sizeof q, v, n, QUOTE_MAX);
      return xfail(x, off, "a Size that is not a decimal uint64: \"%s\"", q);
    }
    d->size = size;
    return 0;
  }
  case ID_ETAG:
    if (s->over)
      return xfail(x, off, "an ETag longer than %d bytes", ETAG_MAX - 1);
    return 0;
  case ID_KEY:
  case ID_PREFIX: {
    /* The first pass checks every key, not knowing yet whether the page
     * says url; the second decodes what the first found good. Entities
     * cannot give a NUL (&#0; is refused); "%00" can. */
    if (d->emit) {
      if (d->url)
        url_decode(s, false);
      return 0;
    }
    const char *bad = url_decode(s, true);
    if (bad && !d->url_bad) {
      d->url_bad = true;
      quote(q, sizeof q, s->p, s->len, QUOTE_MAX);
      snprintf(d->url_why, sizeof d->url_why,
               "a %s that encoding-type=url cannot decode (%s): \"%s\" (byte "
               "%zu)",
               id_name[id], bad, q, off);
    }
    return 0;
  }
  case ID_CODE:
  case ID_MESSAGE:
  case ID_RESOURCE:
    sink_for_people(s);
    return 0;
  case ID_UPLOAD_ID:
  case ID_RESULT_ETAG:
    if (s->over && !d->value_loose)
      return xfail(x, off, "a %s longer than %zu bytes", id_name[id],
                   s->cap ? s->cap - 1 : 0);
    return 0;
  }
  return 0;
}

/* A Contents or a CommonPrefixes ends: checked, and given to fn. */
static int item_end(doc *d, int id, size_t off) {
  if (id == ID_CONTENTS) {
    if (!(d->seen_item & (1u << ID_KEY)))
      return xfail(&d->x, off, "a Contents without Key");
    if (!(d->seen_item & (1u << ID_SIZE)))
      return xfail(&d->x, off, "a Contents without Size");
  } else if (!(d->seen_item & (1u << ID_PREFIX))) {
    return xfail(&d->x, off, "a CommonPrefixes without Prefix");
  }
  if (!d->emit)
    return 0;
  gf_s3_list_item it = {
      .key = d->key.p ? d->key.p : "",
      .key_len = d->key.len,
      .size = id == ID_CONTENTS ? d->size : UINT64_MAX,
      .etag = id == ID_CONTENTS ? d->etag_buf : "",
      .is_prefix = id == ID_PREFIXES,
  };
  if (id == ID_CONTENTS)
    d->page->objects++;
  else
    d->page->prefixes++;
  return d->fn ? d->fn(d->ctx, &it) : 0;
}

static int doc_start(doc *d, const xtok *t) {
  xml *x = &d->x;
  int depth = x->depth; /* the new element's, from 1 */
  char q[64];
  if (d->field) {
    quote(q, sizeof q, t->s, t->n, QUOTE_MAX);
    return xfail(x, t->off, "an element <%s> inside <%s>", q,
                 id_name[d->field]);
  }
  int id;
  if (depth == 1) {
    d->kind = root_kind(t->local, t->ln);
    quote(d->root, sizeof d->root, t->local, t->ln, QUOTE_MAX);
    if (!(d->want & (1 << d->kind)))
      return WALK_OTHER_ROOT;
    id = ID_ROOT;
  } else {
    int parent = d->id[depth - 2];
    id = parent == ID_SKIP ? ID_SKIP
                           : child_id(d->kind, parent, t->local, t->ln);
  }
  d->id[depth - 1] = id;
  if (id == ID_CONTENTS || id == ID_PREFIXES) {
    d->seen_item = 0;
    sink_reset(&d->etag);
  } else if (id >= ID_TRUNCATED) {
    unsigned *seen = depth == 2 ? &d->seen_root : &d->seen_item;
    if (*seen & (1u << id))
      return xfail(x, t->off, "a second <%s> in one <%s>", id_name[id],
                   depth == 2 ? d->root : id_name[d->id[depth - 2]]);
    *seen |= 1u << id;
    d->field = id;
    d->fs = field_sink(d, id);
    d->field_off = t->off;
    sink_reset(d->fs);
  }
  return 0;
}

static int doc_end(doc *d, const xtok *t) {
  int id = d->id[d->x.depth]; /* the closed element's */
  if (id >= ID_TRUNCATED) {
    d->field = 0;
    return field_end(d, id);
  }
  if (id == ID_CONTENTS || id == ID_PREFIXES)
    return item_end(d, id, t->off);
  return 0;
}

/* Reads the document: 0, WALK_OTHER_ROOT (d->kind and d->root say which),
 * -EPROTO, -ENOMEM, or what fn returned. */
static int doc_walk(doc *d) {
  xtok t = {0}; /* (set by xml_next before any use; GCC cannot tell) */
  int rc;
  /* XML has no NUL byte, raw or referred to (&#0; is refused). */
  const char *nul = memchr(d->x.b, '\0', d->x.len);
  if (nul)
    return xfail(&d->x, (size_t)(nul - d->x.b), "a NUL byte");
  for (;;) {
    if ((rc = xml_next(&d->x, &t)) != 0)
      return rc;
    switch (t.kind) {
    case T_EOF:
      return 0;
    case T_TEXT:
    case T_CDATA:
      rc = text_decode(&d->x, &t, d->field ? d->fs : NULL);
      break;
    case T_START:
      rc = doc_start(d, &t);
      break;
    case T_END:
      rc = doc_end(d, &t);
      break;
    }
    if (rc)
      return rc;
  }
}

/* A body the caller did not ask for: why says what it is. An <Error>
 * gives its code. */
static int other_root(doc *d, const char *body, size_t len, const char *want,
                      char *why, size_t wcap) {
  if (d->kind == DOC_ERROR) {
    gf_s3_error e;
    char q[64];
    if (gf_s3_xml_error(body, len, &e) == 1) {
      quote(q, sizeof q, e.code, strlen(e.code), QUOTE_MAX);
      say(why, wcap, "an S3 error document (code \"%s\"), not a %s", q, want);
      return -EPROTO;
    }
  }
  say(why, wcap, "the root element is <%s>, not <%s>", d->root, want);
  return -EPROTO;
}

static int too_big(size_t len, char *why, size_t wcap) {
  say(why, wcap, "a reply of %zu bytes (at most %u are read)", len,
      (unsigned)GF_S3_XML_MAX);
  return -EPROTO;
}

int gf_s3_xml_error(const char *body, size_t len, gf_s3_error *out) {
  gf_s3_error scratch;
  if (!out)
    out = &scratch;
  memset(out, 0, sizeof *out);
  if (!body || len > GF_S3_XML_MAX)
    return 0;
  doc dd, *d = &dd;
  doc_init(d, 1 << DOC_ERROR, body, len, NULL, 0);
  sink_fixed(&d->code, out->code, sizeof out->code);
  sink_fixed(&d->message, out->message, sizeof out->message);
  sink_fixed(&d->resource, out->resource, sizeof out->resource);
  sink_fixed(&d->value, NULL, 0);
  int rc = doc_walk(d);
  if (rc != 0) {
    memset(out, 0, sizeof *out);
    return 0;
  }
  return 1;
}

int gf_s3_xml_list(const char *body, size_t len, gf_s3_list_fn fn, void *ctx,
                   gf_s3_list_page *page, char *why, size_t cap) {
  gf_s3_list_page scratch;
  if (!page)
    page = &scratch;
  memset(page, 0, sizeof *page);
  if (why && cap)
    why[0] = '\0';
  if (body && len > GF_S3_XML_MAX)
    return too_big(len, why, cap);
  doc dd, *d = &dd;
  doc_init(d, 1 << DOC_LIST, body, len, why, cap);
  sink_fixed(&d->value, NULL, 0);
  d->fn = fn;
  d->ctx = ctx;
  d->page = page;
  /* The first pass reads the whole page, checks it, and learns its
   * EncodingType (moto writes it after the Contents); the second gives
   * the items, with the key's buffer already as long as the longest. */
  int rc = doc_walk(d);
  if (rc == WALK_OTHER_ROOT)
    rc = other_root(d, body, len, "ListBucketResult", why, cap);
  else if (rc == 0 && d->url && d->url_bad) {
    say(why, cap, "%s", d->url_why);
    rc = -EPROTO;
  } else if (rc == 0 && d->truncated && d->token.len == 0) {
    say(why, cap,
        "IsTruncated is true but there is no "
        "NextContinuationToken");
    rc = -EPROTO;
  }
  if (rc == 0) {
    page->truncated = d->truncated;
    memcpy(page->next_token, d->token_buf, d->token.len + 1);
    char *key = d->key.p;
    size_t key_cap = d->key.cap;
    bool url = d->url;
    doc_init(d, 1 << DOC_LIST, body, len, why, cap);
    sink_fixed(&d->value, NULL, 0);
    d->key.p = key;
    d->key.cap = key_cap;
    d->url = url;
    d->emit = true;
    d->fn = fn;
    d->ctx = ctx;
    d->page = page;
    rc = doc_walk(d);
  }
  free(d->key.p);
  return rc;
}

int gf_s3_xml_upload_id(const char *body, size_t len, char *id, size_t cap,
                        char *why, size_t wcap) {
  if (!id)
    cap = 0;
  if (cap)
    id[0] = '\0';
  if (why && wcap)
    why[0] = '\0';
  if (body && len > GF_S3_XML_MAX)
    return too_big(len, why, wcap);
  doc dd, *d = &dd;
  doc_init(d, 1 << DOC_INITIATE, body, len, why, wcap);
  sink_fixed(&d->value, id, cap);
  int rc = doc_walk(d);
  if (rc == WALK_OTHER_ROOT)
    rc = other_root(d, body, len, "InitiateMultipartUploadResult", why, wcap);
  else if (rc == 0 && !(d->seen_root & (1u << ID_UPLOAD_ID))) {
    say(why, wcap, "an InitiateMultipartUploadResult without UploadId");
    rc = -EPROTO;
  } else if (rc == 0 && d->value.len == 0) {
    say(why, wcap, "an empty UploadId");
    rc = -EPROTO;
  }
  if (rc && cap)
    id[0] = '\0';
  return rc;
}

int gf_s3_xml_complete(const char *body, size_t len, char *etag, size_t cap,
                       gf_s3_error *err, char *why, size_t wcap) {
  gf_s3_error scratch;
  char mine[2];
  if (!err)
    err = &scratch;
  memset(err, 0, sizeof *err);
  if (!etag) { /* still checked: present and not empty */
    etag = mine;
    cap = sizeof mine;
  }
  if (cap)
    etag[0] = '\0';
  if (why && wcap)
    why[0] = '\0';
  if (body && len > GF_S3_XML_MAX)
    return too_big(len, why, wcap);
  doc dd, *d = &dd;
  doc_init(d, 1 << DOC_COMPLETE | 1 << DOC_ERROR, body, len, why, wcap);
  sink_fixed(&d->value, etag, cap);
  sink_fixed(&d->code, err->code, sizeof err->code);
  sink_fixed(&d->message, err->message, sizeof err->message);
  sink_fixed(&d->resource, err->resource, sizeof err->resource);
  d->value_loose = etag == mine;
  int rc = doc_walk(d);
  if (rc == WALK_OTHER_ROOT)
    rc = other_root(d, body, len, "CompleteMultipartUploadResult", why, wcap);
  else if (rc == 0 && d->kind == DOC_ERROR)
    rc = 1;
  else if (rc == 0 && !(d->seen_root & (1u << ID_RESULT_ETAG))) {
    say(why, wcap, "a CompleteMultipartUploadResult without ETag");
    rc = -EPROTO;
  } else if (rc == 0 && d->value.len == 0) {
    say(why, wcap, "a CompleteMultipartUploadResult with an empty ETag");
    rc = -EPROTO;
  }
  if (rc != 1)
    memset(err, 0, sizeof *err);
  if (rc != 0 && cap)
    etag[0] = '\0';
  return rc;
}

size_t gf_s3_xml_escape(const char *text, char *buf, size_t cap) {
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
