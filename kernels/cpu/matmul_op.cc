// MatMul on CPU: float through a GEMM entry point (kernels/cpu/sgemm.h) or, marked for
// bfloat16 products, a oneDNN bf16 matmul primitive (Note [bfloat16 matmul]); bfloat16 through a
// oneDNN matmul primitive (created once per shape and cached in the kernel); double through Eigen.
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/fused_ops.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/gemm_loop.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/onednn_util.h"
#include "kernels/cpu/sgemm.h"
#include "oneapi/dnnl/dnnl.h"

namespace shardflow {
namespace {

// Validates shapes and allocates the output; false after setting an error.
bool PrepareMatMul(OpKernelContext* ctx, bool ta, bool tb, MatMulDims* dims, Tensor** out) {
  auto d = MatMulShape(ctx->input(0), ctx->input(1), ta, tb);
  absl::Status s = d.ok() ? ctx->allocate_output(0, TensorShape({d->m, d->n}), out) : d.status();
  if (!s.ok()) {
    ctx->SetStatus(s);
    return false;
  }
  *dims = *d;
  return true;
}

// A bool attr, false when absent (errors are reported by ReadTransposeAttrs).
bool BoolAttr(OpKernelConstruction* c, const char* name) {
  bool v = false;
  return c->GetAttr(name, &v).ok() && v;
}

void ReadTransposeAttrs(OpKernelConstruction* c, bool* ta, bool* tb) {
  absl::Status s = c->GetAttr("transpose_a", ta);
  if (s.ok()) s = c->GetAttr("transpose_b", tb);
  if (!s.ok()) c->SetStatus(s);
}

// The oneDNN matmul primitives of one kernel, per shape (made on first use, never removed, so
// references stay valid). They run with a user scratchpad, so concurrent steps may share them.
class MatMulPrimitives {
 public:
  using Type = dnnl::memory::data_type;
  struct Cached {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };

  MatMulPrimitives(bool ta, bool tb) : ta_(ta), tb_(tb) {}

  // The product of `d` reading `in`, writing `out`. Throws dnnl::error when oneDNN has no kernel
  // for these types on this processor.
  const Cached& Get(const MatMulDims& d, Type in, Type out) {
    absl::MutexLock lock(&mu_);
    auto key = std::make_tuple(d.m, d.k, d.n);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    auto a_md = dnnl::memory::desc({d.m, d.k}, in,
                                   ta_ ? dnnl::memory::dims{1, d.m} : dnnl::memory::dims{d.k, 1});
    auto b_md = dnnl::memory::desc({d.k, d.n}, in,
                                   tb_ ? dnnl::memory::dims{1, d.k} : dnnl::memory::dims{d.n, 1});
    auto c_md = dnnl::memory::desc({d.m, d.n}, out, dnnl::memory::dims{d.n, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, CpuEngine());
    return cache_.emplace(key, Cached{pd, dnnl::matmul(pd)}).first->second;
  }

  // c = a · b through `cached`, with a scratchpad of this call's own: with oneDNN's default
  // (library-owned) scratchpad a primitive must not run on two threads at once.
  static absl::Status Run(OpKernelContext* ctx, const Cached& cached, const void* a, const void* b,
                          void* c) {
    dnnl::engine& eng = CpuEngine();
    dnnl::memory a_mem(cached.pd.src_desc(), eng, const_cast<void*>(a));
    dnnl::memory b_mem(cached.pd.weights_desc(), eng, const_cast<void*>(b));
    dnnl::memory c_mem(cached.pd.dst_desc(), eng, c);
    Tensor scratch;
    const size_t scratch_bytes = cached.pd.scratchpad_desc().get_size();
    SF_RETURN_IF_ERROR(
        ctx->allocate_temp(DT_UINT8, TensorShape({static_cast<int64_t>(scratch_bytes)}), &scratch));
    dnnl::memory s_mem(cached.pd.scratchpad_desc(), eng, scratch.raw_data());
    dnnl::stream stream(eng);
    cached.prim.execute(stream, {{DNNL_ARG_SRC, a_mem},
                                 {DNNL_ARG_WEIGHTS, b_mem},
                                 {DNNL_ARG_DST, c_mem},
                                 {DNNL_ARG_SCRATCHPAD, s_mem}});
    stream.wait();
    return absl::OkStatus();
  }

 private:
  const bool ta_, tb_;
  absl::Mutex mu_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Cached> cache_ ABSL_GUARDED_BY(mu_);
};

// Note [bfloat16 matmul]
// A MatMul or _FusedMatMul the mixed-precision pass marked (kBf16ProductsAttr) keeps fp32
// inputs and output: both operands are rounded to bfloat16 in their own layout (a transposed
// operand stays transposed; oneDNN's brgemm kernels read it strided; Note [bfloat16 copies] in
// onednn_util.h) and one bf16 matmul primitive accumulates and writes fp32 into the output.
// Where oneDNN has no bf16 kernels (OneDnnHasBf16: before AVX-512) it is a plain fp32 product.
absl::Status Bf16Product(OpKernelContext* ctx, MatMulPrimitives& primitives, const MatMulDims& d,
                         float* c) {
  SF_ASSIGN_OR_RETURN(Tensor a, RoundedToBf16(ctx->input(0)));
  SF_ASSIGN_OR_RETURN(Tensor b, RoundedToBf16(ctx->input(1)));
  try {
    const auto& cached =
        primitives.Get(d, dnnl::memory::data_type::bf16, dnnl::memory::data_type::f32);
    return MatMulPrimitives::Run(ctx, cached, a.raw_data(), b.raw_data(), c);
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat("oneDNN has no bfloat16 matmul on this processor (", e.what(),
                     "); turn the auto_mixed_precision_onednn_bfloat16 rewrite off or unset "
                     "SHARDFLOW_NATIVE_BF16"));
  }
}

template <typename T>
class OneDnnMatMulOp : public OpKernel {
 public:
  explicit OneDnnMatMulOp(OpKernelConstruction* c)
      : OpKernel(c), primitives_(BoolAttr(c, "transpose_a"), BoolAttr(c, "transpose_b")) {
    ReadTransposeAttrs(c, &ta_, &tb_);
    bf16_ = BoolAttr(c, kBf16ProductsAttr);
  }

