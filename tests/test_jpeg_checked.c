/* The table of JPEG files judged good by a CPU decode read whole, before
 * the GPU's JPEG engines may take them (lib/pipeline/jpeg_checked.h):
 *   - a file recorded good is known by its CRC32C, and only by it (its
 *     bytes changed: another CRC32C, not known);
 *   - a file judged bad is forgotten (judged again when met again), and so
 *     is a good one judged bad later;
 *   - an index beyond the table is never known nor recorded; a table of 0
 *     or more than GF_JPEG_CHECKED_MAX samples is refused; a freed one
 *     knows nothing;
 *   - four threads recording and reading at once: every answer one of the
 *     verdicts recorded for that CRC32C, the counts exact.
 * That the decode's verdict is a full decode's (a window read on to the
 * end marker) is test_jpeg_corrupt's and fuzz_jpeg's; that the engines
 * never get a damaged file under auto, test_gpu_loader_jpeg's. */
#include "pipeline/jpeg_checked.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  gf_jpeg_checked *t;
  uint32_t k;
  int wrong;
} job;

/* Thread k: sample 10 + k good (CRC32C 0x1000 + k), then read back; sample
 * 20 judged bad over and over; sample 30 shared: good with CRC32C 7. */
static void *hammer(void *arg) {
  job *j = arg;
  for (int i = 0; i < 1000; i++) {
    gf_jpeg_checked_record(j->t, 10 + j->k, 0x1000 + j->k, true);
    if (!gf_jpeg_checked_known(j->t, 10 + j->k, 0x1000 + j->k))
      j->wrong++;
    gf_jpeg_checked_record(j->t, 20, 5, false);
    if (gf_jpeg_checked_known(j->t, 20, 5))
      j->wrong++;
    gf_jpeg_checked_record(j->t, 30, 7, true);
    if (gf_jpeg_checked_known(j->t, 30, 8))
      j->wrong++;
  }
  return NULL;
}

int main(void) {
  gf_jpeg_checked t;
  CHECK_ERR(gf_jpeg_checked_init(&t, 0), -EINVAL);
  CHECK_ERR(gf_jpeg_checked_init(&t, GF_JPEG_CHECKED_MAX + 1), -EINVAL);
  CHECK(gf_jpeg_checked_bytes(1000) == 8000);
  CHECK_OK(gf_jpeg_checked_init(&t, 40));

  /* Nothing known at first, not even CRC32C 0. */
  for (uint64_t i = 0; i < 40; i++)
    CHECK(!gf_jpeg_checked_known(&t, i, 0));
  gf_jpeg_checked_record(&t, 0, 0xdeadbeef, true);
  CHECK(gf_jpeg_checked_known(&t, 0, 0xdeadbeef));
  CHECK(!gf_jpeg_checked_known(&t, 0, 0xdeadbeee)); /* changed bytes */
  CHECK(!gf_jpeg_checked_known(&t, 1, 0xdeadbeef)); /* another sample */
  CHECK(t.checks == 1 && t.refused == 0);
  gf_jpeg_checked_record(&t, 2, 0, true); /* CRC32C 0 is a CRC32C too */
  CHECK(gf_jpeg_checked_known(&t, 2, 0));

  /* Bad: not known; a good file judged bad later is forgotten. */
  gf_jpeg_checked_record(&t, 3, 0x1234, false);
  CHECK(!gf_jpeg_checked_known(&t, 3, 0x1234));
  gf_jpeg_checked_record(&t, 0, 0xdeadbeef, false);
  CHECK(!gf_jpeg_checked_known(&t, 0, 0xdeadbeef));
  CHECK(t.checks == 2 && t.refused == 2);
  /* Changed and good again: the new bytes known, not the old. */
  gf_jpeg_checked_record(&t, 0, 0xcafe, true);
  CHECK(gf_jpeg_checked_known(&t, 0, 0xcafe));
  CHECK(!gf_jpeg_checked_known(&t, 0, 0xdeadbeef));

  /* Beyond the table. */
  gf_jpeg_checked_record(&t, 40, 1, true);
  CHECK(!gf_jpeg_checked_known(&t, 40, 1));
  CHECK(t.checks == 3);

  /* Four threads at once. */
  pthread_t th[4];
  job jobs[4];
  uint64_t c0 = t.checks, r0 = t.refused;
  for (uint32_t k = 0; k < 4; k++) {
    jobs[k] = (job){&t, k, 0};
    CHECK(pthread_create(&th[k], NULL, hammer, &jobs[k]) == 0);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(th[k], NULL);
    CHECK(jobs[k].wrong == 0);
  }
  CHECK(t.checks - c0 == 4 * 2000 && t.refused - r0 == 4 * 1000);
  for (uint32_t k = 0; k < 4; k++)
    CHECK(gf_jpeg_checked_known(&t, 10 + k, 0x1000 + k));
  CHECK(gf_jpeg_checked_known(&t, 30, 7) && !gf_jpeg_checked_known(&t, 20, 5));

  gf_jpeg_checked_free(&t);
  CHECK(!gf_jpeg_checked_known(&t, 30, 7));
  gf_jpeg_checked_record(&t, 30, 7, true); /* nothing to write to */
  return gf_test_finish();
}
