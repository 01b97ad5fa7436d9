/* S3's XML replies (s3_xml.c, over the XML reader of s3_xml_reader.h),
 * between the files of lib/io only: the error document, a ListObjectsV2
 * page, and the two multipart replies, read from bytes a server (or
 * whoever stands in its place) sent, so nothing in them is trusted.
 *
 * What is read is the XML that S3, MinIO, Ceph, R2 and moto write: an
 * optional <?xml ...?> declaration (after whitespace too: S3 pads a slow
 * CompleteMultipartUpload's 200 with spaces), elements with attributes,
 * names matched by their local part (a "prefix:" dropped, xmlns ignored),
 * case kept; <X/>; comments and processing instructions anywhere; CDATA
 * sections as text; the five predefined entities and decimal or hex
 * character references (written as UTF-8; 0, surrogates and over
 * 0x10FFFF refused); line ends in text as "\n" (XML's rule); elements not
 * known skipped with whatever they hold. Refused as not XML: a DOCTYPE
 * (no DTD, so no entity but the five), any other entity, a NUL byte,
 * mismatched or unclosed tags, text or a second element outside the root,
 * nesting deeper than 32 elements. The parse is one loop over the bytes
 * (no recursion), linear in the body, and keeps no more than the text of
 * the field being read.
 *
 * Messages (why) quote at most 40 bytes of the body each, control bytes
 * as '?', and give the byte offset where the body went wrong. */
#ifndef GF_IO_S3_XML_H
#define GF_IO_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_S3_XML_MAX (16u << 20) /* the largest reply body parsed */

typedef struct gf_s3_error {
  char code[64];      /* "NoSuchKey", ... ("" when absent) */
  char message[512];  /* cut to fit; control bytes as '?' */
  char resource[512]; /* <Resource> when there ("" else) */
} gf_s3_error;
/* Whether body is an S3 error document (root element <Error>): 1 and *out
 * filled; 0 when it is not one (any other root, empty, not XML: *out
 * zeroed); never fails otherwise. Code and resource are cut to fit as
 * message is (never inside a UTF-8 sequence), control bytes as '?'. out
 * may be NULL (the answer alone). Any thread. */
int gf_s3_xml_error(const char *body, size_t len, gf_s3_error *out);

/* One object or common prefix of a ListObjectsV2 page. Key and prefix
 * are decoded (XML entities and character references; and, when the page
 * says <EncodingType>url</EncodingType>, percent-decoding of Key, Prefix,
 * StartAfter, Delimiter as S3 does with encoding-type=url), NUL-terminated,
 * valid during the call. A decoded key containing a NUL byte makes the page
 * malformed. */
typedef struct gf_s3_list_item {
  const char *key; /* Contents/Key, or CommonPrefixes/Prefix */
  size_t key_len;
  uint64_t size;    /* Contents/Size; UINT64_MAX for a prefix */
  const char *etag; /* Contents/ETag decoded (quotes kept as sent); "" */
  bool is_prefix;
} gf_s3_list_item;
typedef int (*gf_s3_list_fn)(void *ctx, const gf_s3_list_item *it);
typedef struct gf_s3_list_page {
  bool truncated;             /* <IsTruncated>true</IsTruncated> */
  char next_token[2048];      /* <NextContinuationToken> ("" none) */
  uint64_t objects, prefixes; /* items given to fn */
} gf_s3_list_page;
/* Parses a ListBucketResult (ListObjectsV2) body, calling fn for each
 * Contents and CommonPrefixes entry in document order; a nonzero return of
 * fn stops and is returned. Returns 0, -EPROTO (malformed: not XML as S3
 * writes it, another root element, a Contents without Key or Size, a Size
 * that is not a decimal uint64, IsTruncated true without a token, a token
 * too long, a body over GF_S3_XML_MAX) with the reason in why (cap bytes;
 * never more than 40 bytes of the body quoted, control bytes as '?'),
 * -ENOMEM, or fn's value. Any thread.
 *
 * The whole page is read before fn is first called (moto writes
 * EncodingType after the Contents), so a malformed page gives fn nothing:
 * -EPROTO and -ENOMEM come with no item given. *page is zeroed first; its
 * truncated and next_token are set before fn's first call. fn may be NULL
 * (the items counted only). Also -EPROTO: a Contents with two Keys (or
 * Sizes, ETags), a CommonPrefixes without Prefix, an IsTruncated neither
 * "true" nor "false", an EncodingType other than "url", an ETag over 1023
 * bytes, and with encoding url a '%' not followed by two hex digits (where
 * Python's unquote_plus would keep it). '+' decodes to a space, as
 * botocore's unquote_plus does (S3 writes a space as '+'). Prefix,
 * StartAfter and Delimiter at the top are not reported, so only checked
 * as XML. Scratch: one buffer as long as the longest key, freed before
 * return. */
int gf_s3_xml_list(const char *body, size_t len, gf_s3_list_fn fn, void *ctx,
                   gf_s3_list_page *page, char *why, size_t cap);

/* InitiateMultipartUploadResult's <UploadId> into id (cap bytes, NUL-
 * terminated). Returns 0, -EPROTO (absent, empty, too long, other root)
 * with why. On failure id is "". Any thread. */
int gf_s3_xml_upload_id(const char *body, size_t len, char *id, size_t cap,
                        char *why, size_t wcap);
/* CompleteMultipartUpload's reply, which may be an error although the
 * status was 200: returns 0 for a CompleteMultipartUploadResult (its
 * <ETag> into etag, cap bytes, may be NULL), 1 with *err filled for an
 * <Error> document, -EPROTO with why for anything else. moto 5 names the
 * root CompleteMultipartUploadResponse: read as the Result. An ETag absent,
 * empty or longer than cap - 1 bytes is -EPROTO (a cut ETag would be a
 * wrong one). err may be NULL; etag is "" unless 0 is returned. Any
 * thread. */
int gf_s3_xml_complete(const char *body, size_t len, char *etag, size_t cap,
                       gf_s3_error *err, char *why, size_t wcap);

/* Escapes text for an XML element's content (& < > " ' as entities) into
 * buf (cap > 0, cut to fit). Returns the length the whole escaping needs.
 * For the CompleteMultipartUpload request body (ETags). A cut never ends
 * inside an entity or a UTF-8 sequence; the result fits when the return
 * is below cap. text NULL is "". Any thread. */
size_t gf_s3_xml_escape(const char *text, char *buf, size_t cap);

#endif /* GF_IO_S3_XML_H */
