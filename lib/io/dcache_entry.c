/* One entry file of the disk cache tier (io/dcache.h has the format): its
 * header, writing it, and reading a range of it with every check. */
#include "io/dcache.h"

#include "common/fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h> /* fstat: the file's size */
#include <sys/uio.h>  /* preadv2 (RWF_NOWAIT): page-cache-only reads */

#define MAGIC "gfcache1"
#define FORMAT 1u
#define FIXED 56u /* the header's fixed part */
/* Bytes of a segment not wanted by a read are checked through this. */
#define SCRATCH (64u << 10)

uint64_t gf_dcache_charge(uint64_t len) {
  return GF_DCACHE_HEADER_BYTES + ((len + 4095u) & ~(uint64_t)4095u);
}

uint64_t gf_dcache_key_hash(const char *display, const char *version,
                            uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const char *parts[2] = {display, version};
  for (int p = 0; p < 2; p++) {
    for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++)
      h = (h ^ *s) * 0x100000001b3ull;
    h = (h ^ 0xffu) * 0x100000001b3ull; /* the parts' boundary */
  }
  for (int i = 0; i < 8; i++)
    h = (h ^ ((size >> (8 * i)) & 0xffu)) * 0x100000001b3ull;
  /* splitmix64's finaliser: FNV's high bits (the folder's bucket) mix
   * poorly alone. */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

bool gf_dcache_key_ok(const gf_dcache_key *k) {
  return k->version && k->version[0] &&
         strlen(k->version) < GF_VERSION_TAG_MAX && k->display &&
         strlen(k->display) <= GF_DCACHE_DISPLAY_MAX;
}

static uint32_t nseg(uint64_t len) {
  return (uint32_t)((len + GF_DCACHE_SEGMENT - 1) / GF_DCACHE_SEGMENT);
}

void gf_dcache_entry_header(const gf_dcache_key *k, uint64_t off,
                            const void *buf, uint64_t len, uint8_t *hdr) {
  size_t dl = strlen(k->display), vl = strlen(k->version);
  uint32_t ns = nseg(len);
  uint32_t h = FIXED + (uint32_t)dl + (uint32_t)vl + 4u * ns + 4u;
  memset(hdr, 0, GF_DCACHE_HEADER_BYTES);
  memcpy(hdr, MAGIC, 8);
  gf_put32(hdr + 8, FORMAT);
  gf_put32(hdr + 12, h);
  gf_put64(hdr + 16, k->size);
  gf_put64(hdr + 24, off);
  gf_put64(hdr + 32, len);
  gf_put32(hdr + 40, GF_DCACHE_SEGMENT);
  gf_put32(hdr + 44, ns);
  gf_put16(hdr + 48, (uint16_t)dl);
  gf_put16(hdr + 50, (uint16_t)vl);
  uint8_t *p = hdr + FIXED;
  memcpy(p, k->display, dl);
  p += dl;
  memcpy(p, k->version, vl);
  p += vl;
  const uint8_t *b = buf;
  for (uint32_t s = 0; s < ns; s++) {
    uint64_t at = (uint64_t)s * GF_DCACHE_SEGMENT;
    uint64_t n = len - at < GF_DCACHE_SEGMENT ? len - at : GF_DCACHE_SEGMENT;
    gf_put32(p, gf_crc32c(0, b + at, (size_t)n));
    p += 4;
  }
  gf_put32(p, gf_crc32c(0, hdr, h - 4u));
}

int gf_dcache_entry_write(int fd, const uint8_t *hdr, const void *buf,
                          uint64_t len) {
  int rc = gf_sys_write_full(fd, hdr, GF_DCACHE_HEADER_BYTES);
  if (rc == 0)
    rc = gf_sys_write_full(fd, buf, (size_t)len);
  return rc;
}

#define BAD(...) (snprintf(why, why_cap, __VA_ARGS__), GF_ECORRUPT)

/* n bytes at off. nowait: from the page cache only (preadv2 RWF_NOWAIT),
 * -EAGAIN when any of them is not there (or the file system cannot say);
 * else through the fault layer. Returns the count or -errno. */
