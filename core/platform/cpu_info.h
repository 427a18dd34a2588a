// What the host processor can compute natively, for choices made before any kernel runs (the
// graph optimizer's mixed-precision pass).
#ifndef SHARDFLOW_CORE_PLATFORM_CPU_INFO_H_
#define SHARDFLOW_CORE_PLATFORM_CPU_INFO_H_

namespace shardflow {

// Whether the processor multiplies bfloat16 natively (AVX512-BF16 or AMX-BF16), so that oneDNN's
// bfloat16 kernels beat fp32 ones. SHARDFLOW_NATIVE_BF16=0 or 1 overrides the answer (tests, and
// measuring the emulated path on such a processor).
bool CpuHasNativeBf16();

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_PLATFORM_CPU_INFO_H_
