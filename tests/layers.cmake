# The library's layers (lib/CMakeLists.txt): every #include of lib/ and
# kernels/ points down, no two files include each other's headers, and
# (from nm of the built object files) no two object files call each other.
add_test(NAME check_layers
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${CMAKE_SOURCE_DIR}
          "${GPUFEED_OBJECTS}")
gpufeed_test_props(check_layers 120 layers)
