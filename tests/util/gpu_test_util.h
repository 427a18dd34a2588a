// What the GPU tests (tests/gpu/) share: whether this build and machine can run them.
//
//   TEST(GpuSomething, Works) {
//     SF_SKIP_WITHOUT_GPU("[gpu device]");
//     ...
//   }
//
// The answer comes from the CUDA runtime, not from a session, so the first GPU device of the
// process is made by the first test that wants one (a test may set the allocator's limit that
// way). With a GPU the tests run, and fail if a session does not list it.
#ifndef SHARDFLOW_TESTS_UTIL_GPU_TEST_UTIL_H_
#define SHARDFLOW_TESTS_UTIL_GPU_TEST_UTIL_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#ifdef SHARDFLOW_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace shardflow {
namespace test {

// Empty when the CUDA runtime sees a GPU; else why the GPU tests are skipped.
inline const std::string& NoGpuReason() {
  static const std::string* reason = [] {
#ifdef SHARDFLOW_HAVE_CUDA
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      return new std::string(
          absl::StrCat("no GPU device: cudaGetDeviceCount: ", cudaGetErrorString(e),
                       " (no driver or no GPU); skipped"));
    }
    if (count == 0) return new std::string("no GPU device: CUDA sees none; skipped");
    return new std::string();
#else
    return new std::string(
        "no GPU device: built without CUDA (cmake -DSHARDFLOW_CUDA=ON needs the CUDA toolkit); "
        "skipped");
#endif
  }();
  return *reason;
}

}  // namespace test
}  // namespace shardflow

// Skips the test, with `tag` and the reason, when no GPU can be used.
#define SF_SKIP_WITHOUT_GPU(tag)                                      \
  do {                                                                \
    if (!::shardflow::test::NoGpuReason().empty())                    \
      GTEST_SKIP() << tag << " " << ::shardflow::test::NoGpuReason(); \
  } while (0)

#endif  // SHARDFLOW_TESTS_UTIL_GPU_TEST_UTIL_H_
