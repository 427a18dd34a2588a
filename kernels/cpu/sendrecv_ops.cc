// _Send and _Recv through the step's Rendezvous. _Recv is asynchronous: it never blocks a
// thread while the sender's device is still computing.
#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/rendezvous.h"

namespace shardflow {
namespace {

std::string KeyFromAttrs(OpKernelConstruction* c) {
  std::string tensor, send, recv;
  int64_t incarnation = 0;
  absl::Status s = c->GetAttr("tensor_name", &tensor);
  if (s.ok()) s = c->GetAttr("send_device", &send);
  if (s.ok()) s = c->GetAttr("recv_device", &recv);
  if (s.ok()) s = c->GetAttr("send_device_incarnation", &incarnation);
  if (!s.ok()) c->SetStatus(s);
  return RendezvousKey(send, static_cast<uint64_t>(incarnation), recv, tensor);
}

class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* c) : OpKernel(c), key_(KeyFromAttrs(c)) {}
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->rendezvous() != nullptr,
                absl::InternalError("_Send runs without a rendezvous"));
    OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(key_, ctx->input(0)));
  }

 private:
  const std::string key_;
};

class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(KeyFromAttrs(c)) {}
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr,
                      absl::InternalError("_Recv runs without a rendezvous"), done);
    DataType want = output_type(0);
    RecvArgs args;
    args.device = ctx->device();
    args.allocator = ctx->output_allocator(0);  // the host's for a host-memory tensor
    ctx->rendezvous()->RecvAsync(
        key_, args, [ctx, done, want, key = key_](const absl::Status& s, const Tensor& value) {
          if (!s.ok()) {
            ctx->SetStatus(s);
          } else if (value.dtype() != want) {
            ctx->SetStatus(absl::InternalError(
                absl::StrCat("received ", DataTypeString(value.dtype()), " for ", key,
                             "; expected ", DataTypeString(want))));
          } else {
            ctx->set_output(0, value);
          }
          done();
        });
  }

 private:
  const std::string key_;
};

REGISTER_KERNEL(KernelDef("_Send").Device(kDeviceCpu), SendOp);
REGISTER_KERNEL(KernelDef("_Recv").Device(kDeviceCpu), RecvOp);

}  // namespace
}  // namespace shardflow
