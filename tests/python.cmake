# The Python package's tests (python/tests, pytest): one ctest test a file,
# python_<file>, run by /usr/bin/python3 against build/python (the
# extension as built). They skip (77) without pytest, numpy or torch, and
# test_gpu.py without a CUDA device torch can use (GPUFEED_REQUIRE_GPU=1
# makes that a failure). Not registered in sanitizer builds: the extension
# is loaded by an interpreter that is not instrumented, and ASan/TSan must
# be the first runtime of a process (the C tests cover the library there).
if(GPUFEED_PYTHON AND NOT GPUFEED_SANITIZE)
  file(GLOB _gf_py_tests CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/python/tests/test_*.py)
  foreach(f ${_gf_py_tests})
    get_filename_component(stem ${f} NAME_WE)
    string(REGEX REPLACE "^test_" "" stem ${stem})
    add_test(NAME python_${stem}
             COMMAND bash ${CMAKE_SOURCE_DIR}/python/tests/run_pytest.sh
                     ${CMAKE_BINARY_DIR} test_${stem}.py)
    set(_labels python)
    if(stem STREQUAL "threads")
      list(APPEND _labels threaded)
    endif()
    if(stem MATCHES "^gpu")
      list(APPEND _labels gpu)
    endif()
    gpufeed_test_props(python_${stem} 300 "${_labels}")
  endforeach()
endif()

# The consumer calls the binding stands on (gf_loader_next_timed,
# gf_loader_batch_wait_on), tested in C so that the sanitizers see them.
gpufeed_add_test(test_loader_timed
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_timed.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_loader_timed PRIVATE gpufeed_loader_fixture)