static ssize_t rd(int fd, void *buf, size_t n, off_t off, bool nowait) {
  if (!nowait)
    return gf_sys_pread_full(fd, buf, n, off);
  struct iovec v = {buf, n};
  ssize_t got = preadv2(fd, &v, 1, off, RWF_NOWAIT);
  if (got < 0)
    return errno == EAGAIN || errno == EOPNOTSUPP || errno == EINVAL ||
                   errno == ENOSYS
               ? -EAGAIN
               : -errno;
  /* Short: the rest is not cached, or the file ends (the checks say). */
  return (size_t)got < n ? -EAGAIN : got;
}

/* Checks the header in hdr against the key and range; the CRC table's
 * place into *crcs. */
static int check_header(const uint8_t *hdr, const gf_dcache_key *k,
                        uint64_t off, uint64_t len, const uint8_t **crcs,
                        char *why, size_t why_cap) {
  if (memcmp(hdr, MAGIC, 8) != 0)
    return BAD("no entry magic");
  if (gf_le32(hdr + 8) != FORMAT)
    return BAD("entry format %u, expected %u", gf_le32(hdr + 8), FORMAT);
  uint32_t h = gf_le32(hdr + 12);
  if (h < FIXED + 4 || h > GF_DCACHE_HEADER_BYTES)
    return BAD("header length %u out of range", h);
  if (gf_crc32c(0, hdr, h - 4u) != gf_le32(hdr + h - 4))
    return BAD("the header's CRC32C does not match");
  size_t dl = gf_le16(hdr + 48), vl = gf_le16(hdr + 50);
  uint32_t ns = gf_le32(hdr + 44);
  if (FIXED + dl + vl + 4u * (uint64_t)ns + 4u != h)
    return BAD("header lengths disagree");
  /* The key: the collision check of the hashed folder name, and the
   * version check. */
  if (dl != strlen(k->display) || memcmp(hdr + FIXED, k->display, dl) != 0)
    return BAD("the entry belongs to another object (%.*s)",
               (int)(dl > 200 ? 200 : dl), (const char *)hdr + FIXED);
  if (vl != strlen(k->version) || memcmp(hdr + FIXED + dl, k->version, vl) != 0)
    return BAD("the entry holds another version of the object");
  if (gf_le64(hdr + 16) != k->size)
    return BAD("the entry holds an object of %llu bytes, now %llu",
               (unsigned long long)gf_le64(hdr + 16),
               (unsigned long long)k->size);
  if (gf_le64(hdr + 24) != off || gf_le64(hdr + 32) != len)
    return BAD("the entry holds [%llu, +%llu), its name says [%llu, +%llu)",
               (unsigned long long)gf_le64(hdr + 24),
               (unsigned long long)gf_le64(hdr + 32), (unsigned long long)off,
               (unsigned long long)len);
  if (gf_le32(hdr + 40) != GF_DCACHE_SEGMENT || ns != nseg(len))
    return BAD("segment size %u x %u, expected %u x %u", gf_le32(hdr + 40), ns,
               GF_DCACHE_SEGMENT, nseg(len));
  *crcs = hdr + FIXED + dl + vl;
  return 0;
}

/* CRC32C of file bytes [from, to) (payload offsets) read through scratch,
 * continuing crc. Returns 0 or a negative code. */
static int crc_span(int fd, uint64_t from, uint64_t to, uint8_t *scratch,
                    uint32_t *crc, bool nowait, char *why, size_t why_cap) {
  while (from < to) {
    size_t n = to - from < SCRATCH ? (size_t)(to - from) : SCRATCH;
    ssize_t got =
        rd(fd, scratch, n, (off_t)(GF_DCACHE_HEADER_BYTES + from), nowait);
    if (got < 0)
      return (int)got;
    if ((size_t)got < n)
      return BAD("the entry ends at %llu of its payload",
                 (unsigned long long)(from + (uint64_t)got));
    *crc = gf_crc32c(*crc, scratch, n);
    from += n;
  }
  return 0;
}

