/* The printable memory plan of a loader: what its buffers take, as a table
 * (gf_loader_plan prints it; loader_plan.c fills it from the loader's
 * sizes). */
#ifndef GF_PIPELINE_MEMORY_PLAN_H
#define GF_PIPELINE_MEMORY_PLAN_H

#include "common/common.h"

/* Every bounded buffer a loader allocates up front, from its configuration
 * alone (nothing here asks the device), so that two machines given the same
 * configuration print and use the same bytes. Zero counts leave items out. */
typedef struct gf_memory_plan {
  uint64_t pinned_slots;        /* pinned host staging slots */
  uint64_t pinned_slot_bytes;
  uint64_t output_slots;        /* host mode: a batch's transformed output */
  uint64_t output_slot_bytes;
  uint64_t table_slots;         /* a batch's per-sample tables (shapes,
                                   offsets, labels, transform parameters) */
  uint64_t table_slot_bytes;
  uint64_t read_buffers;        /* I/O buffers (all workers) */
  uint64_t read_buffer_bytes;
  uint64_t scratch_buffers;     /* decode scratch (all workers) */
  uint64_t scratch_buffer_bytes;
  uint64_t cache_budget;        /* host sample cache, a budget not a buffer */
  uint64_t device_slots;        /* batches in flight on the device */
  uint64_t device_slot_bytes;   /* one transformed batch */
  uint64_t device_pool_bytes;   /* the reservation; 0: what the slots need
                                   (gf_memory_plan_device_need) */
  uint64_t cache_pinned;        /* 1: the cache is pinned as it fills when
                                   a GPU is in use (gf_cache_direct) */
} gf_memory_plan;

/* Device bytes the batch slots need inside a pool with the default
 * alignment: device_slots * round_up(device_slot_bytes, 256). UINT64_MAX on
 * overflow. */
uint64_t gf_memory_plan_device_need(const gf_memory_plan *p);

/* Prints the plan into buf as a table: count, bytes each and total bytes a
 * row, host and device totals, the same text for the same plan everywhere
 * (no locale, no device query). Returns the length of the text (without
 * the NUL); with buf NULL and cap 0 only measures. Returns -ENOBUFS (buf
 * then holds the text cut short, NUL-terminated, and the message says the
 * length needed), -EOVERFLOW (a total does not fit 64 bits, the item
 * named) or -EINVAL (p NULL, or buf NULL with cap > 0). Any thread. */
int gf_memory_plan_format(const gf_memory_plan *p, char *buf, size_t cap);

#endif /* GF_PIPELINE_MEMORY_PLAN_H */
