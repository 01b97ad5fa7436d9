/* Shared by gpufeed's fuzz targets (tests/fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput and is built two ways:
 * - by .ci/fuzz with clang -fsanitize=fuzzer,address,undefined: libFuzzer
 *   supplies main() and generates inputs;
 * - by ctest (tests/fuzz.cmake) with the project's compiler, linked with
 *   replay.c, whose main() feeds it every file of the checked-in seed
 *   corpus and crash regressions, so each finding stays fixed.
 *
 * A target aborts (FUZZ_ASSERT) when the library breaks a promise on an
 * input that is not a crash by itself: a failure without a recorded
 * context, a success that returns inconsistent data. Both builds treat the
 * abort as a failure. */
#ifndef GF_FUZZ_H
#define GF_FUZZ_H

#include "gpufeed.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h> /* nftw: removing the scratch folder */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                     \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: FUZZ_ASSERT failed: %s\n", __FILE__, __LINE__,  \
              #cond);                                                         \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* The error contract of gpufeed.h: a failing call returns a negative code
 * and leaves that code and a message in gf_last_error(). */
#define FUZZ_CHECK_FAILURE(rc, what)                                          \
  do {                                                                        \
    const gf_error_info *e_ = gf_last_error();                                \
    if ((rc) >= 0 || e_->code != (int)(rc) || e_->message[0] == '\0') {       \
      fprintf(stderr,                                                         \
              "%s:%d: %s returned %lld (%s) but the recorded error is %d: "   \
              "'%s'\n",                                                       \
              __FILE__, __LINE__, what, (long long)(rc),                      \
              gf_err_name((int)(rc)), e_->code, e_->message);                 \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* Little-endian field access on fuzz input copies. */
static inline uint32_t fuzz_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}
static inline uint64_t fuzz_le64(const uint8_t *p) {
  return (uint64_t)fuzz_le32(p) | ((uint64_t)fuzz_le32(p + 4) << 32);
}
static inline void fuzz_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline void fuzz_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* True when [off, off + len) lies inside [0, size), without overflow. */
static inline bool fuzz_in(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

static inline int fuzz_rm_entry(const char *path, const struct stat *sb,
                                int type, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  if (type == FTW_DP)
    rmdir(path);
  else
    unlink(path);
  return 0;
}

/* Removes a folder tree (files, links, folders; links are not followed). */
static inline void fuzz_rm_tree(const char *dir) {
  nftw(dir, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char fuzz_dir_[4096];

static inline void fuzz_cleanup_(void) {
  if (fuzz_dir_[0])
    fuzz_rm_tree(fuzz_dir_);
}

/* A scratch folder for this process, on tmpfs (/dev/shm) when there is
 * one so that writing an input costs no disk I/O; removed at exit. Never
 * NULL (aborts when no folder can be made). */
static inline const char *fuzz_tmpdir(void) {
  if (fuzz_dir_[0])
    return fuzz_dir_;
  const char *bases[] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
    struct stat st;
    if (!bases[i] || stat(bases[i], &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/gpufeed-fuzz-XXXXXX", bases[i]);
    if (mkdtemp(fuzz_dir_)) {
      atexit(fuzz_cleanup_);
      return fuzz_dir_;
    }
  }
  fprintf(stderr, "fuzz: cannot create a scratch folder\n");
  abort();
}

/* Writes len bytes to path (created or truncated). Aborts on failure: the
 * harness, not the library, would be at fault. */
static inline void fuzz_write_file(const char *path, const void *data,
                                   size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path);
    abort();
  }
  const uint8_t *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w <= 0) {
      if (w < 0 && errno == EINTR)
        continue;
      perror(path);
      abort();
    }
    p += w;
    len -= (size_t)w;
  }
  close(fd);
}

/* malloc that never returns NULL for the harness's own buffers. */
static inline void *fuzz_alloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    abort();
  return p;
}

#endif
