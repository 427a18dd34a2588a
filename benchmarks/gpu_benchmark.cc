// GPU benchmark (one run, a printed table; built only with SHARDFLOW_CUDA):
//
// (a) MatMul through a Session against cuBLAS called directly, n = 4096 and 8192, for fp32
//     (exact), TF32 (session: gpu_options.allow_tf32; direct: CUBLAS_COMPUTE_32F_FAST_TF32) and
//     bf16 (bf16 inputs and output, fp32 accumulation, both sides). The session's graph keeps both
//     operands in GPU variables and runs the MatMul as a target, so nothing crosses to the host
//     per step; N steps after warm-up, then one step that fetches a small GPU tensor made after
//     the MatMul, which waits for the GPU's stream (N + 1 products timed). Direct cuBLAS is timed
//     with CUDA events over the same number of products. TFLOP/s = 2 n^3 per product.
// (b) Executor overhead: a chain of 200 element-wise ops (x * 1.0001, + 0.1 alternating) on a
//     [256] float variable on GPU:0, graph optimizer off: microseconds per op per step, with the
//     result fetched every step (a sync per step) and pipelined (targets only, one sync at the
//     end); the same chain on CPU:0 for scale.
//
//   build/bin/gpu_benchmark [--quick]     (--quick: n = 1024 and 2048, fewer steps)
//
// benchmarks/gpu_peer.py measures the same with PyTorch.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "core/platform/status.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

constexpr char kGpu0[] = "/device:GPU:0";

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

#define CHECK_CUDA(expr)                                                                     \
  do {                                                                                       \
    cudaError_t e_ = (expr);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
                   __LINE__, #expr);                                                         \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
#define CHECK_CUBLAS(expr)                                                                   \
  do {                                                                                       \
    cublasStatus_t s_ = (expr);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", static_cast<int>(s_), __FILE__, \
                   __LINE__, #expr);                                                         \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

enum class Precision { kFp32, kTf32, kBf16 };

const char* Name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    default:
      return "bf16";
  }
}

// ---- (a) direct cuBLAS ------------------------------------------------------------------------

struct Timing {
  double seconds = 0;  // for `products` products
  int products = 0;
  std::string note;
  double Tflops(int64_t n) const {
    return products > 0 && seconds > 0 ? 2.0 * n * n * n * products / seconds / 1e12 : 0;
  }
};

// cublasGemmEx on n x n operands filled with a small constant, timed with events: 3 warm-up
// products, one to size the run, then `products` (or enough for ~0.5 s when 0).
Timing DirectCublas(Precision p, int64_t n, int products) {
  const bool bf16 = p == Precision::kBf16;
  const size_t bytes = static_cast<size_t>(n * n) * (bf16 ? 2 : 4);
  void *a, *b, *c;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  // 0x3c bytes: 0.0115 as float (0x3c3c3c3c) and as bfloat16 (0x3c3c).
  CHECK_CUDA(cudaMemset(a, 0x3c, bytes));
  CHECK_CUDA(cudaMemset(b, 0x3c, bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  const cudaDataType type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      p == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float one = 1.0f, zero = 0.0f;
  const int ni = static_cast<int>(n);
  auto gemm = [&] {
    CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b, type, ni, a,
                              type, ni, &zero, c, type, ni, compute, CUBLAS_GEMM_DEFAULT));
  };
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto time = [&](int count) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < count; ++i) gemm();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1000.0;
  };
  time(3);
  if (products <= 0) products = std::clamp(static_cast<int>(0.5 / time(1)), 5, 500);
  Timing t;
  t.products = products;
  t.seconds = time(products);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  return t;
}

// ---- (a) through a session --------------------------------------------------------------------

