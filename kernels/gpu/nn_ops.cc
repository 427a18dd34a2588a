// GPU kernels for BiasAdd, BiasAddGrad, Softmax, LogSoftmax and the two softmax cross-entropies,
// float only. Shapes (and the sparse labels) are checked on the host exactly as the CPU kernels
// (kernels/cpu/nn_ops.cc) check them; the CUDA work is in nn_ops.cu, and BiasAddGrad is a column
// sum (reduction_ops.cu).
//
// SparseSoftmaxCrossEntropyWithLogits keeps `labels` in host memory so that every label can be
// checked against the number of classes before anything runs; the labels are then copied to the
// device, and the kernel waits for that copy (see SparseSoftmaxXentOp).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/gpu/gpu_util.h"
#include "kernels/gpu/nn_ops.cu.h"
#include "kernels/gpu/reduction_ops.cu.h"

namespace shardflow {
namespace {

// ---- BiasAdd ---------------------------------------------------------------------------------

class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    auto channels = BiasAddChannels(value, bias);
    OP_REQUIRES_OK(ctx, channels.status());
    const int64_t c = *channels;
    // Read the input before it may be forwarded to the output (which empties ctx->input(0)).
    const float* x = value.data<float>();
    const float* b = bias.data<float>();
    const int64_t rows = c == 0 ? 0 : value.NumElements() / c;
    const TensorShape shape = value.shape();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &out));
    if (c == 0 || rows == 0) return;
    OP_REQUIRES_CUDA(ctx,
                     gpu::LaunchBiasAdd(x, b, out->data<float>(), rows, c, gpu::StreamOf(ctx)));
  }
};

// The sum over every dimension but the last: a column sum of the [rows, c] view.
class BiasAddGradOp : public OpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    auto channels = BiasAddGradChannels(grad);
    OP_REQUIRES_OK(ctx, channels.status());
    const int64_t c = *channels;
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({c}), &out));
    if (c == 0) return;
    const int64_t rows = grad.NumElements() / c;
    cudaStream_t stream = gpu::StreamOf(ctx);
    if (rows == 0) {
      OP_REQUIRES_CUDA(ctx, gpu::LaunchFillConstant(out->data<float>(), c, 0.0f, stream));
      return;
    }
    Tensor scratch;
    const int64_t scratch_elems = gpu::ReduceScratchElems(1, rows, c);
    if (scratch_elems > 0) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, TensorShape({scratch_elems}), &scratch));
    }
    OP_REQUIRES_CUDA(
        ctx,
        gpu::LaunchReduce(gpu::ReduceFn::kSum, grad.data<float>(), 1, rows, c, out->data<float>(),
                          scratch_elems > 0 ? scratch.data<float>() : nullptr, stream));
  }
};

// ---- Softmax, LogSoftmax ---------------------------------------------------------------------

template <bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  explicit SoftmaxOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    int64_t rows, c;
    OP_REQUIRES_OK(ctx, LastDimRows(logits, "logits", &rows, &c));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, logits.shape(), &out));
    if (rows == 0) return;
    OP_REQUIRES_CUDA(ctx, gpu::LaunchSoftmax(logits.data<float>(), out->data<float>(), rows, c,
                                             kLog, gpu::StreamOf(ctx)));
  }
};

// ---- cross-entropies -------------------------------------------------------------------------

class SoftmaxXentOp : public OpKernel {
 public:
  explicit SoftmaxXentOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& features = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckSoftmaxXentShapes(features, labels));
    const int64_t n = features.dim_size(0), c = features.dim_size(1);
    Tensor *loss = nullptr, *backprop = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, features.shape(), &backprop));
    if (n == 0) return;
    cudaStream_t stream = gpu::StreamOf(ctx);
    if (c == 0) {
      OP_REQUIRES_CUDA(ctx, gpu::LaunchFillConstant(loss->data<float>(), n, 0.0f, stream));
      return;
    }
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchSoftmaxXent(features.data<float>(), labels.data<float>(),
                                    loss->data<float>(), backprop->data<float>(), n, c, stream));
  }
};

template <typename L>
class SparseSoftmaxXentOp : public OpKernel {
 public:
  explicit SparseSoftmaxXentOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& features = ctx->input(0);
    const Tensor& labels = ctx->input(1);  // host memory (registered so)
    OP_REQUIRES(ctx, IsHostTensor(labels),
                absl::InternalError("SparseSoftmaxCrossEntropyWithLogits on the GPU expects its "
                                    "labels in host memory (HostMemory(\"labels\"))"));
    OP_REQUIRES_OK(ctx, CheckSparseXentInputs(features, labels));
    const int64_t n = features.dim_size(0), c = features.dim_size(1);
    Tensor *loss = nullptr, *backprop = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, features.shape(), &backprop));
    // n > 0 implies c > 0: every label was checked to lie in [0, c).
    if (n == 0) return;
    Tensor device_labels;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DataTypeToEnum<L>::value, TensorShape({n}), &device_labels));
    // The device's copy stages host memory through its own pinned buffers: enqueued in stream
    // order, and the host labels may go as soon as it returns.
    OP_REQUIRES_OK(ctx, ctx->device()->CopyTensor(labels, &device_labels));
    const cudaError_t launched = gpu::LaunchSparseSoftmaxXent(
        features.data<float>(), device_labels.data<L>(), loss->data<float>(),
        backprop->data<float>(), n, c, gpu::StreamOf(ctx));
    OP_REQUIRES_CUDA(ctx, launched);
  }
};

#define SF_GPU_NN(NAME, ...) \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceGpu).TypeConstraint<float>("T"), __VA_ARGS__)

SF_GPU_NN("BiasAdd", BiasAddOp);
SF_GPU_NN("BiasAddGrad", BiasAddGradOp);
SF_GPU_NN("Softmax", SoftmaxOp<false>);
SF_GPU_NN("LogSoftmax", SoftmaxOp<true>);
SF_GPU_NN("SoftmaxCrossEntropyWithLogits", SoftmaxXentOp);
#undef SF_GPU_NN

REGISTER_KERNEL(KernelDef("SparseSoftmaxCrossEntropyWithLogits")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int32_t>("Tlabels")
                    .HostMemory("labels"),
                SparseSoftmaxXentOp<int32_t>);
REGISTER_KERNEL(KernelDef("SparseSoftmaxCrossEntropyWithLogits")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int64_t>("Tlabels")
                    .HostMemory("labels"),
                SparseSoftmaxXentOp<int64_t>);

}  // namespace
}  // namespace shardflow
