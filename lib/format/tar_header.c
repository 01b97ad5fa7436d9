/* A tar header checked on its own (tar_header.h): POSIX ustar's checksum
 * and numeric fields, with GNU's base-256 form of large numbers. */
#include "format/tar_header.h"

#include <string.h>

/* An octal field: leading spaces, digits, then NUL or space to its end
 * (an empty field is 0). false when it holds anything else. */
static bool octal(const uint8_t *f, size_t n, uint64_t *v) {
  size_t i = 0;
  uint64_t x = 0;
  while (i < n && f[i] == ' ')
    i++;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
    if (x >> 61)
      return false;
    x = x * 8 + (uint64_t)(f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != '\0')
      return false;
  *v = x;
  return true;
}

/* A numeric field: octal, or base-256 big-endian when its first byte's
 * high bit is set (positive values below 2^63 only). */
static bool number(const uint8_t *f, size_t n, uint64_t *v) {
  if (!(f[0] & 0x80))
    return octal(f, n, v);
  if (f[0] & 0x40)
    return false; /* negative */
  uint64_t x = f[0] & 0x3f;
  for (size_t i = 1; i < n; i++) {
    if (x >> 55)
      return false;
    x = (x << 8) | f[i];
  }
  *v = x;
  return true;
}

int gf_tar_header_read(const uint8_t *h, gf_tar_header *out) {
  uint64_t want;
  if (!octal(h + 148, 8, &want))
    return -1;
  uint64_t us = 0;
  int64_t ss = 0;
  for (unsigned i = 0; i < GF_TAR_BLOCK; i++) {
    uint8_t b = i >= 148 && i < 156 ? (uint8_t)' ' : h[i];
    us += b;
    ss += (int8_t)b;
  }
  /* An all-zero block sums to 256 (the field's spaces) but holds none. */
  if (h[148] == '\0' || (us != want && (uint64_t)ss != want))
    return -1;
  if (!number(h + 124, 12, &out->size))
    return -1;
  out->type = (char)h[156];
  size_t nl = strnlen((const char *)h, 100);
  size_t pl = memcmp(h + 257, "ustar\0", 6) == 0
                  ? strnlen((const char *)h + 345, 155)
                  : 0;
  size_t at = 0;
  if (pl) {
    memcpy(out->name, h + 345, pl);
    out->name[pl] = '/';
    at = pl + 1;
  }
  memcpy(out->name + at, h, nl);
  out->name[at + nl] = '\0';
  return 0;
}
