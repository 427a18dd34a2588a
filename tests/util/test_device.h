// A CPU device for tests that run kernels by hand (no session): made by the registered CPU
// DeviceFactory, as every device in shardflow is, never constructed directly.
#ifndef SHARDFLOW_TESTS_UTIL_TEST_DEVICE_H_
#define SHARDFLOW_TESTS_UTIL_TEST_DEVICE_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/protos/config.pb.h"
#include "runtime/device.h"
#include "runtime/device_factory.h"

namespace shardflow {

// "/job:localhost/replica:0/task:0/device:CPU:0" with the given thread counts. Aborts with a
// message if the factory refuses (a test set-up bug, not a test result).
inline std::unique_ptr<Device> NewTestCpuDevice(int inter_op_threads, int intra_op_threads) {
  SessionOptionsProto config;
  config.set_cpu_device_count(1);
  config.set_inter_op_threads(inter_op_threads);
  config.set_intra_op_threads(intra_op_threads);
  std::vector<std::unique_ptr<Device>> devices;
  DeviceFactory* factory = DeviceFactory::Get(kDeviceCpu);
  absl::Status s = factory == nullptr ? absl::NotFoundError("no CPU device factory registered")
                                      : factory->AddDevices(config, "localhost", 0, &devices);
  if (!s.ok() || devices.empty()) {
    std::fprintf(stderr, "NewTestCpuDevice: %s\n", s.ToString().c_str());
    std::abort();
  }
  return std::move(devices[0]);
}

}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_TEST_DEVICE_H_
