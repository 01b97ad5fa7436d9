/* A ustar writer for tests (tar_testutil.c): members written one by one
 * with plain ustar headers, so that a test can place damage byte by byte
 * and knows where every member lies. */
#ifndef GF_TESTS_TAR_TESTUTIL_H
#define GF_TESTS_TAR_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Appends member `name` (under 100 bytes) holding data[0 .. len) to f:
 * its 512-byte header, its data, zeros to the next block. */
void tar_add(FILE *f, const char *name, const void *data, size_t len);
/* The two zero blocks that end a tar file. */
void tar_end(FILE *f);
/* A 4x4 gray PNG whose pixels all hold v (malloc'd: the caller frees it),
 * *len its bytes: a sample's image that says which sample it is. */
void *tar_test_png(uint8_t v, size_t *len);

#endif
