/* The bench's CUDA helpers in a build without CUDA: no device, ever. */
#ifndef GPUFEED_HAVE_CUDA
#include "gpu/cudautil.h"

int gf_gpu_init(int32_t device) {
  (void)device;
  return GF_ENODEVICE;
}
int gf_gpu_stream_create(int32_t device, void **stream) {
  (void)device;
  *stream = NULL;
  return GF_ENODEVICE;
}
void gf_gpu_stream_destroy(void *stream) { (void)stream; }
int gf_gpu_stream_sync(void *stream) {
  (void)stream;
  return GF_ENODEVICE;
}
int gf_gpu_event_create(int32_t device, void **ev) {
  (void)device;
  *ev = NULL;
  return GF_ENODEVICE;
}
void gf_gpu_event_destroy(void *ev) { (void)ev; }
int gf_gpu_event_record(void *ev, void *stream) {
  (void)ev, (void)stream;
  return GF_ENODEVICE;
}
int gf_gpu_event_wait(void *ev) {
  (void)ev;
  return GF_ENODEVICE;
}
int gf_gpu_spin(void *stream, double ms) {
  (void)stream, (void)ms;
  return GF_ENODEVICE;
}
int gf_gpu_h2d_probe(int32_t device, uint64_t bytes, int reps, double *gbps) {
  (void)device, (void)bytes, (void)reps;
  *gbps = 0;
  return GF_ENODEVICE;
}
#endif
