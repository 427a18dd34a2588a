#include "runtime/device.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "runtime/device_factory.h"

namespace shardflow {
namespace {

int Slots(int count, int inter, int intra) {
  SessionOptionsProto o;
  o.set_cpu_device_count(count);
  o.set_inter_op_threads(inter);
  o.set_intra_op_threads(intra);
  std::vector<std::unique_ptr<Device>> devices;
  EXPECT_TRUE(DeviceFactory::Get(kDeviceCpu)->AddDevices(o, "localhost", 0, &devices).ok());
  return devices[0]->compute_slots();
}

TEST(CpuDeviceTest, ComputeSlotsNeverExceedCoresOrInterOpThreads) {
  int cores = NumHardwareThreads();
  // One kernel using every core: one at a time.
  EXPECT_EQ(Slots(1, cores, cores), 1);
  // Regression: 1 inter-op and 1 intra-op thread means one kernel at a time on one core, even
  // when the machine has more cores (the device used to admit cores/intra kernels at once).
  EXPECT_EQ(Slots(1, 1, 1), 1);
  // Single-threaded kernels with enough inter-op threads: one per core.
  EXPECT_EQ(Slots(1, cores, 1), cores);
  // Two devices share the cores.
  EXPECT_EQ(Slots(2, 1, 1), 1);
}

TEST(CpuDeviceTest, NamesAndThreads) {
  SessionOptionsProto o;
  o.set_cpu_device_count(2);
  std::vector<std::unique_ptr<Device>> devices;
  ASSERT_TRUE(DeviceFactory::Get(kDeviceCpu)->AddDevices(o, "worker", 3, &devices).ok());
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[1]->name(), "/job:worker/replica:0/task:3/device:CPU:1");
  EXPECT_EQ(devices[0]->device_type(), "CPU");
  EXPECT_GE(devices[0]->intra_op_threads(), 1);
  EXPECT_NE(devices[0]->resource_manager(), nullptr);
}

TEST(DeviceFactoryTest, CpuIsRegisteredAndBadConfigsAreErrors) {
  EXPECT_NE(DeviceFactory::Get("CPU"), nullptr);
  EXPECT_EQ(DeviceFactory::Get("TPU"), nullptr);
  std::vector<std::string> types = DeviceFactory::DeviceTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "CPU"), types.end());
  SessionOptionsProto bad;
  bad.set_inter_op_threads(1 << 20);
  auto devices = DeviceFactory::CreateDevices(bad, "localhost", 0);
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument) << devices.status();
  EXPECT_TRUE(absl::StrContains(devices.status().message(), "CPU devices")) << devices.status();
  bad.set_inter_op_threads(0);
  bad.set_cpu_device_count(-3);
  EXPECT_FALSE(DeviceFactory::CreateDevices(bad, "localhost", 0).ok());
}

// A factory registered with a higher priority than the CPU's comes first, so the placer's
// default (the first device that can run a node) prefers it.
class FakeAcceleratorFactory final : public DeviceFactory {
 public:
  absl::Status AddDevices(const SessionOptionsProto&, const std::string& job, int task,
                          std::vector<std::unique_ptr<Device>>* devices) override {
    devices->push_back(
        std::make_unique<CpuDevice>(DeviceName::Full(job, 0, task, "FAKE", 0).ToString(), 1, 1));
    return absl::OkStatus();
  }
};
REGISTER_DEVICE_FACTORY("FAKE", FakeAcceleratorFactory, 80);

TEST(DeviceFactoryTest, HigherPriorityDevicesComeFirst) {
  auto devices = DeviceFactory::CreateDevices(SessionOptionsProto(), "worker", 0);
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_GE(devices->size(), 2u);
  EXPECT_EQ((*devices)[0]->name(), "/job:worker/replica:0/task:0/device:FAKE:0");
  EXPECT_EQ((*devices)[1]->name(), "/job:worker/replica:0/task:0/device:CPU:0");
}

}  // namespace
}  // namespace shardflow
