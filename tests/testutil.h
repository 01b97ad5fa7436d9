/* A small test harness: checks that report file:line and keep counting,
 * a per-test scratch folder, deterministic random numbers, and skips.
 * Exit codes: 0 pass, 1 fail, 77 skip. */
#ifndef GF_TESTUTIL_H
#define GF_TESTUTIL_H

#include "gpufeed.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int gf_test_failures;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,       \
              #cond);                                                        \
      gf_test_failures++;                                                    \
    }                                                                        \
  } while (0)

/* Checks a gpufeed status is 0; prints the code and the last error if not. */
#define CHECK_OK(expr)                                                       \
  do {                                                                       \
    long long rc_ = (long long)(expr);                                       \
    if (rc_ < 0) {                                                           \
      fprintf(stderr, "%s:%d: %s returned %lld (%s): %s\n", __FILE__,        \
              __LINE__, #expr, rc_, gf_err_name((int)rc_),                   \
              gf_last_error()->message);                                     \
      gf_test_failures++;                                                    \
    }                                                                        \
  } while (0)

/* Checks expr returns exactly the (negative) code `want`. */
#define CHECK_ERR(expr, want)                                                \
  do {                                                                       \
    long long rc_ = (long long)(expr);                                       \
    if (rc_ != (long long)(want)) {                                          \
      fprintf(stderr, "%s:%d: %s returned %lld (%s), wanted %s\n", __FILE__, \
              __LINE__, #expr, rc_, gf_err_name((int)rc_),                   \
              gf_err_name((int)(want)));                                     \
      gf_test_failures++;                                                    \
    }                                                                        \
  } while (0)

/* Ends the test: 1 if any check failed, else 0. */
int gf_test_finish(void);
/* Prints why and exits 77 (or 1 when GPUFEED_REQUIRE_GPU=1 and gpu is
 * true: a GPU test may not skip on a machine that must have one). */
void gf_test_skip(bool gpu, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A fresh, empty scratch folder for this test ($GPUFEED_TEST_TMP or a
 * mkdtemp under /tmp); static storage. */
const char *gf_test_tmpdir(void);
/* ../shared/data (from $GPUFEED_TEST_DATA) if it exists, else NULL. */
const char *gf_test_data_dir(void);

/* Lists the .png files of gf_test_data_dir()/sub, sorted by name, into
 * names (at most max, each malloc'd: the caller frees them) and the folder
 * into dir. Skips the test (exit 77, with a message) when the data folder
 * or sub is missing. Returns the count. */
int gf_test_list_png(const char *sub, char *dir, size_t dir_cap, char **names,
                     int max);

/* Deterministic generator (splitmix64). */
uint64_t gf_test_rand(uint64_t *state);

/* Reads a whole file; caller frees. NULL on failure. */
void *gf_test_read_file(const char *path, size_t *len);
/* Writes a whole file; 0 or -errno. */
int gf_test_write_file(const char *path, const void *data, size_t len);

/* Fills an HxWxC image with a photo-like pattern (smooth gradients plus
 * noise) from the seed. */
void gf_test_fill_image(uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
                        uint64_t seed);

#endif
