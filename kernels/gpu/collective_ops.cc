// The collective ops on GPU devices, their tensors in device memory (the kernels of
// kernels/cpu/collective_kernels.h with their own Exchange):
//
// - NCCL, when every member of the group is a GPU device of this task and each is on a GPU of
//   its own (a group of logical devices of one GPU cannot use NCCL: it refuses two ranks on one
//   GPU). The members first meet through the step's CollectiveExecutor with a small all-gather
//   of (GPU ordinal, element count, dtype) under a derived instance key — so a member that never
//   comes, or a step that aborts, fails them as any collective would, and a mismatch between
//   members is an error naming them instead of a hang on the GPU. Then NcclManager launches the
//   collective for all members at once, in one ncclGroupStart/End from one thread, so that every
//   GPU's stream gets the step's NCCL collectives in the same order (two GPUs that each wait in a
//   different collective would hang). The op is done once the work is enqueued: the stream
//   orders everything after it. Communicators are made once per set of GPUs (ncclCommInitAll)
//   and kept for the process.
// - Otherwise (members on the CPU, in other tasks, or sharing a GPU; no NCCL in the build;
//   $SHARDFLOW_NCCL=0) the exchange is staged through host memory: the input is copied to the
//   host, the step's CollectiveExecutor (the ring over the rendezvous and the task transports)
//   runs on host tensors, and the result is copied back to the device.
//
// $SHARDFLOW_NCCL: 0 = never NCCL; force = also for a group of one member (a test on a machine
// with one GPU); anything else or unset = NCCL where it applies.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/status.h"
#include "kernels/cpu/collective_kernels.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

#ifdef SHARDFLOW_HAVE_NCCL
#include <nccl.h>
#endif

namespace shardflow {
namespace {

using DoneFn = CollectiveExecutor::DoneCallback;

// The meeting before NCCL uses the op's instance key with this bit flipped, so it never meets
// the staged exchange of the same instance.
constexpr int64_t kMeetingBit = int64_t{1} << 61;

std::string NcclMode() {
  const char* env = std::getenv("SHARDFLOW_NCCL");
  return env == nullptr ? "" : env;
}

// Every member a GPU device of the task `self` is in.
bool AllGpusOfThisTask(const CollectiveParams& p) {
  auto self = DeviceName::Parse(p.device);
  if (!self.ok()) return false;
  for (const std::string& d : p.devices) {
    auto name = DeviceName::Parse(d);
    if (!name.ok() || name->type != kDeviceGpu || name->job != self->job ||
        name->replica != self->replica || name->task != self->task) {
      return false;
    }
  }
  return true;
}

// The exchange over host memory (see the top of the file). `output` is device memory, or a host
// placeholder (a broadcast's receiver) that is replaced by a device tensor.
void Staged(DeviceBase* device, CollectiveExecutor* collectives, CollectiveKind kind,
            const CollectiveParams& params, const Tensor& input, Tensor* output, DoneFn done) {
  Tensor host_in;
  if (input.IsInitialized()) {
    host_in = Tensor(CpuAllocator(), input.dtype(), input.shape());
    absl::Status s = device->CopyTensor(input, &host_in);  // waits for the stream
    if (!s.ok()) {
      done(s);
      return;
    }
  }
  // A broadcast's source has no output yet: it gets its input's dtype and shape.
  const Tensor& like = output->IsInitialized() ? *output : input;
  auto host_out = std::make_shared<Tensor>(CpuAllocator(), like.dtype(), like.shape());
  RunCollective(collectives, kind, params, host_in, host_out.get(),
                [device, output, host_out, done = std::move(done)](const absl::Status& s) {
                  if (!s.ok()) {
                    done(s);
                    return;
                  }
                  if (!output->IsInitialized() || IsHostTensor(*output)) {
                    *output = Tensor(device->GetAllocator(), host_out->dtype(), host_out->shape());
                  }
                  done(device->CopyTensor(*host_out, output));
                });
}

#ifdef SHARDFLOW_HAVE_NCCL

absl::Status Nccl(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": NCCL error ", static_cast<int>(r), " (", ncclGetErrorString(r), ")"));
}

absl::StatusOr<ncclDataType_t> NcclType(DataType t) {
  switch (t) {
    case DT_FLOAT:
      return ncclFloat32;
    case DT_DOUBLE:
      return ncclFloat64;
    case DT_HALF:
      return ncclFloat16;
    case DT_BFLOAT16:
      return ncclBfloat16;
    case DT_INT32:
      return ncclInt32;
    case DT_INT64:
      return ncclInt64;
    default:
      return absl::InvalidArgumentError(absl::StrCat("NCCL has no type for ", DataTypeString(t)));
  }
}

