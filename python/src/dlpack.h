/* The DLPack structures gpufeed exports (DLPack 1.0, dmlc/dlpack's
 * include/dlpack/dlpack.h; the layout is the ABI every consumer shares, so
 * it is spelled out here rather than taken from a framework). Only what
 * the export needs. */
#ifndef GFPY_DLPACK_H
#define GFPY_DLPACK_H

#include <stdint.h>

#define GFPY_DLPACK_MAJOR 1
#define GFPY_DLPACK_MINOR 0

typedef struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
} DLDeviceType;

typedef struct {
  int32_t device_type; /* DLDeviceType (a C enum: int-sized) */
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements */
  uint64_t byte_offset;
} DLTensor;

/* The legacy capsule "dltensor". */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* The versioned capsule "dltensor_versioned" (DLPack >= 1.0). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ull << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ull << 1)
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* GFPY_DLPACK_H */