// a, b: GPU variables of n x n filled with 0.01 (bf16: cast from float); mm = a b as a target;
// sync: a [1] GPU tensor made after mm (control edge), fetched to wait for the stream.
absl::StatusOr<Timing> SessionMatMul(Precision p, int64_t n, int products) {
  Scope root = Scope::NewRootScope();
  Scope g = root.WithDevice(kGpu0);
  auto value = [&](const std::string& name) {
    Output v = ops::Fill(
        g.WithOpName(name + "/fill"),
        ops::Const(root.WithOpName(name + "/dims"),
                   Tensor::FromVector<int32_t>({static_cast<int32_t>(n), static_cast<int32_t>(n)})),
        0.01f);
    if (p == Precision::kBf16) v = ops::Cast(g.WithOpName(name + "/cast"), v, DT_BFLOAT16);
    return Var::Create(g.WithOpName(name), v, /*trainable=*/false);
  };
  Var a = value("a"), b = value("b");
  Output mm = ops::MatMul(g.WithOpName("mm"), a.value(), b.value());
  Output sync = ops::Identity(g.WithOpName("sync").WithControlDependencies(mm),
                              ops::Const(g.WithOpName("one"), Tensor::FromVector<float>({1})));
  Operation init = InitializeAllVariables(root);
  GraphDef def;
  SF_RETURN_IF_ERROR(root.ToGraphDef(&def));
  SessionOptions options;
  // The initial values may be made on the CPU if Fill or Cast has no GPU kernel for them; the
  // MatMul's placement is checked below.
  options.config.set_allow_soft_placement(true);
  options.config.mutable_gpu_options()->set_allow_tf32(p == Precision::kTf32);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &out));
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  SF_RETURN_IF_ERROR(session->Run(trace, {}, {sync.name()}, {}, &out, &metadata));
  Timing t;
  auto placed = metadata.placement().find("mm");
  auto device = DeviceName::Parse(placed == metadata.placement().end() ? "" : placed->second);
  if (!device.ok() || device->type != kDeviceGpu) {
    t.note = "MatMul NOT on the GPU (" +
             (placed == metadata.placement().end() ? std::string("?") : placed->second) + ")";
  }
  // Warm-up: 3 steps and a sync.
  for (int i = 0; i < 3; ++i) SF_RETURN_IF_ERROR(session->Run({}, {}, {"mm"}, &out));
  SF_RETURN_IF_ERROR(session->Run({}, {sync.name()}, {}, &out));
  const auto start = Clock::now();
  for (int i = 0; i < products - 1; ++i) SF_RETURN_IF_ERROR(session->Run({}, {}, {"mm"}, &out));
  SF_RETURN_IF_ERROR(session->Run({}, {sync.name()}, {}, &out));  // one more product, and a sync
  t.seconds = Seconds(start, Clock::now());
  t.products = products;
  // The values: every element is n * 0.01^2 (inputs rounded to the precision).
  SF_RETURN_IF_ERROR(session->Run({}, {mm.name()}, {}, &out));
  auto got = CastTensor(out[0], DT_DOUBLE);
  SF_RETURN_IF_ERROR(got.status());
  const double x = p == Precision::kBf16 ? 0.010009765625 : 0.01;
  const double want = static_cast<double>(n) * x * x;
  const double first = got->data<double>()[0], last = got->data<double>()[n * n - 1];
  const double tol = p == Precision::kFp32 ? 1e-4 : 1e-2;
  if (std::abs(first - want) > tol * want || std::abs(last - want) > tol * want) {
    absl::StrAppend(&t.note, t.note.empty() ? "" : "; ", "WRONG VALUES: ", first, ", ", last,
                    ", want ", want);
  }
  return t;
}

// ---- (b) executor overhead ---------------------------------------------------------------------

struct ChainResult {
  double fetch_each_us = 0;  // per op, result fetched every step
  double pipelined_us = 0;   // per op, targets only and one sync at the end
  std::string note;
};

