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
  uint64_t field_slots; /* tar shards' asked fields: a batch's
                           places (batch_size x fields x
                           field_bytes) */
  uint64_t field_slot_bytes;
  uint64_t read_buffers;        /* I/O buffers (all workers) */
  uint64_t read_buffer_bytes;
  uint64_t fetch_bytes;         /* remote source: the read-ahead arena */
  uint64_t fetch_table_bytes;   /* and its tables (positions, reads) */
  uint64_t stream_bytes;        /* streaming shards: the stage's arena */
  uint64_t stream_table_bytes;  /* and its rings, tables, lanes' buffers */
  uint64_t scratch_buffers;     /* decode scratch (all workers) */
  uint64_t scratch_buffer_bytes;
  uint64_t cache_budget;        /* host sample cache, a budget not a buffer */
  uint64_t device_slots;        /* batches in flight on the device */
  uint64_t device_slot_bytes;   /* one transformed batch */
  uint64_t device_loco_bytes;   /* loco records decoded on the GPU: the
                                   block they land in (in the pool; 0:
                                   none) */
  uint64_t device_label_bytes;  /* of which its labels on the device
                                   (printed as a sizing line when set) */
  uint64_t device_pool_bytes;   /* the reservation; 0: what the slots need
                                   (gf_memory_plan_device_need) */
  uint64_t cache_pinned;        /* 1: the cache is pinned as it fills when
                                   a GPU is in use (gf_cache_direct) */
  /* How a sample is sized (printed as "sizing" lines under the table when
   * sample_stride is set; none of it is a further allocation). */
  uint64_t sample_stride;       /* bytes a sample's place in a staging slot */
  uint64_t largest_decoded;     /* the source's largest decoded sample */
  char largest_name[256];       /* folder: the file behind it; "" else */
  uint64_t headers_counted;     /* folder: headers that counted */
  uint64_t headers_uncounted;   /* folder: headers that did not */
  uint64_t headers_listed;      /* remote folder: files sized from the
                                   listing, headers not read */
  uint32_t stride_configured;   /* 1: max_sample_bytes set the stride */
  uint32_t out_height, out_width, out_channels; /* a fixed-size output
                                   (height 0: the output is ragged) */
  uint32_t out_elem_bytes;      /* bytes an output element */
  uint64_t out_sample_bytes;    /* bytes a sample's output (0: identity,
                                   the staging slot is the batch) */
  uint64_t scratch_bound;       /* bytes a worker's decode scratch takes at
                                   most (taken as a sample needs it) */
  /* JPEG on the GPU (gf_gpu_decode): the nvJPEG decoder's own two
   * reservations, beside the pool, made when it opens; mode 1: the JPEG
   * engines only, 2: any backend; 0: none planned (no rows). */
  uint32_t jpeg_gpu_mode;
  uint32_t jpeg_gpu_decoders;     /* decoders, each with its reservations */
  uint64_t jpeg_gpu_device_bytes; /* all the decoders' */
  uint64_t jpeg_gpu_pinned_bytes;
  uint64_t jpeg_engine_bytes;  /* the JPEG engines' buffers, nvJPEG's own
                                  beside the reservations: planned from
                                  measurement, in the device total */
  uint64_t jpeg_checked;       /* files checked once before the engines */
  uint64_t jpeg_checked_bytes; /* (jpeg_checked.h): their table */
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
