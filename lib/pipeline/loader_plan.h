/* The loader's sizes: one function resolves what every buffer of a loader
 * takes, from the configuration and the source, and both gf_loader_create
 * (which allocates exactly that) and gf_loader_plan (which prints it) call
 * it. Private to lib/pipeline (and the tests that hold create to the plan).
 */
#ifndef GF_PIPELINE_LOADER_PLAN_H
#define GF_PIPELINE_LOADER_PLAN_H

/* The decoded bytes a sample of a remote folder may take when its headers
 * are not read (gf_loader_config.max_sample_bytes unset): 16 MiB, a
 * 2560 x 2048 RGB image. */
#define GF_REMOTE_FOLDER_SAMPLE_BYTES (16ull << 20)

#include "common/common.h"
#include "pipeline/memory_plan.h"
#include "pipeline/source.h"
#include "pipeline/stream.h"

/* What a loader allocates, and why threads and prefetch are what they are.
 * Every byte count is what one allocation asks for. */
typedef struct gf_loader_sizes {
  /* From the config and the source. */
  uint64_t stride;        /* bytes a sample in a slot */
  uint64_t stored_cap;    /* bytes a read buffer entry (widened for
                             O_DIRECT when direct_align is set) */
  uint64_t out_cap;       /* output bytes a batch */
  bool identity;          /* the transform changes nothing */
  uint32_t direct_align;  /* O_DIRECT applies with this alignment; 0: not */
  /* The source's largest samples (source_shapes.h), behind stride. */
  uint64_t max_decoded;   /* the largest decoded sample (the stride unless
                             max_sample_bytes sets it higher) */
  uint64_t max_index;     /* folder: the file that needs it; else
                             GF_NO_INDEX */
  uint64_t max_native;    /* the largest sample before conversion: bounds
                             a worker's decode scratch */
  uint64_t headers_counted, headers_uncounted; /* folder: headers read */
  uint64_t headers_listed; /* remote folder sized without reading its
                              headers: its files (listing sizes) */
  char largest_name[256]; /* folder: the file behind max_decoded */
  uint32_t out_channels;  /* the most channels an output sample has */
  bool loco;              /* GPU mode, a dataset with loco records: the
                             GPU decodes them */
  bool raw_only;          /* a dataset whose records are all raw: loading
                             one is a read, no decoding */
  /* From the machine (autotune) unless the config sets them. */
  uint32_t threads;       /* workers, each with one read buffer */
  uint32_t prefetch;
  uint32_t slots;         /* batch slots (staging_slots, else prefetch) */
  uint32_t queue_depth;   /* io_queue_depth, or autotune's when it is 0 */
  uint32_t chunk;         /* read-buffer entries a worker: its reads in
                             flight */
  /* One of each, per slot or per worker. */
  uint64_t slot_bytes;        /* a slot's pixels: batch_size * stride (in
                                 GPU mode the stage's staging slot) */
  uint64_t slot_out_bytes;    /* host mode, a transform that changes
                                 something: a slot's output; else 0 */
  uint64_t slot_table_bytes;  /* a slot's per-sample tables */
  uint32_t nfields;           /* tar shards: the asked fields (0: none) */
  uint64_t field_bytes;       /* the bound on each */
  uint64_t slot_field_bytes;  /* a slot's field places: batch_size *
                                 nfields * field_bytes */
  uint64_t read_buffer_bytes; /* a worker's read buffer (whole pages; 0
                                 for a remote source: the fetch stage
                                 reads) */
  bool remote;                /* the source's storage is remote: the fetch
                                 stage reads ahead (fetch.h) */
  uint64_t fetch_budget;      /* its arena */
  uint32_t fetch_positions;   /* positions it plans ahead */
  uint32_t fetch_requests;    /* reads in flight */
  uint64_t fetch_table_bytes; /* its tables */
  bool stream;                /* the source comes as a stream: the
                                 streaming stage reads it (stream.h) */
  uint64_t stream_arena;      /* its arena */
  uint64_t stream_table_bytes; /* its tables, rings and lanes' buffers */
  uint64_t device_slot_bytes; /* GPU: pool bytes one slot needs */
  uint64_t device_loco_bytes; /* GPU: the block loco records land in */
  uint64_t device_pool_bytes; /* GPU: the pool's reservation (the config's,
                                 or at least what the slots need) */
  uint64_t cache_bytes;       /* the sample cache's budget (filled lazily) */
  char tuning[256];           /* how threads and prefetch were chosen */
  /* JPEG on the GPU (gf_gpu_decode): 0 not planned (why says why), 1 the
   * JPEG engines only (gpu_decode auto), 2 any backend (all); the
   * decoder's two reservations, made when it opens. */
  uint64_t jpeg_samples;      /* the source's JPEG samples (those whose
                                 header counted, for a folder) */
  bool unchecked;             /* the source's samples carry no checksum
                                 (an image folder) */
  uint64_t jpeg_checked;      /* gpu_decode auto, unchecked: samples of the
                                 check table (jpeg_checked.h); 0: none */
  uint32_t jpeg_gpu_mode;
  uint32_t jpeg_gpu_decoders; /* decoders opened at once (gpu_decoders) */
  uint64_t jpeg_gpu_device_bytes, jpeg_gpu_pinned_bytes; /* all of them */
  uint64_t jpeg_engine_bytes; /* nvJPEG's own beside them, all decoders:
                                 planned, not reserved
                                 (GF_NVJPEG_ENGINE_BYTES each) */
  char jpeg_gpu_why[256];
} gf_loader_sizes;

