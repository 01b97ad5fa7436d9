/* `gpufeed index --verify`, one shard (cli.h's gfc_index_verify): each
 * image member (a name ending in .jpg, .jpeg or .png, any case) read, in
 * windows of consecutive members, and checked whole by the CPU decoders
 * (libjpeg reads every scan's data, gf_jpeg_check; libpng decodes; a
 * warning taken as an error, as the loader takes it);
 * those that decode listed in the shard's sums (format/wds_sums.h) with
 * the CRC32C of their bytes. One that does not is named (shard, member,
 * byte offset, the decoder's message) and left out: the loader then
 * decodes it on the CPU, whose error policy meets it. */
#include "cli.h"

#include "common/common.h"
#include "decode/decode.h" /* gf_jpeg_check */
#include "format/format.h" /* gf_folder_file_codec */
#include "format/tar_scan.h"
#include "format/wds_sums.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CMD "index"
/* Consecutive members read at once: one request over a network. */
#define WINDOW (8u << 20)

/* Whether the member's name promises an image, and which codec. */
static int image_codec(const char *path) {
  const char *dot = strrchr(path, '.');
  if (!dot || strchr(dot, '/'))
    return -1;
  if (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"))
    return GF_CODEC_JPEG;
  if (!strcasecmp(dot, ".png"))
    return GF_CODEC_PNG;
  return -1;
}

/* Decodes the image at img (len bytes) whole; *px grows as needed. Returns
 * 0 or the decoder's error, recorded. */
static int decode_whole(int promised, const uint8_t *img, uint64_t len,
                        void **px, uint64_t *cap) {
  int codec = gf_folder_file_codec(promised, NULL, img, (size_t)len);
  if (codec < 0)
    return codec;
  gf_decode_opts opts = GF_DECODE_OPTS_INIT;
  if (codec == GF_CODEC_JPEG) /* every scan read, no pixels made */
    return gf_jpeg_check(img, (size_t)len, &opts, NULL);
  gf_shape shape;
  int rc = gf_decode_shape(codec, img, (size_t)len, NULL, &opts, &shape);
  if (rc < 0)
    return rc;
  uint64_t bytes = gf_shape_bytes(&shape);
  if (bytes > *cap) {
    void *p = realloc(*px, (size_t)bytes);
    if (!p)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate %" PRIu64 " bytes to decode it", bytes);
    *px = p;
    *cap = bytes;
  }
  return gf_decode(codec, img, (size_t)len, NULL, &opts, *px, (size_t)*cap,
                   &shape);
}

int gfc_index_verify(gf_object *obj, const gf_tar_member *m, uint64_t n,
                     const atomic_int *interrupted, gfc_index_counts *c,
                     char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  gf_wds_sum *sums = NULL;
  uint8_t *win = NULL;
  void *px = NULL;
  uint64_t nsums = 0, wcap = 0, pcap = 0, wlo = 0, whi = 0;
  const gf_limits lim = gf_limits_resolve(NULL);
  int rc = 0;
  if (!(sums = calloc(n ? n : 1, sizeof *sums)))
    return gf_fail(-ENOMEM, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the shard's sums");
  for (uint64_t i = 0; i < n && rc == 0; i++) {
    int codec = image_codec(m[i].path);
    if (codec < 0)
      continue;
    if (*interrupted) {
      rc = gf_fail(-ECANCELED, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                   "interrupted");
      break;
    }
    const uint64_t off = m[i].data_offset, size = m[i].size;
    gf_error_clear();
    int bad = 0;
    if (size > lim.max_bytes) {
      bad = gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                    "%" PRIu64 " bytes exceed the limit of %" PRIu64
                    " bytes a sample",
                    size, lim.max_bytes);
    } else if (off < wlo || off + size > whi) {
      /* A window from this member on: the members after it, to WINDOW
       * bytes, come with it. */
      uint64_t want = size > WINDOW ? size : WINDOW;
      if (want > obj->size - off)
        want = obj->size - off;
      if (want > wcap) {
        uint8_t *p = realloc(win, (size_t)want);
        if (!p) {
          rc = gf_fail(-ENOMEM, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                       "out of memory reading the shard");
          break;
        }
        win = p;
        wcap = want;
      }
      if ((rc = gf_object_read(obj, win, off, want)) < 0)
        break; /* the shard, not the image: the shard fails */
      wlo = off;
      whi = off + want;
    }
    if (!bad)
      bad = decode_whole(codec, win + (off - wlo), size, &px, &pcap);
    if (bad < 0) {
      c->unverified++;
      gf_log(GF_LOG_WARN,
             "%s: member '%s' (data at byte %" PRIu64
             ") does not decode, so it is not verified (the loader decodes "
             "it on the CPU, under its error policy): %s",
             obj->display, m[i].path, off,
             gf_last_error()->message[0] ? gf_last_error()->message
                                         : gf_strerror(bad));
      continue;
    }
    sums[nsums++] =
        (gf_wds_sum){.offset = off,
                     .size = size,
                     .crc = gf_crc32c(0, win + (off - wlo), (size_t)size)};
    c->verified++;
  }
  if (rc == 0 &&
      (rc = gf_wds_sums_write(sums, nsums, obj->size, text, len)) < 0)
    rc = gf_fail(rc, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                 rc == -ENOMEM ? "out of memory writing the shard's sums"
                               : "its members are not in order");
  if (rc == 0)
    gf_error_clear();
  free(sums);
  free(win);
  free(px);
  return rc;
}
