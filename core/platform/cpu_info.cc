#include "core/platform/cpu_info.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace shardflow {
namespace {

bool DetectNativeBf16() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  // Leaf 7, sub-leaf 0: EDX bit 22 is AMX-BF16. Sub-leaf 1: EAX bit 5 is AVX512-BF16.
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool amx_bf16 = (edx >> 22) & 1;
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  const bool avx512_bf16 = (eax >> 5) & 1;
  return amx_bf16 || avx512_bf16;
#else
  return false;
#endif
}

}  // namespace

bool CpuHasNativeBf16() {
  // The override is read every time (tests switch it); the processor is asked once.
  const char* v = std::getenv("SHARDFLOW_NATIVE_BF16");
  if (v != nullptr && (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0)) return *v == '1';
  if (v != nullptr && *v != '\0') {
    static const bool warned = [v] {
      std::fprintf(stderr,
                   "warning: SHARDFLOW_NATIVE_BF16='%s' is not 0 or 1; ignored (the processor "
                   "is asked instead)\n",
                   v);
      return true;
    }();
    (void)warned;
  }
  static const bool native = DetectNativeBf16();
  return native;
}

}  // namespace shardflow
