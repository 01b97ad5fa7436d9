# The library's layers (lib/CMakeLists.txt): every #include of lib/ and
# kernels/ points down, no two units include each other, and (from nm of
# the built static library) no two object files call each other.
add_test(NAME check_layers
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${CMAKE_SOURCE_DIR}
          $<TARGET_FILE:gpufeed_static>)
gpufeed_test_props(check_layers 120 layers)
