/* What the process itself uses, from /proc. */
#include "common/common.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

uint64_t gf_proc_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%llu %llu", &size, &res) != 2)
      res = 0;
    fclose(f);
  }
  return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t gf_proc_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t gf_proc_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (uint32_t)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}
