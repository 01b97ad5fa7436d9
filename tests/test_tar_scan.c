/* The tar header scan (lib/format/tar_scan.c): tar files made here by
 * Python's tarfile (GNU long names, PAX long and non-ASCII names, ustar
 * prefixes, directories and links) and by hand (a base-256 size of 9 GiB
 * in a sparse file, a truncated file, a bad checksum, a non-tar file,
 * a member past the end, an over-long name), each member's path, data
 * offset and size compared with what tarfile says. */
#include "format/tar_scan.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct got {
  char path[64][512];
  uint64_t off[64], size[64];
  int n;
} got;

static int collect(void *ctx, const gf_tar_member *m) {
  got *g = ctx;
  if (g->n < 64) {
    snprintf(g->path[g->n], sizeof g->path[0], "%s", m->path);
    g->off[g->n] = m->data_offset;
    g->size[g->n] = m->size;
  }
  g->n++;
  return 0;
}

static int64_t fd_read(void *ctx, void *buf, uint64_t off, uint64_t len) {
  ssize_t n = pread(*(int *)ctx, buf, len, (off_t)off);
  return n < 0 ? gf_fail(-errno, NULL, GF_NO_INDEX, off, "pread failed") : n;
}

static int scan_file(const char *path, got *g) {
  memset(g, 0, sizeof *g);
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -errno;
  struct stat st;
  fstat(fd, &st);
  int rc = gf_tar_scan(path, (uint64_t)st.st_size, fd_read, &fd, collect, g);
  close(fd);
  return rc;
}

/* Makes a tar with Python's tarfile; writes the expected "path offset
 * size" lines (tarfile's own view) to want. Returns false (skip) without
 * python3. */
static const char *maker =
    "import io,sys,tarfile\n"
    "fmt={'gnu':tarfile.GNU_FORMAT,'pax':tarfile.PAX_FORMAT,"
    "'ustar':tarfile.USTAR_FORMAT}[sys.argv[1]]\n"
    "t=tarfile.open(sys.argv[2],'w',format=fmt)\n"
    "def add(n,d=b'x',ty=tarfile.REGTYPE):\n"
    "  i=tarfile.TarInfo(n);i.size=len(d) if ty==tarfile.REGTYPE else 0\n"
    "  i.type=ty\n"
    "  if ty in (tarfile.SYMTYPE,tarfile.LNKTYPE): i.linkname='a/b.txt'\n"
    "  t.addfile(i,io.BytesIO(d) if ty==tarfile.REGTYPE else None)\n"
    "add('a',ty=tarfile.DIRTYPE)\n"
    "add('a/b.txt',b'hello')\n"
    "add('a/b.cls',b'7'*1000)\n"
    "if fmt!=tarfile.USTAR_FORMAT:\n"
    "  add('d'*150+'/k'+'e'*120+'.jpg',b'J'*513)\n"
    "else:\n"
    "  add('p'*120+'/q.png',b'P'*2)\n"
    "if fmt==tarfile.PAX_FORMAT: add('\\u00e9t\\u00e9/\\u00fc.TXT',b'u')\n"
    "add('s.lnk',ty=tarfile.SYMTYPE)\n"
    "add('h.lnk',ty=tarfile.LNKTYPE)\n"
    "add('empty.bin',b'')\n"
    "add('z.last',b'z'*70000)\n"
    "t.close()\n"
    "w=open(sys.argv[3],'w',encoding='utf-8')\n"
    "for m in tarfile.open(sys.argv[2]):\n"
    "  if m.isreg(): w.write('%s %d %d\\n'%(m.name,m.offset_data,m.size))\n";

static void check_format(const char *dir, const char *fmt) {
  char py[4200], tar[4200], want[4200], cmd[13000];
  snprintf(py, sizeof py, "%s/maker.py", dir);
  snprintf(tar, sizeof tar, "%s/%s.tar", dir, fmt);
  snprintf(want, sizeof want, "%s/%s.want", dir, fmt);
  CHECK_OK(gf_test_write_file(py, maker, strlen(maker)));
  snprintf(cmd, sizeof cmd, "python3 %s %s %s %s", py, fmt, tar, want);
  CHECK(system(cmd) == 0);
  got g;
  CHECK_OK(scan_file(tar, &g));
  FILE *f = fopen(want, "r");
  CHECK(f != NULL);
  if (!f)
    return;
  char line[1024];
  int i = 0;
  while (fgets(line, sizeof line, f)) {
    char *sp2 = strrchr(line, ' ');
    *sp2 = '\0';
    char *sp1 = strrchr(line, ' ');
    *sp1 = '\0';
    unsigned long long off = strtoull(sp1 + 1, NULL, 10);
    unsigned long long size = strtoull(sp2 + 1, NULL, 10);
    CHECK(i < g.n);
    if (i < g.n) {
      if (strcmp(g.path[i], line))
        fprintf(stderr, "%s: member %d: '%s', tarfile says '%s'\n", fmt, i,
                g.path[i], line);
      CHECK(!strcmp(g.path[i], line));
      CHECK(g.off[i] == off && g.off[i] % 512 == 0);
      CHECK(g.size[i] == size);
    }
    i++;
  }
  fclose(f);
  CHECK(g.n == i);
  CHECK(i >= 5); /* dirs and links skipped, every regular member seen */
  printf("%s: %d regular members match tarfile\n", fmt, g.n);
}

