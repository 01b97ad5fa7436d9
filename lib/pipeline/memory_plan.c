/* The printable memory plan (memory_plan.h): a table of a loader's
 * buffers, the same text for the same plan on every machine. */
#include "pipeline/memory_plan.h"

#include "gpu/pool.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Rounds up to a multiple of the power of two a; false on overflow. */
static bool align_up(uint64_t x, uint64_t a, uint64_t *out) {
  uint64_t r;
  if (!gf_add_u64(x, a - 1, &r))
    return false;
  *out = r & ~(a - 1);
  return true;
}

/* Appends to a buffer that counts what it could not hold. */
typedef struct sbuf {
  char *buf;
  size_t cap, len;
} sbuf;

static void put(sbuf *s, const char *fmt, ...) GF_PRINTF(2, 3);
static void put(sbuf *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = s->len < s->cap ? s->cap - s->len : 0;
  int n = vsnprintf(room ? s->buf + s->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    s->len += (size_t)n;
}

/* 1234567 -> "1,234,567", without the locale. */
static const char *grouped(uint64_t v, char out[32]) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  int o = 0;
  for (int i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = tmp[i];
  }
  out[o] = '\0';
  return out;
}

/* Bytes in KiB, MiB or GiB with one decimal, by integer arithmetic so
 * every machine prints the same. */
static const char *human(uint64_t v, char out[32]) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t whole = v, rest = 0, div = 1;
  while (u < 4 && whole >= 1024) {
    u++;
    div <<= 10;
    whole = v >> (10 * u);
  }
  if (u == 0) {
    snprintf(out, 32, "%llu B", (unsigned long long)v);
    return out;
  }
  rest = v & (div - 1);
  /* Tenths, rounded half up: rest * 10 / div, from the top 20 bits of rest
   * so it cannot overflow. */
  int shift = 10 * u > 20 ? 10 * u - 20 : 0;
  uint64_t r = rest >> shift, d = div >> shift;
  uint64_t tenths = (r * 10 + d / 2) / d;
  if (tenths == 10) {
    whole++;
    tenths = 0;
  }
  snprintf(out, 32, "%llu.%llu %s", (unsigned long long)whole,
           (unsigned long long)tenths, unit[u]);
  return out;
}

static void row(sbuf *s, const char *where, const char *item, uint64_t count,
                uint64_t each, uint64_t total, bool show_each) {
  char c[32], e[32], t[32], h[32];
  if (show_each)
    snprintf(c, sizeof c, "%llu", (unsigned long long)count);
  else
    snprintf(c, sizeof c, "-");
  put(s, "%-7s %-26s %6s %15s %17s  %10s\n", where, item, c,
      show_each ? grouped(each, e) : "-", grouped(total, t), human(total, h));
}

/* A row of one of nvJPEG's items, the same for each decoder (the plan's
 * jpeg_gpu_decoders), total bytes in all. */
static void decoder_row(sbuf *s, const gf_memory_plan *p, const char *where,
                        const char *item, uint64_t total) {
  uint32_t k = p->jpeg_gpu_decoders;
  row(s, where, item, k, k ? total / k : 0, total, k != 0);
}

/* The sizing lines: what a sample's place, output and decode scratch
 * follow from. */
static void sizing(sbuf *s, const gf_memory_plan *p) {
  char a[32], b[32], h[32];
  put(s, "sizing  a sample's staging place: %s B (%s)",
      grouped(p->sample_stride, a), human(p->sample_stride, h));
  if (p->stride_configured)
    put(s, ", max_sample_bytes; the largest sample needs %s B",
        grouped(p->largest_decoded, b));
  else
    put(s, ", the largest decoded sample");
  if (p->largest_name[0])
    put(s, ": %s", p->largest_name);
  put(s, "\n");
  if (p->headers_listed)
    put(s,
        "sizing  no image header read: %s samples of a remote folder or "
        "of tar shards, a transform of fixed output size; a sample "
        "decoding past the "
        "staging place fails, named (raise max_sample_bytes)\n",
        grouped(p->headers_listed, a));
  if (p->headers_counted || p->headers_uncounted)
    put(s, "sizing  from the image headers of %s files (%s did not count: "
           "not a PNG or JPEG, unreadable or beyond the limits; they fail "
           "when loaded)\n",
        grouped(p->headers_counted + p->headers_uncounted, a),
        grouped(p->headers_uncounted, b));
  if (!p->out_sample_bytes)
    put(s, "sizing  a sample's output: the staging place itself (no "
           "transform)\n");
  else if (p->out_height)
    put(s, "sizing  a sample's output: %u x %u x %u x %u B = %s B (the "
           "transform's output size)\n",
        p->out_height, p->out_width, p->out_channels, p->out_elem_bytes,
        grouped(p->out_sample_bytes, a));
  else
    put(s, "sizing  a sample's output: at most %s B (its own size, the "
           "staging place x %u B an element; ragged)\n",
        grouped(p->out_sample_bytes, a), p->out_elem_bytes);
  put(s, "sizing  decode scratch: at most %s B (%s) a worker, the largest "
         "sample before conversion, taken when a sample needs it\n",
      grouped(p->scratch_bound, a), human(p->scratch_bound, h));
  if (p->device_slots && p->device_label_bytes)
    put(s, "sizing  a device batch slot: %s B: the batch's input and "
           "output, its parameters and gather list, and its labels (%s B, "
           "int64)\n",
        grouped(p->device_slot_bytes, a), grouped(p->device_label_bytes, b));
  if (p->jpeg_gpu_mode == 1)
    put(s, "sizing  nvJPEG (gpu_decode auto: the JPEG engines only): its "
           "own reservations, a decoder's each (gpu_decoders), made when "
           "they open; the engines' buffers are nvJPEG's, beside them, "
           "planned at what an H200 measured with headroom\n");
  else if (p->jpeg_gpu_mode == 2)
    put(s, "sizing  nvJPEG (gpu_decode all: the JPEG engines, else the GPU "
           "hybrid backend, which takes about 12 B a pixel of a batch's "
           "images a decode state from its device budget): its own "
           "reservations, a decoder's each (gpu_decoders), made when they "
           "open; the engines' buffers as under auto, planned even where "
           "the hybrid backend opens\n");
}

