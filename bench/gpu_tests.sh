#!/usr/bin/env bash
# The GPU tests on a machine with a GPU, from a build folder made elsewhere
# (run from the repository root; logs in $OUT or ./gpu-logs): every GPU test
# with GPUFEED_REQUIRE_GPU=1, the loader tests in GPU mode, then
# the loader's fault sweep in GPU mode, then compute-sanitizer memcheck and
# racecheck. nvJPEG must be there too (GPUFEED_REQUIRE_NVJPEG=1: the JPEG
# loader test may not skip for want of it).   bash bench/gpu_tests.sh [BUILD]
set -u; OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"; cd "${1:-build-dev}"; export GPUFEED_REQUIRE_GPU=1 GPUFEED_REQUIRE_NVJPEG=1; L=$OUT/gpu_tests.log; : > $L
nvidia-smi -L | tee -a $L
for t in test_gpu_loader test_gpu_loader_jpeg test_gpu_stage_pin test_gpu_pool test_gpu_kernels test_gpu_gather test_gpu_nvjpeg test_cache_pin test_trace test_loader_once test_loader_errors test_loader_order test_loader_lifetime test_loader_plan test_loader_plan_create test_loader_elastic test_loader_resume_identity test_loader_create_errors test_loader_repair_unlocked test_struct_size test_loader_sizes test_loader_info test_loader_release_streams test_loader_read_buffer test_loader_timed; do
  s=$(date +%s.%N); GPUFEED_TEST_TMP=/tmp/gt/$t timeout 300 ./tests/$t >> $L 2>&1; rc=$?
  echo "=== $t rc=$rc ($(echo "$(date +%s.%N) - $s" | awk '{print $1-$3}')s)" | tee -a $L
done
s=$(date +%s.%N); GPUFEED_TEST_TMP=/tmp/gt/sweep timeout 300 ./tests/test_fault_sweep_load --gpu >> $L 2>&1; rc=$?
echo "=== test_fault_sweep_load --gpu rc=$rc ($(echo "$(date +%s.%N) - $s" | awk '{print $1-$3}')s)" | tee -a $L
S=$OUT/sanitizer.log; : > $S
for tool in memcheck racecheck; do
  GPUFEED_TEST_QUICK=1 GPUFEED_TEST_TMP=/tmp/gs/$tool timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 ./tests/test_gpu_loader >> $S 2>&1; echo "=== $tool test_gpu_loader rc=$?" | tee -a $S
done
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/test_gpu_pool >> $S 2>&1; echo "=== memcheck test_gpu_pool rc=$?" | tee -a $S
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/test_gpu_nvjpeg >> $S 2>&1; echo "=== memcheck test_gpu_nvjpeg rc=$?" | tee -a $S
GPUFEED_TEST_TMP=/tmp/gs/jpeg timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/test_gpu_loader_jpeg >> $S 2>&1; echo "=== memcheck test_gpu_loader_jpeg rc=$?" | tee -a $S
GPUFEED_TEST_TMP=/tmp/gs/pin timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/test_gpu_stage_pin >> $S 2>&1; echo "=== memcheck test_gpu_stage_pin rc=$?" | tee -a $S
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 ./tests/test_gpu_kernels --quick >> $S 2>&1; echo "=== racecheck test_gpu_kernels rc=$?" | tee -a $S
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 ./tests/test_gpu_gather --quick >> $S 2>&1; echo "=== $tool test_gpu_gather rc=$?" | tee -a $S
done
grep -E "ERROR SUMMARY|FAIL|CHECK failed" $L $S | head -20