/* A ustar header for name with a size field as given. */
static void header(uint8_t *h, const char *name, const uint8_t size[12],
                   char type) {
  memset(h, 0, 512);
  snprintf((char *)h, 100, "%s", name);
  memcpy(h + 100, "0000644", 8);
  memcpy(h + 108, "0000000", 8);
  memcpy(h + 116, "0000000", 8);
  memcpy(h + 124, size, 12);
  memcpy(h + 136, "00000000000", 12);
  h[156] = (uint8_t)type;
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
}

static void octal_size(uint8_t s[12], uint64_t v) {
  char t[16];
  snprintf(t, sizeof t, "%011llo", (unsigned long long)v);
  memcpy(s, t, 12);
}

static void write_tar(const char *path, const uint8_t *p, size_t n) {
  CHECK_OK(gf_test_write_file(path, p, n));
}

static void check_err(const char *path, int want, uint64_t at) {
  got g;
  gf_error_clear();
  int rc = scan_file(path, &g);
  const gf_error_info *e = gf_last_error();
  CHECK_ERR(rc, want);
  CHECK(e->offset == at);
  CHECK(!strcmp(e->path, path));
  printf("  %s -> %s at %llu: %s\n", strrchr(path, '/') + 1, gf_err_name(rc),
         (unsigned long long)e->offset, e->message);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  if (system("python3 -c 'import tarfile' 2>/dev/null") != 0)
    gf_test_skip(false, "python3 not found");
  check_format(dir, "gnu");
  check_format(dir, "pax");
  check_format(dir, "ustar");

  char path[4200];
  uint8_t t[512 * 8];
  uint8_t sz[12];

  /* Two members, then damage. */
  memset(t, 0, sizeof t);
  octal_size(sz, 5);
  header(t, "k.a", sz, '0');
  memcpy(t + 512, "hello", 5);
  header(t + 1024, "k.b", sz, '0');
  snprintf(path, sizeof path, "%s/good.tar", dir);
  write_tar(path, t, sizeof t);
  got g;
  CHECK_OK(scan_file(path, &g));
  CHECK(g.n == 2 && g.off[0] == 512 && g.off[1] == 1536 && g.size[1] == 5);

  /* A bad checksum on the second header (at 1024). */
  uint8_t bad[sizeof t];
  memcpy(bad, t, sizeof t);
  bad[1024 + 148] ^= 1;
  snprintf(path, sizeof path, "%s/checksum.tar", dir);
  write_tar(path, bad, sizeof bad);
  check_err(path, GF_ECORRUPT, 1024);

  /* Truncated inside the second header. */
  snprintf(path, sizeof path, "%s/truncated.tar", dir);
  write_tar(path, t, 1024 + 300);
  check_err(path, GF_ETRUNCATED, 1024);

  /* Not a tar file. */
  char junk[2048];
  memset(junk, 'j', sizeof junk);
  snprintf(path, sizeof path, "%s/junk.tar", dir);
  write_tar(path, (const uint8_t *)junk, sizeof junk);
  check_err(path, GF_EFORMAT, 0);

  /* A member whose data runs past the end. */
  memset(bad, 0, sizeof bad);
  octal_size(sz, 100000);
  header(bad, "big.bin", sz, '0');
  snprintf(path, sizeof path, "%s/past.tar", dir);
  write_tar(path, bad, 2048);
  check_err(path, GF_ECORRUPT, 0);

  /* A name over GF_TAR_NAME_MAX bytes (a GNU 'L' record of 5000). */
  {
    size_t body = 5001, pad = (body + 511) / 512 * 512;
    size_t n = 512 + pad + 512 + 512 + 1024;
    uint8_t *l = calloc(1, n);
    octal_size(sz, body);
    header(l, "././@LongLink", sz, 'L');
    memset(l + 512, 'n', 4996);
    memcpy(l + 512 + 4996, ".txt", 4);
    octal_size(sz, 1);
    header(l + 512 + pad, "short", sz, '0');
    snprintf(path, sizeof path, "%s/longname.tar", dir);
    write_tar(path, l, n);
    free(l);
    check_err(path, GF_ECORRUPT, 0);
  }

  /* A 9 GiB member with a base-256 size, then a small one: a sparse file
   * (the scan skips the payload without reading it). */
  {
    uint64_t big = 9ull << 30;
    uint8_t h[1024];
    memset(sz, 0, 12);
    sz[0] = 0x80;
    for (int i = 0; i < 8; i++)
      sz[11 - i] = (uint8_t)(big >> (8 * i));
    header(h, "huge.bin", sz, '0');
    octal_size(sz, 3);
    header(h + 512, "after.txt", sz, '0');
    snprintf(path, sizeof path, "%s/huge.tar", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, h, 512, 0) == 512);
    CHECK(pwrite(fd, h + 512, 512, (off_t)(512 + big)) == 512);
    CHECK(ftruncate(fd, (off_t)(512 + big + 512 + 512 + 1024)) == 0);
    close(fd);
    CHECK_OK(scan_file(path, &g));
    CHECK(g.n == 2);
    CHECK(g.size[0] == big && g.off[0] == 512);
    CHECK(g.off[1] == 512 + big + 512 && g.size[1] == 3);
    CHECK(!strcmp(g.path[1], "after.txt"));
    unlink(path);
  }
  return gf_test_finish();
}
