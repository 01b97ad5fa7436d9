/* S3's XML replies (s3_xml.h): one walker over s3_xml_reader.h's tokens
 * that knows the few fields of the four documents read (ListBucketResult,
 * Error, InitiateMultipartUploadResult, CompleteMultipartUploadResult) and
 * skips everything else, each field's text into a sink of its own; and the
 * escaping of the CompleteMultipartUpload request's text. */
#include "io/s3_xml.h"

#include "common/common.h" /* gf_say */
#include "io/s3_xml_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ETAG_MAX 1024 /* a list item's ETag, NUL included */

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
  gf_xml x;
  int want;      /* the DOC_* bits the caller reads */
  int kind;      /* the root's DOC_* */
  char root[64]; /* its local name, quoted, for messages */
  int id[GF_XML_DEPTH];
  int field;       /* the open field's ID_*, 0 when none */
  gf_xml_sink *fs; /* where its text goes (NULL: checked only) */
  size_t field_off;
  unsigned seen_root, seen_item; /* the fields seen, a bit an ID_* */

  /* ListBucketResult */
  bool emit; /* the second pass: items go to fn */
  bool url;  /* <EncodingType>url</EncodingType> */
  bool truncated;
  gf_s3_list_fn fn;
  void *ctx;
  gf_s3_list_page *page;
  gf_xml_sink key, etag, small, token;
  uint64_t size;
  bool url_bad;      /* a key that url decoding refuses ... */
  char url_why[256]; /* ... and why, should the page say url */
  char etag_buf[ETAG_MAX], small_buf[64];
  char token_buf[sizeof((gf_s3_list_page *)0)->next_token];

  /* Error, InitiateMultipartUploadResult, CompleteMultipartUploadResult */
  gf_xml_sink code, message, resource, value;
  bool value_loose; /* value's length is not the caller's concern */
} doc;

static void doc_init(doc *d, int want, const char *body, size_t len, char *why,
                     size_t wcap) {
  memset(d, 0, sizeof *d);
  gf_xml_init(&d->x, body, len, why, wcap);
  d->want = want;
  gf_xml_sink_fixed(&d->etag, d->etag_buf, sizeof d->etag_buf);
  gf_xml_sink_fixed(&d->small, d->small_buf, sizeof d->small_buf);
  gf_xml_sink_fixed(&d->token, d->token_buf, sizeof d->token_buf);
  d->key.grow = true;
}

/* The walk met a root it was not asked to read. */
#define WALK_OTHER_ROOT 1

