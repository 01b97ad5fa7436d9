# gpufeed_cuda_architectures(): sets CMAKE_CUDA_ARCHITECTURES when the user
# set none (-DCMAKE_CUDA_ARCHITECTURES or CUDAARCHS win), from
# GPUFEED_CUDA_ARCHITECTURES:
#   auto     the GPUs of this machine, as nvidia-smi reports their compute
#            capability (code for them alone: a build for a GPU the machine
#            has compiles one architecture, not five); without a GPU, PTX
#            for compute_75, which the driver compiles at first use for
#            any GPU from sm_75 on: a build host without a GPU still makes
#            a library that runs on every supported GPU, and a user without
#            one does not wait for machine code nothing will run.
#   shipped  machine code for every architecture a release ships (CI
#            builds it once a run with warnings as errors):
#              75 Turing (T4), 80 Ampere (A100), 86 Ampere (RTX 30xx, A10),
#              89 Ada (L4, RTX 40xx), 90 Hopper (H100/H200).
#   else     taken as CMAKE_CUDA_ARCHITECTURES itself (e.g. "80;90").
# Each kernel file is its own object, so make -jN compiles them in
# parallel; with several architectures, nvcc's --threads compiles a file's
# architectures in parallel too (GpufeedFlags.cmake).
set(GPUFEED_SHIPPED_CUDA_ARCHITECTURES 75 80 86 89 90)

function(gpufeed_cuda_architectures)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    # The first configure caches the value it chose as the user's: only a
    # value this function did not set is the user's own.
    if(NOT DEFINED GPUFEED_CUDA_ARCHS_CHOSEN_
       OR NOT "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${GPUFEED_CUDA_ARCHS_CHOSEN_}")
      message(STATUS "gpufeed: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}$ENV{CUDAARCHS} (set by the user)")
      return()
    endif()
  endif()
  set(mode "${GPUFEED_CUDA_ARCHITECTURES}")
  if(mode STREQUAL "shipped")
    set(archs ${GPUFEED_SHIPPED_CUDA_ARCHITECTURES})
    set(why "every shipped architecture")
  elseif(mode STREQUAL "auto" OR mode STREQUAL "")
    set(archs "")
    find_program(GPUFEED_NVIDIA_SMI nvidia-smi)
    if(GPUFEED_NVIDIA_SMI)
      execute_process(COMMAND ${GPUFEED_NVIDIA_SMI} --query-gpu=compute_cap
                              --format=csv,noheader
                      OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET
                      TIMEOUT 20)
      if(rc EQUAL 0)
        string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
        foreach(c ${caps})
          string(REPLACE "." "" a "${c}")
          list(APPEND archs ${a})
        endforeach()
        list(REMOVE_DUPLICATES archs)
      endif()
    endif()
    if(archs)
      set(why "this machine's GPUs (nvidia-smi)")
    else()
      set(archs 75-virtual)
      set(why "no GPU found: PTX that the driver compiles for any GPU from sm_75 at first use; -DGPUFEED_CUDA_ARCHITECTURES=shipped builds machine code for ${GPUFEED_SHIPPED_CUDA_ARCHITECTURES}")
    endif()
  else()
    set(archs ${mode})
    set(why "GPUFEED_CUDA_ARCHITECTURES")
  endif()
  message(STATUS "gpufeed: CUDA architectures ${archs} (${why})")
  set(CMAKE_CUDA_ARCHITECTURES "${archs}" CACHE STRING "CUDA architectures" FORCE)
  set(GPUFEED_CUDA_ARCHS_CHOSEN_ "${archs}" CACHE INTERNAL "")
endfunction()
