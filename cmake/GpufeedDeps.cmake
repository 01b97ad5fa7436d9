# Finds liburing, libzstd, libcurl and libarchive through pkg-config and libpng and
# libjpeg (libjpeg-turbo) through FindPNG and FindJPEG, and stops with the
# Debian package to install when one is missing.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR
    "gpufeed: pkg-config not found. On Debian: apt-get install pkg-config")
endif()

function(gpufeed_require_pc var module debpkg)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR
      "gpufeed: ${module} not found (pkg-config module '${module}'). "
      "On Debian: apt-get install ${debpkg}")
  endif()
endfunction()

gpufeed_require_pc(URING liburing liburing-dev)
gpufeed_require_pc(ZSTD libzstd libzstd-dev)
# The HTTP(S) storage (lib/io/storage_http*.c). The OpenSSL flavour: its
# TLS reads the system's CA store (ca-certificates) by default.
gpufeed_require_pc(CURL libcurl libcurl4-openssl-dev)
# S3's request signing (lib/io/s3_sigv4.c): OpenSSL's SHA-256 and HMAC.
gpufeed_require_pc(CRYPTO libcrypto libssl-dev)
# WebDataset tar shards' header scan (lib/format/tar_scan.c).
gpufeed_require_pc(ARCHIVE libarchive libarchive-dev)
find_package(PNG QUIET)
if(NOT PNG_FOUND)
  message(FATAL_ERROR "gpufeed: libpng not found. On Debian: apt-get install libpng-dev")
endif()
find_package(JPEG QUIET)
if(NOT JPEG_FOUND)
  message(FATAL_ERROR
    "gpufeed: libjpeg not found. On Debian: apt-get install libjpeg62-turbo-dev")
endif()
find_package(Threads REQUIRED)

# gpufeed_deps_dynamic: the libraries as shared objects. The shared
# libgpufeed always links these: Debian's libzstd.a is not built as
# position-independent code, so it cannot go into a shared object.
add_library(gpufeed_deps_dynamic INTERFACE)
target_link_libraries(gpufeed_deps_dynamic INTERFACE
  PkgConfig::URING PkgConfig::ZSTD PkgConfig::CURL PkgConfig::CRYPTO
  PkgConfig::ARCHIVE PNG::PNG JPEG::JPEG m
  Threads::Threads)

# gpufeed_deps: what the static library and the programs link, the same
# shared objects by default or their .a files with GPUFEED_STATIC_DEPS (a
# program that runs where liburing is not installed).
add_library(gpufeed_deps INTERFACE)
if(GPUFEED_STATIC_DEPS)
  foreach(lib uring zstd png16 z jpeg)
    find_library(GPUFEED_STATIC_${lib} NAMES lib${lib}.a REQUIRED)
    target_link_libraries(gpufeed_deps INTERFACE ${GPUFEED_STATIC_${lib}})
  endforeach()
  target_include_directories(gpufeed_deps INTERFACE
    ${URING_INCLUDE_DIRS} ${ZSTD_INCLUDE_DIRS} ${PNG_INCLUDE_DIRS}
    ${JPEG_INCLUDE_DIRS})
  # libcurl stays a shared object even here: Debian ships no libcurl.a
  # (and a static one would pull in OpenSSL, nghttp2, libssh2, GSSAPI...
  # with it), so the static binary still needs libcurl4 installed.
  # libarchive likewise (its .a pulls in every compression library).
  target_link_libraries(gpufeed_deps INTERFACE PkgConfig::CURL PkgConfig::CRYPTO
                        PkgConfig::ARCHIVE m
                        Threads::Threads)
else()
  target_link_libraries(gpufeed_deps INTERFACE gpufeed_deps_dynamic)
endif()
