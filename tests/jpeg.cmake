# lib/decode/jpeg.c: conformance against libjpeg-turbo's test images (skips
# without ../shared/data), window decodes against full decodes, and damaged
# or oversized files.
foreach(t test_jpeg_conformance test_jpeg_region test_jpeg_corrupt)
  gpufeed_add_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c TIMEOUT 120
                   LABELS decode jpeg)
endforeach()
# A dataset of jpeg records: the format reader, inspect and verify take it.
gpufeed_add_test(test_jpeg_dataset
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jpeg_dataset.c TIMEOUT 60
  LABELS decode jpeg cli)
add_dependencies(test_jpeg_dataset gpufeed_cli)