ncclRedOp_t NcclOp(ReductionOp op) {
  switch (op) {
    case ReductionOp::kSum:
      return ncclSum;
    case ReductionOp::kMean:
      return ncclAvg;
    case ReductionOp::kMin:
      return ncclMin;
    case ReductionOp::kMax:
      return ncclMax;
    case ReductionOp::kProd:
      return ncclProd;
  }
  return ncclSum;
}

// Gathers the members of each NCCL collective and launches them together (see the top of the
// file). Thread safety: every method may be called from any thread.
class NcclManager {
 public:
  struct Member {
    int rank = 0;
    int ordinal = 0;
    cudaStream_t stream = nullptr;
    const void* send = nullptr;
    void* recv = nullptr;
    DoneFn done;
  };
  struct Collective {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    int size = 0;
    size_t count = 0;  // elements per member's input (the receivers' output for a broadcast)
    ncclDataType_t type = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    int root = 0;
  };

  static NcclManager* Get() {
    static auto* manager = new NcclManager;
    return manager;
  }

  // Adds one member of the collective named `key`; the last member to come launches it.
  void Add(const std::string& key, const Collective& what, Member member) {
    std::vector<Member> members;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      Pending& p = pending_[key];
      p.members.push_back(std::move(member));
      if (static_cast<int>(p.members.size()) < what.size) return;
      members = std::move(p.members);
      pending_.erase(key);
      std::sort(members.begin(), members.end(),
                [](const Member& a, const Member& b) { return a.rank < b.rank; });
      status = LaunchLocked(what, members);
    }
    for (Member& m : members) m.done(status);
  }

 private:
  struct Pending {
    std::vector<Member> members;
  };

  absl::Status LaunchLocked(const Collective& what, const std::vector<Member>& members)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<int> ordinals;
    for (const Member& m : members) ordinals.push_back(m.ordinal);
    auto it = comms_.find(ordinals);
    if (it == comms_.end()) {
      std::vector<ncclComm_t> comms(ordinals.size());
      SF_RETURN_IF_ERROR(
          Nccl(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()),
               "ncclCommInitAll"));
      it = comms_.emplace(ordinals, std::move(comms)).first;
    }
    const std::vector<ncclComm_t>& comms = it->second;
    SF_RETURN_IF_ERROR(Nccl(ncclGroupStart(), "ncclGroupStart"));
    absl::Status first;
    for (size_t i = 0; i < members.size() && first.ok(); ++i) {
      const Member& m = members[i];
      switch (what.kind) {
        case CollectiveKind::kAllReduce:
          first = Nccl(
              ncclAllReduce(m.send, m.recv, what.count, what.type, what.op, comms[i], m.stream),
              "ncclAllReduce");
          break;
        case CollectiveKind::kBroadcast:
          first = Nccl(ncclBroadcast(m.send != nullptr ? m.send : m.recv, m.recv, what.count,
                                     what.type, what.root, comms[i], m.stream),
                       "ncclBroadcast");
          break;
        case CollectiveKind::kAllGather:
          first = Nccl(ncclAllGather(m.send, m.recv, what.count, what.type, comms[i], m.stream),
                       "ncclAllGather");
          break;
      }
    }
    absl::Status end = Nccl(ncclGroupEnd(), "ncclGroupEnd");
    return first.ok() ? end : first;
  }

  absl::Mutex mu_;
  std::map<std::string, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::vector<int>, std::vector<ncclComm_t>> comms_ ABSL_GUARDED_BY(mu_);
};

#endif  // SHARDFLOW_HAVE_NCCL

template <typename Base>
class GpuCollective : public Base {
 public:
  using Base::Base;

