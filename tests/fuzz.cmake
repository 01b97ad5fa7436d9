# Fuzz targets (tests/fuzz/): one per parser of untrusted bytes. Here they
# are plain programs (replay.c's main) that ctest runs over the checked-in
# seed corpus and every crash regression, under whatever sanitizers the
# build has. .ci/fuzz builds the same sources with clang and libFuzzer and
# fuzzes them for a bounded time (docs/RELIABILITY.md).
set(_fz ${CMAKE_CURRENT_LIST_DIR}/fuzz)
foreach(t dataset png jpeg jpeg_header zstd loco labels loader_state
        sampler_state http_reply aws_ini s3_xml aws_creds tar_scan wds_index
        wds_braces wds_spec wds_json wds_stream wds_sums)
  set(_labels fuzz)
  if(t STREQUAL "loader_state")
    list(APPEND _labels threaded)
  endif()
  gpufeed_add_test(fuzz_${t}_replay
    SOURCES ${_fz}/fuzz_${t}.c ${_fz}/replay.c
    ARGS ${_fz}/corpus/fuzz_${t} ${_fz}/regressions/fuzz_${t}
    TIMEOUT 300 LABELS ${_labels})
endforeach()

# Writes the seed corpora (tests/fuzz/seeds.c says how); not a test.
add_executable(gpufeed_fuzz_seeds ${_fz}/seeds.c)
target_link_libraries(gpufeed_fuzz_seeds PRIVATE gpufeed_testutil)