absl::StatusOr<ChainResult> Chain(const std::string& device, int ops_count, int steps) {
  Scope root = Scope::NewRootScope();
  Scope d = root.WithDevice(device);
  Tensor ones(DT_FLOAT, TensorShape({256}));
  std::fill(ones.data<float>(), ones.data<float>() + 256, 1.0f);
  Var x0 = Var::Create(d.WithOpName("x0"), ops::Const(d.WithOpName("x0/init"), ones), false);
  Output scale = ops::Const(d.WithOpName("scale"), 1.0001f);
  Output shift = ops::Const(d.WithOpName("shift"), 0.1f);
  Output x = x0.value();
  for (int i = 0; i < ops_count; ++i) {
    x = i % 2 == 0 ? ops::Mul(d.WithOpName(absl::StrCat("mul", i)), x, scale)
                   : ops::Add(d.WithOpName(absl::StrCat("add", i)), x, shift);
  }
  Output y = ops::Identity(d.WithOpName("y"), x);
  Operation init = InitializeAllVariables(root);
  GraphDef def;
  SF_RETURN_IF_ERROR(root.ToGraphDef(&def));
  SessionOptions options;
  options.config.mutable_rewrite_options()->set_disable_meta_optimizer(true);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &out));
  for (int i = 0; i < 10; ++i) {
    SF_RETURN_IF_ERROR(session->Run({}, {y.name()}, {}, &out));
    SF_RETURN_IF_ERROR(session->Run({}, {}, {y.node()->name()}, &out));
  }
  ChainResult r;
  // The value: ops_count / 2 rounds of x = x * 1.0001 + 0.1 from 1.
  double want = 1;
  for (int i = 0; i < ops_count; ++i) want = i % 2 == 0 ? want * 1.0001 : want + 0.1;
  SF_RETURN_IF_ERROR(session->Run({}, {y.name()}, {}, &out));
  if (std::abs(out[0].data<float>()[255] - want) > 1e-3 * want) {
    r.note = absl::StrCat("WRONG VALUE ", out[0].data<float>()[255], ", want ", want);
  }
  auto start = Clock::now();
  for (int i = 0; i < steps; ++i) SF_RETURN_IF_ERROR(session->Run({}, {y.name()}, {}, &out));
  r.fetch_each_us = Seconds(start, Clock::now()) / steps / ops_count * 1e6;
  start = Clock::now();
  for (int i = 0; i < steps - 1; ++i) {
    SF_RETURN_IF_ERROR(session->Run({}, {}, {y.node()->name()}, &out));
  }
  SF_RETURN_IF_ERROR(session->Run({}, {y.name()}, {}, &out));
  r.pipelined_us = Seconds(start, Clock::now()) / steps / ops_count * 1e6;
  return r;
}

int Main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
  }
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::printf("gpu_benchmark: no GPU visible to CUDA; nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0, cublas = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  {
    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    CHECK_CUBLAS(cublasGetVersion(h, &cublas));
    CHECK_CUBLAS(cublasDestroy(h));
  }
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::printf("shardflow gpu_benchmark, %s\n", date);
  std::printf("GPU: %s (sm_%d%d, %d SMs, %.1f GiB), driver %d, CUDA runtime %d, cuBLAS %d\n\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.totalGlobalMem / 1073741824.0, driver, runtime, cublas);

  std::printf("(a) MatMul n x n x n: Session (variables on GPU:0, MatMul as a target) vs cuBLAS\n");
  std::printf("%-6s %6s %8s %14s %14s %9s  %s\n", "prec", "n", "products", "session TF/s",
              "cuBLAS TF/s", "ratio", "note");
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{1024, 2048} : std::vector<int64_t>{4096, 8192};
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    for (int64_t n : sizes) {
      Timing direct = DirectCublas(p, n, 0);
      int products = quick ? std::min(direct.products, 20) : direct.products;
      if (quick) direct = DirectCublas(p, n, products);
      auto session = SessionMatMul(p, n, products);
      if (!session.ok()) {
        std::printf("%-6s %6lld %8d %14s %14.1f %9s  session failed: %s\n", Name(p),
                    static_cast<long long>(n), products, "-", direct.Tflops(n), "-",
                    session.status().ToString().c_str());
        continue;
      }
      std::printf("%-6s %6lld %8d %14.1f %14.1f %9.3f  %s\n", Name(p), static_cast<long long>(n),
                  products, session->Tflops(n), direct.Tflops(n),
                  session->Tflops(n) / direct.Tflops(n), session->note.c_str());
      std::fflush(stdout);
    }
  }

  const int kOps = 200, steps = quick ? 50 : 300;
  std::printf(
      "\n(b) executor overhead: a chain of %d element-wise ops on a [256] float tensor "
      "(graph optimizer off), %d steps\n",
      kOps, steps);
  std::printf("%-8s %26s %26s  %s\n", "device", "us/op (fetch every step)",
              "us/op (pipelined, 1 sync)", "note");
  for (const char* device : {kGpu0, "/device:CPU:0"}) {
    auto r = Chain(device, kOps, steps);
    if (!r.ok()) {
      std::printf("%-8s failed: %s\n", device + 8, r.status().ToString().c_str());
      continue;
    }
    std::printf("%-8s %26.2f %26.2f  %s\n", device + 8, r->fetch_each_us, r->pipelined_us,
                r->note.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) { return shardflow::Main(argc, argv); }
