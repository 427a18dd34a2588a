#include "runtime/device.h"

#include <omp.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/device_factory.h"

namespace shardflow {

int NumHardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

CpuDevice::CpuDevice(const std::string& name, int inter_op_threads, int intra_op_threads,
                     int compute_slots)
    : Device(DeviceAttributes{name, kDeviceCpu, 0}),
      compute_slots_(std::max(1, compute_slots)),
      free_slots_(std::max(1, compute_slots)),
      inter_op_pool_(absl::StrCat(name, "/inter"), inter_op_threads,
                     [intra_op_threads] { omp_set_num_threads(intra_op_threads); }) {
  if (intra_op_threads > 1) {
    intra_op_pool_ =
        std::make_unique<ThreadPool>(absl::StrCat(name, "/intra"), intra_op_threads - 1);
  }
  set_intra_op(intra_op_pool_.get(), intra_op_threads);
}

CpuDevice::~CpuDevice() = default;

void CpuDevice::AcquireComputeSlot() {
  absl::MutexLock lock(&slots_mu_);
  auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(slots_mu_) { return free_slots_ > 0; };
  slots_mu_.Await(absl::Condition(&available));
  --free_slots_;
}

void CpuDevice::ReleaseComputeSlot() {
  absl::MutexLock lock(&slots_mu_);
  ++free_slots_;
}

namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  absl::Status AddDevices(const SessionOptionsProto& options, const std::string& job, int task,
                          std::vector<std::unique_ptr<Device>>* devices) override {
    if (options.cpu_device_count() < 0 || options.cpu_device_count() > 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_device_count is ", options.cpu_device_count(), "; give 0 (one) to 1024"));
    }
    for (int threads : {options.inter_op_threads(), options.intra_op_threads()}) {
      if (threads < 0 || threads > 4096) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a thread count of ", threads,
            " was asked for; inter_op_threads and intra_op_threads must be in [0, 4096] "
            "(0 = one per core)"));
      }
    }
    int cores = NumHardwareThreads();
    int count = std::max(1, options.cpu_device_count());
    int intra =
        options.intra_op_threads() > 0 ? options.intra_op_threads() : std::max(1, cores / count);
    int inter =
        options.inter_op_threads() > 0 ? options.inter_op_threads() : std::max(1, cores / count);
    // Expensive kernels at once: the cores this device may keep busy divided by the threads one
    // kernel uses, and never more than the inter-op threads the options allow.
    int slots = std::max(1, std::min(inter, std::max(1, cores / count) / intra));
    for (int i = 0; i < count; ++i) {
      devices->push_back(std::make_unique<CpuDevice>(
          DeviceName::Full(job, 0, task, kDeviceCpu, i).ToString(), inter, intra, slots));
    }
    return absl::OkStatus();
  }
};

REGISTER_DEVICE_FACTORY(kDeviceCpu, CpuDeviceFactory, kCpuDeviceFactoryPriority);

}  // namespace

}  // namespace shardflow