  void Compute(OpKernelContext* ctx) override {
    MatMulDims d;
    Tensor* out;
    if (!PrepareMatMul(ctx, ta_, tb_, &d, &out)) return;
    if (d.m == 0 || d.n == 0) return;
    if (d.k == 0) {
      for (int64_t i = 0; i < out->NumElements(); ++i) out->data<T>()[i] = T(0);
      return;
    }
    SetOneDnnThreads(ctx);
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_ && OneDnnHasBf16()) {
        OP_REQUIRES_OK(ctx, Bf16Product(ctx, primitives_, d, out->data<float>()));
        return;
      }
      // fp32: a GEMM entry point (kernels/cpu/sgemm.h) is measurably faster here than the
      // matmul primitive (benchmarks/matmul_benchmark.cc) and thread-safe without a scratchpad.
      const int64_t lda = ctx->input(0).dim_size(1), ldb = ctx->input(1).dim_size(1);
      OP_REQUIRES_OK(ctx, Sgemm(ta_, tb_, d.m, d.n, d.k, ctx->input(0).data<float>(), lda,
                                ctx->input(1).data<float>(), ldb, 0.0f, out->data<float>(), d.n));
      return;
    }
    const MatMulPrimitives::Cached* found = nullptr;
    try {
      found = &primitives_.Get(d, dnnl::memory::data_type::bf16, dnnl::memory::data_type::bf16);
    } catch (const dnnl::error&) {
      // oneDNN has no bf16 matmul for this processor (AVX2 without AVX512-BF16 or AMX): widen
      // to fp32, multiply there, round back (what the bf16 primitive computes, accumulating in
      // fp32). Regression test: the conformance test's bf16 MatMul on such a machine.
      return Fp32Fallback(ctx, d, out);
    }
    OP_REQUIRES_OK(ctx, MatMulPrimitives::Run(ctx, *found, ctx->input(0).raw_data(),
                                              ctx->input(1).raw_data(), out->raw_data()));
  }

 private:
  void Fp32Fallback(OpKernelContext* ctx, const MatMulDims& d, Tensor* out) {
    auto widen = [&](const Tensor& t, Tensor* wide) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, t.shape(), wide));
      const T* src = t.data<T>();
      float* dst = wide->data<float>();
      for (int64_t i = 0; i < t.NumElements(); ++i) dst[i] = static_cast<float>(src[i]);
    };
    Tensor a, b, c;
    widen(ctx->input(0), &a);
    widen(ctx->input(1), &b);
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, out->shape(), &c));
    if (!ctx->status().ok()) return;
    const int64_t lda = a.dim_size(1), ldb = b.dim_size(1);
    dnnl_status_t st =
        dnnl_sgemm(ta_ ? 'T' : 'N', tb_ ? 'T' : 'N', d.m, d.n, d.k, 1.0f, a.data<float>(), lda,
                   b.data<float>(), ldb, 0.0f, c.data<float>(), d.n);
    OP_REQUIRES(ctx, st == dnnl_success,
                absl::InternalError(absl::StrCat("dnnl_sgemm failed with status ", st)));
    const float* src = c.data<float>();
    T* dst = out->data<T>();
    for (int64_t i = 0; i < out->NumElements(); ++i) dst[i] = static_cast<T>(src[i]);
  }

  bool ta_ = false, tb_ = false;
  bool bf16_ = false;  // kBf16ProductsAttr (float only)
  MatMulPrimitives primitives_;
};

