/* The XML reader behind S3's replies (s3_xml_reader.c), for s3_xml.c only:
 * a pull tokenizer over a body in memory, and the decoding of a field's
 * text into a sink. It reads the subset of XML that s3_xml.h describes
 * (what S3, MinIO, Ceph, R2 and moto write) and knows no document: the
 * caller walks the tokens and says which elements are fields. It also
 * escapes text, the one piece of XML a request of S3's carries.
 *
 * Use: gf_xml_init over the body, then gf_xml_next until GF_XML_EOF or an
 * error; for each GF_XML_TEXT or GF_XML_CDATA token inside a field,
 * gf_xml_text appends its decoded bytes to the field's sink (or, given
 * NULL, only checks them). One loop, no recursion, linear in the body.
 *
 * Errors are -EPROTO with the reason in the why buffer given to
 * gf_xml_init ("... (byte N)", N the offset where the body went wrong;
 * never more than GF_XML_QUOTE_MAX bytes of the body quoted, control bytes
 * as '?'), and -ENOMEM from a growing sink. A reader and its sinks belong
 * to one thread; nothing here keeps global state. */
#ifndef GF_IO_S3_XML_READER_H
#define GF_IO_S3_XML_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_XML_DEPTH 32     /* the deepest nesting read */
#define GF_XML_QUOTE_MAX 40 /* the most bytes of the body a message quotes */

enum { GF_XML_EOF, GF_XML_START, GF_XML_END, GF_XML_TEXT, GF_XML_CDATA };

/* One token; its pointers point into the body. */
typedef struct gf_xml_tok {
  int kind;      /* GF_XML_* */
  const char *s; /* START, END: the name as written; TEXT, CDATA: raw text */
  size_t n;
  const char *local; /* START, END: the name without its "prefix:" */
  size_t ln;
  size_t off; /* where the token starts in the body */
  int depth;  /* START, END: the element's depth, the root's 1 */
} gf_xml_tok;

/* The reader's state: its fields are its own (set by gf_xml_init). */
typedef struct gf_xml {
  const char *b;
  size_t len, i;
  int depth;
  bool nul_checked;
  bool root_seen, root_done;
  bool close_next; /* a "<X/>" gave its start: its end comes next */
  size_t name_off[GF_XML_DEPTH], name_len[GF_XML_DEPTH];
  char *why;
  size_t wcap;
} gf_xml;

/* Starts reading body (len bytes; NULL is an empty body, which is not
 * XML), borrowed until the last call. A UTF-8 byte order mark is passed
 * over. why (wcap bytes, may be NULL) gets the reason of a failure. */
void gf_xml_init(gf_xml *x, const char *body, size_t len, char *why,
                 size_t wcap);

/* The next token into *t. Returns 0 or -EPROTO (not XML as S3 writes it:
 * a NUL byte anywhere, found at the first call; a DOCTYPE; mismatched or
 * unclosed tags; text or a second element outside the root; nesting
 * deeper than GF_XML_DEPTH; ...). Comments, processing instructions and
 * whitespace outside the root are passed over; "<X/>" gives a START and
 * then an END. GF_XML_EOF comes once the root has closed; after it or an
 * error, do not call again. */
int gf_xml_next(gf_xml *x, gf_xml_tok *t);

/* Writes the reason into x's why as gf_xml_next does, fmt's text then
 * " (byte off)", and returns -EPROTO: for the caller's own refusals of
 * what it reads. */
int gf_xml_fail(gf_xml *x, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where a field's text goes: p holds cap bytes (NUL included), len of
 * them written. A fixed sink drops what does not fit and sets over; a
 * growing one (grow true, p and cap 0 or a buffer from realloc) is
 * realloc'd as needed: its p is the caller's to free(), and may be kept
 * from one field to the next. The fields are read by the caller. */
typedef struct gf_xml_sink {
  char *p;
  size_t len, cap;
  bool grow;
  bool over; /* a fixed sink dropped bytes */
} gf_xml_sink;

/* A fixed sink over p (cap bytes; p NULL or cap 0: everything is dropped
 * and over set), p made "". */
void gf_xml_sink_fixed(gf_xml_sink *s, char *p, size_t cap);
/* Empties s for the next field (its buffer kept). */
void gf_xml_sink_reset(gf_xml_sink *s);
/* NUL-terminates what s holds (s may be NULL), once a field ends. */
void gf_xml_sink_end(gf_xml_sink *s);
/* Makes what s holds fit for a person to read: if cut, no UTF-8 sequence
 * cut at its end; control bytes as '?'; NUL-terminated. */
void gf_xml_sink_for_people(gf_xml_sink *s);
/* s's text without XML's whitespace around it: *p and *n, into s->p. */
void gf_xml_sink_trimmed(const gf_xml_sink *s, const char **p, size_t *n);
/* Whether s's text, trimmed so, is want, and was not cut. */
bool gf_xml_sink_is(const gf_xml_sink *s, const char *want);
/* Whether s's text, trimmed so, is a decimal uint64 (digits only, at least
 * one, no overflow) and was not cut; then *out is set. */
bool gf_xml_sink_u64(const gf_xml_sink *s, uint64_t *out);

/* Appends a TEXT or CDATA token's decoded bytes to out (NULL: checks them
 * only): in text, the five predefined entities and decimal or hex
 * character references (as UTF-8; 0, surrogates and over 0x10FFFF
 * refused); in both, "\r\n" or a lone "\r" as "\n". Returns 0, -EPROTO
 * (any other entity) or -ENOMEM (a growing sink), with why. */
int gf_xml_text(gf_xml *x, const gf_xml_tok *t, gf_xml_sink *out);

/* Writes at most max bytes of s (n bytes) into dst (dcap bytes): control
 * bytes as '?', never cut inside a UTF-8 sequence, "..." when cut. For
 * quoting the body in a message. */
void gf_xml_quote(char *dst, size_t dcap, const char *s, size_t n, size_t max);
/* The value of the hex digit c, or -1. */
int gf_xml_hexval(char c);

/* Escapes text for an element's content (& < > " ' as entities) into buf
 * (cap bytes, cut to fit, never inside an entity or a UTF-8 sequence;
 * buf NULL or cap 0: nothing written). Returns the length the whole
 * escaping needs. text NULL is "". s3_xml.h's gf_s3_xml_escape. */
size_t gf_xml_escape(const char *text, char *buf, size_t cap);

#endif /* GF_IO_S3_XML_READER_H */
