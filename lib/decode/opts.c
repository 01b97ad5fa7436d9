/* The checks every decode entry point makes on its options, and the shape
 * a stored sample decodes to under them: shared by the dispatcher
 * (codec.c) and the codecs (png.c), which call nothing else of each
 * other. */
#include "decode/decode.h"

#include <string.h>

int gf_decode_opts_resolve(const gf_decode_opts *in, gf_decode_opts *out) {
  gf_decode_opts def = GF_DECODE_OPTS_INIT;
  *out = def;
  if (!in)
    return 0;
  int rc = gf_check_struct_size(in->struct_size, sizeof *in, "gf_decode_opts");
  if (rc < 0)
    return rc;
  /* An older, smaller struct leaves the fields it lacks at their defaults. */
  memcpy(out, in, in->struct_size);
  out->struct_size = sizeof *out;
  bool reserved_set = out->reserved0 != 0;
  for (size_t i = 0; i < sizeof out->reserved / sizeof out->reserved[0]; i++)
    reserved_set = reserved_set || out->reserved[i] != 0;
  if (reserved_set)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_opts: reserved fields must be zero");
  if (out->channels > 4)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_opts: channels %u is not valid (expected 0 to "
                   "keep the image's own, or 1, 3, 4)",
                   out->channels);
  return 0;
}

gf_shape gf_decode_out_shape(const gf_shape *stored, const gf_decode_opts *o) {
  gf_shape s = *stored;
  if (o->channels)
    s.channels = o->channels;
  if (s.dtype == GF_DTYPE_U16 && !o->keep_16bit)
    s.dtype = GF_DTYPE_U8;
  return s;
}
