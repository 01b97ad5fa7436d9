# Reliability (docs/RELIABILITY.md): fault sweeps over the CLI's build and
# verify and over a loader's epochs, the soak program and its smoke run,
# and the CLI under valgrind (opt-in).
gpufeed_add_test(test_fault_sweep_build
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault_sweep_build.c
  TIMEOUT 900 LABELS fault cli)
# The CLI of the test build: the shipped one ignores GPUFEED_FAULT.
add_dependencies(test_fault_sweep_build gpufeed_cli_testing)
set_property(TEST test_fault_sweep_build PROPERTY ENVIRONMENT_MODIFICATION
             "GPUFEED=set:$<TARGET_FILE:gpufeed_cli_testing>")
gpufeed_add_test(test_fault_sweep_load
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault_sweep_load.c
  TIMEOUT 900 LABELS fault loader)
target_link_libraries(test_fault_sweep_load PRIVATE gpufeed_loader_fixture)

# gpufeed_soak [--seconds S] [--device cpu|N] [--seed X]: random loader
# configs for S seconds, checking order, pixels, resume, fds and RSS.
add_executable(gpufeed_soak ${CMAKE_CURRENT_LIST_DIR}/soak.c)
target_link_libraries(gpufeed_soak PRIVATE gpufeed_loader_fixture)
add_test(NAME soak_smoke COMMAND gpufeed_soak --seconds 60 --device cpu --seed 1)
gpufeed_test_props(soak_smoke 600 "soak;threaded")

gpufeed_add_script_test(valgrind_cli SCRIPT valgrind_cli.sh TIMEOUT 1800
                        LABELS valgrind)

# The same sweep in GPU mode, with the CUDA sites: compiled in every build,
# skips (77) without a usable device.
add_test(NAME test_fault_sweep_gpu COMMAND test_fault_sweep_load --gpu)
gpufeed_test_props(test_fault_sweep_gpu 900 "fault;loader;gpu")
