# The loader on JPEG sources (lib/pipeline/loader_jpeg.c and the folder
# source's PNG/JPEG mix): windowed decodes against full decodes, mixed
# folders exactly once, bad files, determinism and resume; the builder's
# jpeg codec. Fixtures from jpeg_fixture.c (the library's own encoders).
add_library(gpufeed_jpeg_fixture STATIC ${CMAKE_CURRENT_LIST_DIR}/jpeg_fixture.c)
target_link_libraries(gpufeed_jpeg_fixture PUBLIC gpufeed_testutil)
foreach(t window folder)
  gpufeed_add_test(test_loader_jpeg_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_jpeg_${t}.c
    LABELS threaded loader jpeg TIMEOUT 600)
  target_link_libraries(test_loader_jpeg_${t} PRIVATE gpufeed_jpeg_fixture)
endforeach()