uint64_t gf_memory_plan_device_need(const gf_memory_plan *p) {
  uint64_t slot, need;
  if (!p)
    return 0;
  if (!align_up(p->device_slot_bytes, GF_POOL_DEFAULT_ALIGNMENT, &slot) ||
      !gf_mul_u64(p->device_slots, slot, &need) ||
      need + p->device_loco_bytes < need)
    return UINT64_MAX;
  return need + p->device_loco_bytes;
}

static int plan_product(uint64_t count, uint64_t each, const char *what,
                        uint64_t *out) {
  if (!gf_mul_u64(count, each, out))
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "memory plan: %s: %llu x %llu bytes does not fit 64 bits",
                   what, (unsigned long long)count,
                   (unsigned long long)each);
  return 0;
}

static int plan_sum(uint64_t *acc, uint64_t v, const char *what) {
  if (!gf_add_u64(*acc, v, acc))
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "memory plan: the %s total does not fit 64 bits", what);
  return 0;
}

int gf_memory_plan_format(const gf_memory_plan *p, char *buf, size_t cap) {
  if (!p || (!buf && cap))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_memory_plan_format needs a plan and a buffer (or "
                   "NULL and 0 to measure)");
  uint64_t pinned, outs, tables, fields, reads, scratch, slots, host = 0;
  int rc;
  if ((rc = plan_product(p->pinned_slots, p->pinned_slot_bytes,
                         "pinned staging slots", &pinned)) < 0 ||
      (rc = plan_product(p->output_slots, p->output_slot_bytes, "batch outputs",
                         &outs)) < 0 ||
      (rc = plan_product(p->table_slots, p->table_slot_bytes, "batch tables",
                         &tables)) < 0 ||
      (rc = plan_product(p->field_slots, p->field_slot_bytes, "batch fields",
                         &fields)) < 0 ||
      (rc = plan_product(p->read_buffers, p->read_buffer_bytes, "read buffers",
                         &reads)) < 0 ||
      (rc = plan_product(p->scratch_buffers, p->scratch_buffer_bytes,
                         "decode scratch", &scratch)) < 0 ||
      (rc = plan_product(p->device_slots, p->device_slot_bytes,
                         "device batch slots", &slots)) < 0)
    return rc;
  uint64_t jdev = p->jpeg_gpu_mode ? p->jpeg_gpu_device_bytes : 0;
  uint64_t jpin = p->jpeg_gpu_mode ? p->jpeg_gpu_pinned_bytes : 0;
  uint64_t jeng = p->jpeg_gpu_mode ? p->jpeg_engine_bytes : 0;
  uint64_t jchk = p->jpeg_gpu_mode ? p->jpeg_checked_bytes : 0;
  if ((rc = plan_sum(&host, jpin, "host")) < 0 ||
      (rc = plan_sum(&host, jchk, "host")) < 0 ||
      (rc = plan_sum(&host, pinned, "host")) < 0 ||
      (rc = plan_sum(&host, outs, "host")) < 0 ||
      (rc = plan_sum(&host, tables, "host")) < 0 ||
      (rc = plan_sum(&host, fields, "host")) < 0 ||
      (rc = plan_sum(&host, reads, "host")) < 0 ||
      (rc = plan_sum(&host, p->fetch_bytes, "host")) < 0 ||
      (rc = plan_sum(&host, p->fetch_table_bytes, "host")) < 0 ||
      (rc = plan_sum(&host, p->stream_bytes, "host")) < 0 ||
      (rc = plan_sum(&host, p->stream_table_bytes, "host")) < 0 ||
      (rc = plan_sum(&host, scratch, "host")) < 0 ||
      (rc = plan_sum(&host, p->cache_budget, "host")) < 0)
    return rc;
  uint64_t need = gf_memory_plan_device_need(p);
  if (need == UINT64_MAX)
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "memory plan: device batch slots: %llu x %llu bytes "
                   "(aligned) does not fit 64 bits",
                   (unsigned long long)p->device_slots,
                   (unsigned long long)p->device_slot_bytes);
  uint64_t pool = p->device_pool_bytes ? p->device_pool_bytes : need;
  uint64_t device = pool;
  if ((rc = plan_sum(&device, jdev, "device")) < 0 ||
      (rc = plan_sum(&device, jeng, "device")) < 0)
    return rc;

  sbuf s = {buf, cap, 0};
  put(&s, "%-7s %-26s %6s %15s %17s\n", "memory", "item", "count",
      "bytes each", "bytes total");
  if (p->pinned_slots)
    row(&s, "host", "pinned staging slots", p->pinned_slots,
        p->pinned_slot_bytes, pinned, true);
  if (p->output_slots)
    row(&s, "host", "batch outputs", p->output_slots, p->output_slot_bytes,
        outs, true);
  if (p->table_slots)
    row(&s, "host", "batch tables", p->table_slots, p->table_slot_bytes,
        tables, true);
  if (p->field_slots)
    row(&s, "host", "batch fields", p->field_slots, p->field_slot_bytes, fields,
        true);
  if (p->read_buffers)
    row(&s, "host", "read buffers", p->read_buffers, p->read_buffer_bytes,
        reads, true);
  if (p->fetch_bytes)
    row(&s, "host", "fetch read-ahead", 1, p->fetch_bytes, p->fetch_bytes,
        true);
  if (p->fetch_table_bytes)
    row(&s, "host", "fetch tables", 1, p->fetch_table_bytes,
        p->fetch_table_bytes, true);
  if (p->stream_bytes)
    row(&s, "host", "stream buffer", 1, p->stream_bytes, p->stream_bytes, true);
  if (p->stream_table_bytes)
    row(&s, "host", "stream rings and tables", 1, p->stream_table_bytes,
        p->stream_table_bytes, true);
  if (p->scratch_buffers)
    row(&s, "host", "decode scratch", p->scratch_buffers,
        p->scratch_buffer_bytes, scratch, true);
  if (p->cache_budget)
    row(&s, "host",
        p->cache_pinned ? "sample cache (pinned)"
                        : "sample cache (budget)",
        0, 0, p->cache_budget, false);
  if (jpin)
    decoder_row(&s, p, "host", "nvJPEG pinned budget", jpin);
  if (jchk)
    row(&s, "host", "JPEG files checked (CRC)", p->jpeg_checked,
        jchk / p->jpeg_checked, jchk, true);
  row(&s, "host", "total", 0, 0, host, false);
  if (pool) {
    if (p->device_slots)
      row(&s, "device", "batch slots (in the pool)", p->device_slots,
          p->device_slot_bytes, slots, true);
    if (p->device_loco_bytes)
      row(&s, "device", "loco records (in the pool)", p->device_slots,
          p->device_slots ? p->device_loco_bytes / p->device_slots : 0,
          p->device_loco_bytes, true);
    row(&s, "device", p->device_pool_bytes ? "pool reservation"
                                           : "pool reservation (= slots)",
        0, 0, pool, false);
    if (jdev)
      decoder_row(&s, p, "device", "nvJPEG budget (own pool)", jdev);
    if (jeng)
      decoder_row(&s, p, "device", "JPEG engines (nvJPEG's)", jeng);
    row(&s, "device", "total", 0, 0, device, false);
    if (pool < need) {
      char a[32], b[32];
      put(&s, "device note: the pool (%s bytes) is smaller than its batch "
              "slots need (%s bytes)\n",
          grouped(pool, a), grouped(need, b));
    }
  } else {
    put(&s, "%-7s %-26s %6s %15s %17s  %10s\n", "device", "none (host mode)",
        "-", "-", "0", "0 B");
  }
  if (p->sample_stride)
    sizing(&s, p);
  if (s.len > INT32_MAX)
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "memory plan: the text is too long");
  if (!buf)
    return (int)s.len;
  if (s.len >= cap)
    return gf_fail(-ENOBUFS, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "memory plan: the table needs %zu bytes with its NUL, "
                   "the buffer has %zu",
                   s.len + 1, cap);
  return (int)s.len;
}