static gf_xml_sink *field_sink(doc *d, int id) {
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

/* Checks (check) or does in place S3's encoding-type=url decoding of
 * s->p: "%XX" a byte, '+' a space. Returns NULL, or why it cannot. */
static const char *url_decode(gf_xml_sink *s, bool check) {
  char *p = s->p;
  size_t o = 0;
  for (size_t i = 0; i < s->len; i++) {
    char c = p[i];
    if (c == '%') {
      if (s->len - i < 3 || gf_xml_hexval(p[i + 1]) < 0 ||
          gf_xml_hexval(p[i + 2]) < 0)
        return "a '%' not followed by two hex digits";
      c = (char)(gf_xml_hexval(p[i + 1]) * 16 + gf_xml_hexval(p[i + 2]));
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
  gf_xml_sink *s = d->fs;
  gf_xml *x = &d->x;
  size_t off = d->field_off;
  const char *v;
  size_t n;
  char q[64];
  gf_xml_sink_end(s);
  switch (id) {
  case ID_TRUNCATED:
    if (gf_xml_sink_is(s, "true") || gf_xml_sink_is(s, "false")) {
      d->truncated = gf_xml_sink_is(s, "true");
      return 0;
    }
    gf_xml_sink_trimmed(s, &v, &n);
    gf_xml_quote(q, sizeof q, v, n, GF_XML_QUOTE_MAX);
    return gf_xml_fail(x, off, "an IsTruncated neither true nor false: \"%s\"",
                       q);
  case ID_ENCODING:
    gf_xml_sink_trimmed(s, &v, &n);
    if (gf_xml_sink_is(s, "url"))
      d->url = true;
    else if (s->over || n) {
      gf_xml_quote(q, sizeof q, v, n, GF_XML_QUOTE_MAX);
      return gf_xml_fail(x, off, "an EncodingType other than url: \"%s\"", q);
    }
    return 0;
  case ID_TOKEN:
    if (s->over)
      return gf_xml_fail(x, off,
                         "a NextContinuationToken longer than %zu bytes",
                         sizeof d->token_buf - 1);
    return 0;
  case ID_SIZE:
    if (!gf_xml_sink_u64(s, &d->size)) {
      gf_xml_sink_trimmed(s, &v, &n);
      gf_xml_quote(q, sizeof q, v, n, GF_XML_QUOTE_MAX);
      return gf_xml_fail(x, off, "a Size that is not a decimal uint64: \"%s\"",
                         q);
    }
    return 0;
  case ID_ETAG:
    if (s->over)
      return gf_xml_fail(x, off, "an ETag longer than %d bytes", ETAG_MAX - 1);
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
      gf_xml_quote(q, sizeof q, s->p, s->len, GF_XML_QUOTE_MAX);
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
    gf_xml_sink_for_people(s);
    return 0;
  case ID_UPLOAD_ID:
  case ID_RESULT_ETAG:
    if (s->over && !d->value_loose)
      return gf_xml_fail(x, off, "a %s longer than %zu bytes", id_name[id],
                         s->cap ? s->cap - 1 : 0);
    return 0;
  }
  return 0;
}

/* A Contents or a CommonPrefixes ends: checked, and given to fn. */
static int item_end(doc *d, int id, size_t off) {
  if (id == ID_CONTENTS) {
    if (!(d->seen_item & (1u << ID_KEY)))
      return gf_xml_fail(&d->x, off, "a Contents without Key");
    if (!(d->seen_item & (1u << ID_SIZE)))
      return gf_xml_fail(&d->x, off, "a Contents without Size");
  } else if (!(d->seen_item & (1u << ID_PREFIX))) {
    return gf_xml_fail(&d->x, off, "a CommonPrefixes without Prefix");
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

static int doc_start(doc *d, const gf_xml_tok *t) {
  gf_xml *x = &d->x;
  int depth = t->depth;
  char q[64];
  if (d->field) {
    gf_xml_quote(q, sizeof q, t->s, t->n, GF_XML_QUOTE_MAX);
    return gf_xml_fail(x, t->off, "an element <%s> inside <%s>", q,
                       id_name[d->field]);
  }
  int id;
  if (depth == 1) {
    d->kind = root_kind(t->local, t->ln);
    gf_xml_quote(d->root, sizeof d->root, t->local, t->ln, GF_XML_QUOTE_MAX);
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
    gf_xml_sink_reset(&d->etag);
  } else if (id >= ID_TRUNCATED) {
    unsigned *seen = depth == 2 ? &d->seen_root : &d->seen_item;
    if (*seen & (1u << id))
      return gf_xml_fail(x, t->off, "a second <%s> in one <%s>", id_name[id],
                         depth == 2 ? d->root : id_name[d->id[depth - 2]]);
    *seen |= 1u << id;
    d->field = id;
    d->fs = field_sink(d, id);
    d->field_off = t->off;
    gf_xml_sink_reset(d->fs);
  }
  return 0;
}

static int doc_end(doc *d, const gf_xml_tok *t) {
  int id = d->id[t->depth - 1]; /* the closed element's */
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
  gf_xml_tok t = {0}; /* (set by gf_xml_next before any use; GCC cannot tell) */
  int rc;
  for (;;) {
    if ((rc = gf_xml_next(&d->x, &t)) != 0)
      return rc;
    switch (t.kind) {
    case GF_XML_EOF:
      return 0;
    case GF_XML_TEXT:
    case GF_XML_CDATA:
      rc = gf_xml_text(&d->x, &t, d->field ? d->fs : NULL);
      break;
    case GF_XML_START:
      rc = doc_start(d, &t);
      break;
    case GF_XML_END:
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
      gf_xml_quote(q, sizeof q, e.code, strlen(e.code), GF_XML_QUOTE_MAX);
      gf_say(why, wcap, "an S3 error document (code \"%s\"), not a %s", q,
             want);
      return -EPROTO;
    }
  }
  gf_say(why, wcap, "the root element is <%s>, not <%s>", d->root, want);
  return -EPROTO;
}

static int too_big(size_t len, char *why, size_t wcap) {
  gf_say(why, wcap, "a reply of %zu bytes (at most %u are read)", len,
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
  gf_xml_sink_fixed(&d->code, out->code, sizeof out->code);
  gf_xml_sink_fixed(&d->message, out->message, sizeof out->message);
  gf_xml_sink_fixed(&d->resource, out->resource, sizeof out->resource);
  gf_xml_sink_fixed(&d->value, NULL, 0);
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
  gf_xml_sink_fixed(&d->value, NULL, 0);
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
    gf_say(why, cap, "%s", d->url_why);
    rc = -EPROTO;
  } else if (rc == 0 && d->truncated && d->token.len == 0) {
    gf_say(why, cap,
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
    gf_xml_sink_fixed(&d->value, NULL, 0);
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
  gf_xml_sink_fixed(&d->value, id, cap);
  int rc = doc_walk(d);
  if (rc == WALK_OTHER_ROOT)
    rc = other_root(d, body, len, "InitiateMultipartUploadResult", why, wcap);
  else if (rc == 0 && !(d->seen_root & (1u << ID_UPLOAD_ID))) {
    gf_say(why, wcap, "an InitiateMultipartUploadResult without UploadId");
    rc = -EPROTO;
  } else if (rc == 0 && d->value.len == 0) {
    gf_say(why, wcap, "an empty UploadId");
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
  gf_xml_sink_fixed(&d->value, etag, cap);
  gf_xml_sink_fixed(&d->code, err->code, sizeof err->code);
  gf_xml_sink_fixed(&d->message, err->message, sizeof err->message);
  gf_xml_sink_fixed(&d->resource, err->resource, sizeof err->resource);
  d->value_loose = etag == mine;
  int rc = doc_walk(d);
  if (rc == WALK_OTHER_ROOT)
    rc = other_root(d, body, len, "CompleteMultipartUploadResult", why, wcap);
  else if (rc == 0 && d->kind == DOC_ERROR)
    rc = 1;
  else if (rc == 0 && !(d->seen_root & (1u << ID_RESULT_ETAG))) {
    gf_say(why, wcap, "a CompleteMultipartUploadResult without ETag");
    rc = -EPROTO;
  } else if (rc == 0 && d->value.len == 0) {
    gf_say(why, wcap, "a CompleteMultipartUploadResult with an empty ETag");
    rc = -EPROTO;
  }
  if (rc != 1)
    memset(err, 0, sizeof *err);
  if (rc != 0 && cap)
    etag[0] = '\0';
  return rc;
}

size_t gf_s3_xml_escape(const char *text, char *buf, size_t cap) {
  return gf_xml_escape(text, buf, cap);
}
