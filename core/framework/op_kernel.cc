#include "core/framework/op_kernel.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace shardflow {

OpKernel::OpKernel(OpKernelConstruction* c)
    : name_(c->def().name()),
      type_string_(c->def().op()),
      input_types_(c->input_types()),
      output_types_(c->output_types()) {}

OpKernel::~OpKernel() = default;

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  absl::Notification n;
  ComputeAsync(ctx, [&n] { n.Notify(); });
  n.WaitForNotification();
}

OpKernelContext::OpKernelContext(Params* params)
    : params_(params), outputs_(params->kernel->num_outputs()) {}

OpKernelContext::~OpKernelContext() = default;

absl::Status OpKernelContext::allocate_output(int index, const TensorShape& shape, Tensor** out) {
  auto t = Tensor::Create(output_allocator(index), params_->kernel->output_type(index), shape);
  if (!t.ok()) return t.status();
  outputs_[index] = *std::move(t);
  *out = &outputs_[index];
  return absl::OkStatus();
}

absl::Status OpKernelContext::forward_input_or_allocate_output(int input_index, int output_index,
                                                               const TensorShape& shape,
                                                               Tensor** out) {
  Tensor& in = params_->inputs[input_index];
  DataType out_type = params_->kernel->output_type(output_index);
  if (in.dtype() == out_type && out_type != DT_STRING && in.RefCountIsOne() &&
      in.NumElements() == shape.num_elements() &&
      in.buffer()->allocator() == output_allocator(output_index)) {
    auto reshaped = in.Reshaped(shape);
    if (reshaped.ok()) {
      outputs_[output_index] = *std::move(reshaped);
      outputs_[output_index].MarkWritten();
      in = Tensor();
      *out = &outputs_[output_index];
      return absl::OkStatus();
    }
  }
  return allocate_output(output_index, shape, out);
}

absl::Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out) {
  auto t = Tensor::Create(
      params_->kernel->runs_on_host() ? params_->device->GetHostAllocator() : allocator(), dtype,
      shape);
  if (!t.ok()) return t.status();
  *out = *std::move(t);
  return absl::OkStatus();
}

void OpKernelContext::set_output(int index, Tensor value) { outputs_[index] = std::move(value); }

}  // namespace shardflow
