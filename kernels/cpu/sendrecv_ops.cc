// _Send and _Recv through the step's Rendezvous. _Recv is asynchronous: it never blocks a
// thread while the sender's device is still computing.
//
// The kernels are the same on every device type: a _Recv asks for the tensor in its kernel's
// memory (the receiving device copies it there, ToReceiverMemory); a _Send of a tensor in
// device memory (a GPU's) hands over a host copy when the receiver is a CPU or in another task,
// and otherwise (another GPU of this task) waits for its device's queued work, so that the
// receiver's copy reads finished values.
#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/rendezvous.h"

namespace shardflow {
namespace {

// "/job:w/replica:0/task:1/device:CPU:0" -> "/job:w/replica:0/task:1".
std::string TaskOf(const std::string& device) { return device.substr(0, device.find("/device:")); }

struct Transfer {
  std::string key;
  // A transfer between tasks names the other task in the trace (its timeline label, with the
  // bytes), e.g. "to /job:ps/replica:0/task:0"; "" between devices of one task.
  std::string peer;
  // The receiver reads host memory: a CPU device, or any device of another task (the transport
  // carries host bytes).
  bool receiver_on_host = true;
};

Transfer FromAttrs(OpKernelConstruction* c, bool is_send) {
  std::string tensor, send, recv;
  int64_t incarnation = 0;
  absl::Status s = c->GetAttr("tensor_name", &tensor);
  if (s.ok()) s = c->GetAttr("send_device", &send);
  if (s.ok()) s = c->GetAttr("recv_device", &recv);
  if (s.ok()) s = c->GetAttr("send_device_incarnation", &incarnation);
  if (!s.ok()) c->SetStatus(s);
  Transfer t;
  t.key = RendezvousKey(send, static_cast<uint64_t>(incarnation), recv, tensor);
  if (TaskOf(send) != TaskOf(recv))
    t.peer = is_send ? "to " + TaskOf(recv) : "from " + TaskOf(send);
  auto recv_name = DeviceName::Parse(recv);
  t.receiver_on_host = !t.peer.empty() || !recv_name.ok() || recv_name->type == kDeviceCpu;
  return t;
}

void LabelTransfer(OpKernelContext* ctx, const std::string& peer, const Tensor& value) {
  if (!peer.empty())
    ctx->set_timeline_label(absl::StrCat(peer, ", ", value.TotalBytes(), " bytes"));
}

class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* c) : OpKernel(c), transfer_(FromAttrs(c, true)) {}
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->rendezvous() != nullptr,
                absl::InternalError("_Send runs without a rendezvous"));
    LabelTransfer(ctx, transfer_.peer, ctx->input(0));
    const Tensor& value = ctx->input(0);
    if (IsHostTensor(value)) {
      OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(transfer_.key, value));
    } else if (transfer_.receiver_on_host) {
      auto host = Tensor::Create(ctx->device()->GetHostAllocator(), value.dtype(), value.shape());
      OP_REQUIRES_OK(ctx, host.status());
      OP_REQUIRES_OK(ctx, ctx->device()->CopyTensor(value, &*host));
      OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(transfer_.key, *host));
    } else {
      OP_REQUIRES_OK(ctx, ctx->device()->Sync());
      OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(transfer_.key, value));
    }
  }

 private:
  const Transfer transfer_;
};

class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), transfer_(FromAttrs(c, false)) {}
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr,
                      absl::InternalError("_Recv runs without a rendezvous"), done);
    DataType want = output_type(0);
    RecvArgs args;
    args.device = ctx->device();
    args.allocator = ctx->output_allocator(0);  // the host's for a host-memory tensor
    ctx->rendezvous()->RecvAsync(transfer_.key, args,
                                 [ctx, done, want, key = transfer_.key, peer = transfer_.peer](
                                     const absl::Status& s, const Tensor& value) {
                                   if (!s.ok()) {
                                     ctx->SetStatus(s);
                                   } else if (value.dtype() != want) {
                                     ctx->SetStatus(absl::InternalError(absl::StrCat(
                                         "received ", DataTypeString(value.dtype()), " for ", key,
                                         "; expected ", DataTypeString(want))));
                                   } else {
                                     LabelTransfer(ctx, peer, value);
                                     ctx->set_output(0, value);
                                   }
                                   done();
                                 });
  }

 private:
  const Transfer transfer_;
};

REGISTER_KERNEL(KernelDef("_Send").Device(kDeviceCpu), SendOp);
REGISTER_KERNEL(KernelDef("_Recv").Device(kDeviceCpu), RecvOp);
REGISTER_KERNEL(KernelDef("_Send").Device(kDeviceGpu), SendOp);
REGISTER_KERNEL(KernelDef("_Recv").Device(kDeviceGpu), RecvOp);

}  // namespace
}  // namespace shardflow
