/* The printable memory plan (gf_memory_plan_format in lib/pipeline/memory_plan.h): the
 * exact table for a GPU loader's plan (bytes grouped by hand, not by the
 * locale, so every machine prints the same), host mode, a pool smaller
 * than its slots, an explicit reservation; measuring, a buffer too small
 * (-ENOBUFS, cut and terminated), totals that overflow (-EOVERFLOW naming
 * the item) and bad arguments. */
#include "testutil.h"

#include "pipeline/memory_plan.h"

#include <locale.h>
#include <string.h>

#define MiB (1ull << 20)

static const char want_gpu[] =
    "memory  item                        count      bytes each       bytes total\n"
    "host    pinned staging slots            2      38,535,168        77,070,336    73.5 MiB\n"
    "host    read buffers                   64       4,194,304       268,435,456   256.0 MiB\n"
    "host    decode scratch                  8       1,048,576         8,388,608     8.0 MiB\n"
    "host    sample cache (budget)           -               -     2,147,483,648     2.0 GiB\n"
    "host    total                           -               -     2,501,378,048     2.3 GiB\n"
    "device  batch slots (in the pool)       2      19,267,584        38,535,168    36.8 MiB\n"
    "device  pool reservation (= slots)      -               -        38,535,168    36.8 MiB\n"
    "device  total                           -               -        38,535,168    36.8 MiB\n";

static const char want_host[] =
    "memory  item                        count      bytes each       bytes total\n"
    "host    pinned staging slots            2           1,000             2,000     2.0 KiB\n"
    "host    total                           -               -             2,000     2.0 KiB\n"
    "device  none (host mode)                -               -                 0         0 B\n";

static bool same_text(const char *got, const char *want) {
  if (strcmp(got, want) == 0)
    return true;
  fprintf(stderr, "got:\n%s\nwanted:\n%s\n", got, want);
  return false;
}

int main(void) {
  /* The locale must not change a byte of it. */
  setlocale(LC_ALL, "");
  char buf[2048];
  gf_memory_plan p = {.pinned_slots = 2,
                      .pinned_slot_bytes = 38535168,
                      .read_buffers = 64,
                      .read_buffer_bytes = 4 * MiB,
                      .scratch_buffers = 8,
                      .scratch_buffer_bytes = MiB,
                      .cache_budget = 2048 * MiB,
                      .device_slots = 2,
                      .device_slot_bytes = 19267584};
  int n = gf_memory_plan_format(&p, buf, sizeof buf);
  CHECK(n == (int)strlen(want_gpu));
  CHECK(same_text(buf, want_gpu));
  printf("%s", buf);
  CHECK(gf_memory_plan_device_need(&p) == 38535168);

  /* Measure, then a buffer one byte short: cut, terminated, -ENOBUFS. */
  CHECK(gf_memory_plan_format(&p, NULL, 0) == n);
  char small[900];
  CHECK((size_t)n < sizeof small);
  memset(small, 'x', sizeof small);
  CHECK_ERR(gf_memory_plan_format(&p, small, (size_t)n), -ENOBUFS);
  CHECK(strlen(small) == (size_t)n - 1);
  CHECK(strncmp(small, want_gpu, (size_t)n - 1) == 0);
  char need[64];
  snprintf(need, sizeof need, "needs %d bytes", n + 1);
  CHECK(strstr(gf_last_error()->message, need) != NULL);
  CHECK(gf_memory_plan_format(&p, small, (size_t)n + 1) == n);

  /* Host mode. */
  gf_memory_plan h = {.pinned_slots = 2, .pinned_slot_bytes = 1000};
  /* (2000 bytes = 1.95 KiB, rounded to 2.0.) */
  CHECK(gf_memory_plan_format(&h, buf, sizeof buf) == (int)strlen(want_host));
  CHECK(same_text(buf, want_host));

  /* Slot sizes are rounded up to the pool's alignment; a reservation
   * smaller than that gets a note, a larger one is shown as given. */
  gf_memory_plan d = {.device_slots = 3, .device_slot_bytes = 1000,
                      .device_pool_bytes = 3000};
  CHECK(gf_memory_plan_device_need(&d) == 3072);
  CHECK(gf_memory_plan_format(&d, buf, sizeof buf) > 0);
  CHECK(strstr(buf, "device  pool reservation ") != NULL);
  CHECK(strstr(buf, "device note: the pool (3,000 bytes) is smaller than its "
                    "batch slots need (3,072 bytes)\n") != NULL);
  d.device_pool_bytes = 5 * MiB;
  CHECK(gf_memory_plan_format(&d, buf, sizeof buf) > 0);
  CHECK(strstr(buf, "note") == NULL);
  CHECK(strstr(buf, "device  total                           -               "
                    "-         5,242,880     5.0 MiB\n") != NULL);

  /* Overflow, named. */
  gf_memory_plan o = {.pinned_slots = 1ull << 40, .pinned_slot_bytes = 1ull << 30};
  CHECK_ERR(gf_memory_plan_format(&o, buf, sizeof buf), -EOVERFLOW);
  CHECK(strstr(gf_last_error()->message, "pinned staging slots") != NULL);
  o = (gf_memory_plan){.pinned_slots = 1, .pinned_slot_bytes = 1,
                       .cache_budget = UINT64_MAX};
  CHECK_ERR(gf_memory_plan_format(&o, buf, sizeof buf), -EOVERFLOW);
  CHECK(strstr(gf_last_error()->message, "host total") != NULL);
  o = (gf_memory_plan){.device_slots = 1, .device_slot_bytes = UINT64_MAX};
  CHECK(gf_memory_plan_device_need(&o) == UINT64_MAX);
  CHECK_ERR(gf_memory_plan_format(&o, buf, sizeof buf), -EOVERFLOW);
  CHECK(strstr(gf_last_error()->message, "device batch slots") != NULL);
  /* The largest numbers print whole. */
  o = (gf_memory_plan){.cache_budget = UINT64_MAX};
  CHECK(gf_memory_plan_format(&o, buf, sizeof buf) > 0);
  CHECK(strstr(buf, "18,446,744,073,709,551,615  16777216.0 TiB\n") != NULL);

  CHECK_ERR(gf_memory_plan_format(NULL, buf, sizeof buf), -EINVAL);
  CHECK_ERR(gf_memory_plan_format(&p, NULL, 10), -EINVAL);
  return gf_test_finish();
}
