# lib/decode: the codecs (raw, png, zstd, gradzstd, loco) and channel
# conversion.
foreach(t test_codec_roundtrip test_codec_corrupt test_codec_photos
          test_codec_loco test_pngsuite test_decode_filtered)
  gpufeed_add_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c TIMEOUT 120
                   LABELS decode)
endforeach()