 protected:
  void Exchange(OpKernelContext* ctx, CollectiveExecutor* collectives, CollectiveKind kind,
                const Tensor& input, Tensor* output, DoneFn done) override {
    const CollectiveParams& params = this->params_;
    const std::string mode = NcclMode();
    const bool try_nccl =
#ifdef SHARDFLOW_HAVE_NCCL
        mode != "0" && (params.group_size > 1 || mode == "force") && AllGpusOfThisTask(params);
#else
        false;
#endif
    if (!try_nccl) {
      Staged(ctx->device(), collectives, kind, params, input, output, std::move(done));
      return;
    }
#ifdef SHARDFLOW_HAVE_NCCL
    // The GPU of this device: its stream's.
    int ordinal = -1;
    if (cudaStreamGetDevice(gpu::StreamOf(ctx), &ordinal) != cudaSuccess) {
      cudaGetLastError();
      ordinal = -1;
    }
    const Tensor& data = input.IsInitialized() ? input : *output;
    // Meet: every member's (GPU ordinal, elements, dtype).
    auto mine = std::make_shared<Tensor>(DT_INT64, TensorShape({3}));
    mine->data<int64_t>()[0] = ordinal;
    mine->data<int64_t>()[1] = data.NumElements();
    mine->data<int64_t>()[2] = static_cast<int64_t>(data.dtype());
    auto all = std::make_shared<Tensor>(DT_INT64, TensorShape({3 * params.group_size}));
    CollectiveParams meeting = params;
    meeting.instance_key ^= kMeetingBit;
    DeviceBase* device = ctx->device();
    cudaStream_t stream = gpu::StreamOf(ctx);
    collectives->AllGatherAsync(
        meeting, *mine, all.get(),
        [this, ctx, device, stream, collectives, kind, input, output, mine, all,
         done = std::move(done)](const absl::Status& s) mutable {
          if (!s.ok()) {
            done(s);
            return;
          }
          const CollectiveParams& p = this->params_;
          const int64_t* info = all->data<int64_t>();
          std::vector<int64_t> ordinals;
          for (int r = 0; r < p.group_size; ++r) {
            const int64_t* m = info + 3 * r;
            if (m[1] != info[1] || m[2] != info[2]) {
              done(absl::InvalidArgumentError(absl::StrCat(
                  DescribeMember(p), ": members disagree: ", p.devices[0], " has ", info[1],
                  " elements of ", DataTypeString(static_cast<DataType>(info[2])), ", ",
                  p.devices[r], " has ", m[1], " of ",
                  DataTypeString(static_cast<DataType>(m[2])))));
              return;
            }
            if (m[0] < 0 || std::count(ordinals.begin(), ordinals.end(), m[0]) > 0) {
              // Two members on one GPU: NCCL cannot; every member sees the same and stages.
              Staged(device, collectives, kind, p, input, output, std::move(done));
              return;
            }
            ordinals.push_back(m[0]);
          }
          const Tensor& like = output->IsInitialized() ? *output : input;
          auto type = NcclType(like.dtype());
          if (!type.ok()) {
            Staged(device, collectives, kind, p, input, output, std::move(done));
            return;
          }
          // A broadcast's members: the source's output, the receivers' placeholder.
          if (!output->IsInitialized() || IsHostTensor(*output)) {
            *output = Tensor(device->GetAllocator(), like.dtype(), like.shape());
          }
          NcclManager::Collective what;
          what.kind = kind;
          what.size = p.group_size;
          what.count = static_cast<size_t>(info[1]);
          what.type = *type;
          what.op = NcclOp(p.reduction);
          what.root = p.source_rank;
          NcclManager::Member member;
          member.rank = p.rank;
          member.ordinal = static_cast<int>(ordinals[p.rank]);
          member.stream = stream;
          member.send = input.IsInitialized() ? input.raw_data() : nullptr;
          member.recv = output->raw_data();
          member.done = std::move(done);
          ctx->set_timeline_label(absl::StrCat(ctx->timeline_label(), ", via NCCL"));
          NcclManager::Get()->Add(
              absl::StrCat(reinterpret_cast<uintptr_t>(collectives), ":", ctx->step_id(), ":",
                           p.group_key, ":", p.instance_key),
              what, std::move(member));
        });
#endif
  }

 private:
  std::string DescribeMember(const CollectiveParams& p) const {
    return absl::StrCat(this->type_string(), " '", this->name(), "' (group ", p.group_key,
                        " instance ", p.instance_key, ")");
  }
};

#define SF_REGISTER_GPU_COLLECTIVE(type)                                                         \
  REGISTER_KERNEL(KernelDef("CollectiveReduce").Device(kDeviceGpu).TypeConstraint<type>("T"),    \
                  GpuCollective<CollectiveReduceOp>);                                            \
  REGISTER_KERNEL(KernelDef("CollectiveBcastSend").Device(kDeviceGpu).TypeConstraint<type>("T"), \
                  GpuCollective<CollectiveBcastOp>);                                             \
  REGISTER_KERNEL(KernelDef("CollectiveBcastRecv").Device(kDeviceGpu).TypeConstraint<type>("T"), \
                  GpuCollective<CollectiveBcastOp>);                                             \
  REGISTER_KERNEL(KernelDef("CollectiveGather").Device(kDeviceGpu).TypeConstraint<type>("T"),    \
                  GpuCollective<CollectiveGatherOp>)
SF_REGISTER_GPU_COLLECTIVE(float);
SF_REGISTER_GPU_COLLECTIVE(double);
SF_REGISTER_GPU_COLLECTIVE(half);
SF_REGISTER_GPU_COLLECTIVE(bfloat16);
#undef SF_REGISTER_GPU_COLLECTIVE

}  // namespace

bool gpu::BuiltWithNccl() {
#ifdef SHARDFLOW_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace shardflow