/* Sizes a loader. cfg: resolved (gf_loader__resolve_config); gpu: whether
 * it runs in GPU mode. Reads the source's largest sample sizes, the online
 * cores and MemAvailable (autotune). Returns 0, or -EINVAL
 * (max_sample_bytes below the largest sample, a transform whose output
 * overflows) with context. Any thread. */
int gf_loader_size(const gf_loader_config *cfg, gf_source *src, bool gpu,
                   gf_loader_sizes *out);

/* The streaming stage's config for a loader with config c and sizes z
 * over stream source src (takers from z's workers and chunk). Returns 0
 * or the source's error. */
int gf_loader_stream_config(const gf_loader_config *c, const gf_loader_sizes *z,
                            const gf_source *src, gf_stream_config *out);

/* The memory plan of a loader sized by z (gpu: as given to
 * gf_loader_size). */
void gf_loader_sizes_plan(const gf_loader_config *cfg,
                          const gf_loader_sizes *z, bool gpu,
                          gf_memory_plan *p);

/* What create really allocated, summed at the allocation sites (for the
 * test that holds create to the plan). */
typedef struct gf_loader_allocs {
  uint32_t slots, read_buffers;
  uint64_t slot_bytes;        /* host-mode slot pixels, all slots */
  uint64_t slot_out_bytes;    /* host-mode outputs, all slots */
  uint64_t slot_table_bytes;  /* per-sample tables, all slots */
  uint64_t slot_field_bytes;  /* field places, all slots */
  uint64_t read_buffer_bytes; /* all workers */
  uint64_t stage_in_bytes;    /* GPU: asked of the stage a slot */
  uint64_t stage_slots;       /* GPU: slots asked of the stage */
  uint64_t jpeg_gpu_device_bytes; /* GPU: nvJPEG's reservations, when its */
  uint64_t jpeg_gpu_pinned_bytes; /* decoder opened (else 0) */
  uint64_t jpeg_checked_bytes;    /* its check table (else 0) */
  uint64_t fetch_bytes;  /* remote: the fetch stage's arena and tables */
  uint64_t fetch_budget; /* of which its arena */
  uint64_t stream_bytes; /* streaming: the stage's arena and tables */
} gf_loader_allocs;

/* Fills *out with l's allocations. Any thread. */
void gf_loader_allocated(const gf_loader *l, gf_loader_allocs *out);

/* The memory plan of cfg as gf_loader_plan prints it, with the sizes
 * behind it (z may be NULL). Returns 0 or the error gf_loader_plan would. */
int gf_loader_plan_get(const gf_loader_config *cfg, gf_memory_plan *p,
                       gf_loader_sizes *z);

#endif /* GF_PIPELINE_LOADER_PLAN_H */
