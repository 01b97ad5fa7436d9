# Warning and sanitizer flags for every C target of the project.
add_library(gpufeed_flags INTERFACE)
target_compile_options(gpufeed_flags INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla -Wundef>)
target_compile_definitions(gpufeed_flags INTERFACE _GNU_SOURCE)
if(GPUFEED_WERROR)
  target_compile_options(gpufeed_flags INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
if(GPUFEED_SANITIZE)
  if(NOT GPUFEED_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "GPUFEED_SANITIZE: use 'address,undefined' or 'thread'")
  endif()
  set(_san -fsanitize=${GPUFEED_SANITIZE} -fno-omit-frame-pointer)
  if(GPUFEED_SANITIZE MATCHES "undefined")
    list(APPEND _san -fno-sanitize-recover=undefined)
  endif()
  target_compile_options(gpufeed_flags INTERFACE $<$<COMPILE_LANGUAGE:C>:${_san}>)
  target_link_options(gpufeed_flags INTERFACE ${_san})
endif()