int gf_dcache_entry_read(int fd, const gf_dcache_key *k, uint64_t off,
                         uint64_t len, uint64_t a, uint64_t b, void *dst,
                         bool nowait, int64_t *mtime_s, char *why,
                         size_t why_cap) {
  uint8_t hdr[GF_DCACHE_HEADER_BYTES];
  ssize_t got = rd(fd, hdr, sizeof hdr, 0, nowait);
  if (got < 0)
    return (int)got;
  if ((size_t)got < sizeof hdr)
    return BAD("the entry is %lld bytes, shorter than its header",
               (long long)got);
  const uint8_t *crcs;
  int rc = check_header(hdr, k, off, len, &crcs, why, why_cap);
  if (rc < 0)
    return rc;
  struct stat sb;
  if (fstat(fd, &sb) < 0)
    return -errno;
  *mtime_s = (int64_t)sb.st_mtim.tv_sec;
  if ((uint64_t)sb.st_size != GF_DCACHE_HEADER_BYTES + len)
    return BAD("the entry is %llu bytes, expected %llu",
               (unsigned long long)sb.st_size,
               (unsigned long long)(GF_DCACHE_HEADER_BYTES + len));
  if (a < off || b > off + len || a >= b)
    return BAD("range [%llu, %llu) is not inside the entry",
               (unsigned long long)a, (unsigned long long)b);
  uint64_t lo = a - off, hi = b - off; /* payload offsets wanted */
  uint8_t scratch[SCRATCH];
  for (uint64_t s = lo / GF_DCACHE_SEGMENT; s * GF_DCACHE_SEGMENT < hi; s++) {
    uint64_t s0 = s * GF_DCACHE_SEGMENT;
    uint64_t s1 = len - s0 < GF_DCACHE_SEGMENT ? len : s0 + GF_DCACHE_SEGMENT;
    uint64_t w0 = lo > s0 ? lo : s0, w1 = hi < s1 ? hi : s1;
    uint32_t crc = 0;
    if ((rc = crc_span(fd, s0, w0, scratch, &crc, nowait, why, why_cap)) < 0)
      return rc;
    uint8_t *d = (uint8_t *)dst + (w0 - lo);
    got = rd(fd, d, (size_t)(w1 - w0), (off_t)(GF_DCACHE_HEADER_BYTES + w0),
             nowait);
    if (got < 0)
      return (int)got;
    if ((uint64_t)got < w1 - w0)
      return BAD("the entry ends at %llu of its payload",
                 (unsigned long long)(w0 + (uint64_t)got));
    crc = gf_crc32c(crc, d, (size_t)(w1 - w0));
    if ((rc = crc_span(fd, w1, s1, scratch, &crc, nowait, why, why_cap)) < 0)
      return rc;
    if (crc != gf_le32(crcs + 4 * s))
      return BAD("the CRC32C of payload segment %llu does not match",
                 (unsigned long long)s);
  }
  return 0;
}

bool gf_dcache_fmt(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n >= 0 && (size_t)n < cap;
}

void gf_dcache_entry_path(const char *obj, uint64_t off, uint64_t len,
                          const char *suffix, char *buf, size_t cap) {
  gf_dcache_fmt(buf, cap, "%s/%016llx-%016llx%s", obj, (unsigned long long)off,
                (unsigned long long)len, suffix);
}

/* 16 lowercase hex digits at s. */
static bool hex16(const char *s, uint64_t *v) {
  uint64_t x = 0;
  for (int i = 0; i < 16; i++) {
    char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = (unsigned)(c - 'a' + 10);
    else
      return false;
    x = x << 4 | d;
  }
  *v = x;
  return true;
}

int gf_dcache_name_parse(const char *name, uint64_t *off, uint64_t *len,
                         int *pid, uint64_t *start) {
  *pid = 0;
  *start = 0;
  if (strlen(name) < 33 || !hex16(name, off) || name[16] != '-' ||
      !hex16(name + 17, len))
    return GF_DCACHE_NAME_OTHER;
  const char *rest = name + 33;
  if (!rest[0])
    return GF_DCACHE_NAME_ENTRY;
  if (!strcmp(rest, ".claim"))
    return GF_DCACHE_NAME_CLAIM;
  unsigned long long st;
  unsigned seq;
  int p, n = 0;
  if (sscanf(rest, ".tmp.%d.%llu.%u%n", &p, &st, &seq, &n) == 3 && !rest[n] &&
      p > 0) {
    *pid = p;
    *start = st;
    return GF_DCACHE_NAME_TMP;
  }
  return GF_DCACHE_NAME_OTHER;
}
