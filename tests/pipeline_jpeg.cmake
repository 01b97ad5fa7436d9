# The loader on JPEG sources (lib/pipeline/loader_jpeg.c and the folder
# source's PNG/JPEG mix): windowed decodes against full decodes, mixed
# folders exactly once, bad files, determinism and resume; the builder's
# jpeg codec. Fixtures from jpeg_fixture.c (the library's own encoders).
add_library(gpufeed_jpeg_fixture STATIC ${CMAKE_CURRENT_LIST_DIR}/jpeg_fixture.c)
target_link_libraries(gpufeed_jpeg_fixture PUBLIC gpufeed_testutil)
foreach(t window folder determinism)
  gpufeed_add_test(test_loader_jpeg_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_jpeg_${t}.c
    LABELS threaded loader jpeg TIMEOUT 600)
  target_link_libraries(test_loader_jpeg_${t} PRIVATE gpufeed_jpeg_fixture)
endforeach()
# The builder's jpeg codec and JPEG sources, through the CLI.
gpufeed_add_test(test_build_jpeg
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_build_jpeg.c
  LABELS cli jpeg TIMEOUT 300)
target_link_libraries(test_build_jpeg PRIVATE gpufeed_jpeg_fixture)
add_dependencies(test_build_jpeg gpufeed_cli)
# The GPU's share of JPEG samples chosen from the consumer's rate
# (lib/pipeline/jpeg_share.c), against modelled consumers.
gpufeed_add_test(test_jpeg_share
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jpeg_share.c LABELS jpeg)
target_link_libraries(test_jpeg_share PRIVATE m)
# JPEG files without a checksum judged once by a CPU decode read whole, then
# known by their CRC32C (lib/pipeline/jpeg_checked.c).
gpufeed_add_test(test_jpeg_checked
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jpeg_checked.c LABELS jpeg threaded)
