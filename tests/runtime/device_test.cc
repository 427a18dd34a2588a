#include "runtime/device.h"

#include "gtest/gtest.h"

namespace shardflow {
namespace {

int Slots(int count, int inter, int intra) {
  SessionOptionsProto o;
  o.set_cpu_device_count(count);
  o.set_inter_op_threads(inter);
  o.set_intra_op_threads(intra);
  return CreateCpuDevices(o, "localhost", 0)[0]->compute_slots();
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
  auto devices = CreateCpuDevices(o, "worker", 3);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[1]->name(), "/job:worker/replica:0/task:3/device:CPU:1");
  EXPECT_EQ(devices[0]->device_type(), "CPU");
  EXPECT_GE(devices[0]->intra_op_threads(), 1);
  EXPECT_NE(devices[0]->resource_manager(), nullptr);
}

}  // namespace
}  // namespace shardflow