class EigenMatMulOp : public OpKernel {
 public:
  explicit EigenMatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    ReadTransposeAttrs(c, &ta_, &tb_);
  }
  void Compute(OpKernelContext* ctx) override {
    MatMulDims d;
    Tensor* out;
    if (!PrepareMatMul(ctx, ta_, tb_, &d, &out)) return;
    using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    Eigen::Map<const Mat> am(a.data<double>(), a.dim_size(0), a.dim_size(1));
    Eigen::Map<const Mat> bm(b.data<double>(), b.dim_size(0), b.dim_size(1));
    Eigen::Map<Mat> cm(out->data<double>(), d.m, d.n);
    if (!ta_ && !tb_) cm.noalias() = am * bm;
    if (ta_ && !tb_) cm.noalias() = am.transpose() * bm;
    if (!ta_ && tb_) cm.noalias() = am * bm.transpose();
    if (ta_ && tb_) cm.noalias() = am.transpose() * bm.transpose();
  }

 private:
  bool ta_ = false, tb_ = false;
};

// MatMul of int32 / int64: exact, wrapping on overflow as TensorFlow's CPU kernel (a float64
// detour loses the low bits of products above 2^53).
template <typename T>
class IntMatMulOp : public OpKernel {
 public:
  explicit IntMatMulOp(OpKernelConstruction* c) : OpKernel(c) { ReadTransposeAttrs(c, &ta_, &tb_); }
  void Compute(OpKernelContext* ctx) override {
    MatMulDims d;
    Tensor* out;
    if (!PrepareMatMul(ctx, ta_, tb_, &d, &out)) return;
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    GemmLoop<T>(ta_, tb_, d.m, d.n, ta_ ? a.dim_size(0) : a.dim_size(1), a.data<T>(), a.dim_size(1),
                b.data<T>(), b.dim_size(1), out->data<T>());
  }

 private:
  bool ta_ = false, tb_ = false;
};

// _FusedMatMul (float), made by the graph optimizer from MatMul + BiasAdd (+ activation): the
// bias is broadcast into the output and the GEMM accumulates onto it (beta = 1), so the sum
// costs no pass of its own; the activation then runs over the output while it is in cache.
class FusedMatMulOp : public OpKernel {
 public:
  explicit FusedMatMulOp(OpKernelConstruction* c)
      : OpKernel(c), primitives_(BoolAttr(c, "transpose_a"), BoolAttr(c, "transpose_b")) {
    ReadTransposeAttrs(c, &ta_, &tb_);
    bf16_ = BoolAttr(c, kBf16ProductsAttr);
    absl::Status s = c->GetAttr("activation", &activation_);
    if (s.ok()) s = CheckFusedActivation(activation_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    MatMulDims d;
    Tensor* out;
    if (!PrepareMatMul(ctx, ta_, tb_, &d, &out)) return;
    const Tensor& bias = ctx->input(2);
    OP_REQUIRES(ctx, bias.dims() == 1 && bias.dim_size(0) == d.n,
                absl::InvalidArgumentError(absl::StrCat("bias must be a vector of ", d.n,
                                                        " values (the output's columns), got ",
                                                        bias.shape().DebugString())));
    if (d.m == 0 || d.n == 0) return;
    float* c = out->data<float>();
    if (d.k > 0 && bf16_ && OneDnnHasBf16()) {  // Note [bfloat16 matmul]; then the bias
      SetOneDnnThreads(ctx);
      OP_REQUIRES_OK(ctx, Bf16Product(ctx, primitives_, d, c));
      Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> rows(c, d.m,
                                                                                            d.n);
      rows.rowwise() +=
          Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>(bias.data<float>(), d.n);
    } else {
      for (int64_t i = 0; i < d.m; ++i) {
        std::memcpy(c + i * d.n, bias.data<float>(), d.n * sizeof(float));
      }
      if (d.k > 0) {
        SetOneDnnThreads(ctx);
        const int64_t lda = ctx->input(0).dim_size(1), ldb = ctx->input(1).dim_size(1);
        OP_REQUIRES_OK(ctx, Sgemm(ta_, tb_, d.m, d.n, d.k, ctx->input(0).data<float>(), lda,
                                  ctx->input(1).data<float>(), ldb, 1.0f, c, d.n));
      }
    }
    Eigen::Map<Eigen::ArrayXf> v(c, out->NumElements());
    if (activation_ == "Relu") {
      v = v.max(0.0f);
    } else if (activation_ == "Tanh") {
      v = v.tanh();
    } else if (activation_ == "Sigmoid") {
      v = v.logistic();
    }
  }

 private:
  bool ta_ = false, tb_ = false;
  bool bf16_ = false;  // kBf16ProductsAttr
  std::string activation_;
  MatMulPrimitives primitives_;
};

REGISTER_KERNEL(KernelDef("_FusedMatMul").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedMatMulOp);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<float>("T"),
                OneDnnMatMulOp<float>);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<bfloat16>("T"),
                OneDnnMatMulOp<bfloat16>);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<double>("T"), EigenMatMulOp);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
                IntMatMulOp<int32_t>);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
                IntMatMulOp<int64_t>);

}  // namespace
}  // namespace shardflow
