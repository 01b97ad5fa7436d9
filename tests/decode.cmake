# lib/decode: the codecs (raw, png, zstd, gradzstd) and channel conversion.
foreach(t test_codec_roundtrip test_codec_corrupt test_codec_photos
          test_pngsuite)
  gpufeed_add_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c TIMEOUT 120
                   LABELS decode)
endforeach()
