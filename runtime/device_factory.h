// DeviceFactory: makes the devices of one type for a task. Every place that creates devices —
// the local session, a server, eager RunOp — asks DeviceFactory::CreateDevices, which asks
// every registered factory, so a new device type (GPU) plugs in by registering a factory:
//
//   class GpuDeviceFactory : public DeviceFactory { ... };
//   REGISTER_DEVICE_FACTORY("GPU", GpuDeviceFactory, /*priority=*/100);
//
//   SF_ASSIGN_OR_RETURN(auto devices, DeviceFactory::CreateDevices(config, "worker", 1));
//
// Devices come back ordered by factory priority (higher first), then as each factory made them;
// the placer's default is the first device that can run a node, so a GPU factory registered
// with a higher priority than the CPU's (50) gets the ops it has kernels for.
//
// Thread safety: registration happens at static-initialisation time; CreateDevices may be
// called from any thread.
#ifndef SHARDFLOW_RUNTIME_DEVICE_FACTORY_H_
#define SHARDFLOW_RUNTIME_DEVICE_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/protos/config.pb.h"
#include "runtime/device.h"

namespace shardflow {

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;

  // Appends this factory's devices of task (job, task), named
  // "/job:JOB/replica:0/task:TASK/device:TYPE:i". A factory with nothing to offer (no GPU in
  // the machine) appends none and returns OK.
  virtual absl::Status AddDevices(const SessionOptionsProto& config, const std::string& job,
                                  int task, std::vector<std::unique_ptr<Device>>* devices) = 0;

  // Registers `factory` for `device_type`. A second registration of a type is a bug in
  // shardflow and aborts the process with a message.
  static void Register(const std::string& device_type, std::unique_ptr<DeviceFactory> factory,
                       int priority);
  // The factory of a type; nullptr when none is registered.
  static DeviceFactory* Get(const std::string& device_type);
  // Registered types, highest priority first.
  static std::vector<std::string> DeviceTypes();

  // Every registered factory's devices for task (job, task). Errors: a factory's error, naming
  // its type; no device at all.
  static absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
      const SessionOptionsProto& config, const std::string& job, int task);
};

struct DeviceFactoryRegistration {
  DeviceFactoryRegistration(const std::string& device_type, std::unique_ptr<DeviceFactory> factory,
                            int priority) {
    DeviceFactory::Register(device_type, std::move(factory), priority);
  }
};

#define SF_DEVICE_FACTORY_UNIQ_HELPER(ctr, type, factory, priority)      \
  static ::shardflow::DeviceFactoryRegistration sf_device_factory_##ctr( \
      type, std::make_unique<factory>(), priority)
#define SF_DEVICE_FACTORY_UNIQ(ctr, type, factory, priority) \
  SF_DEVICE_FACTORY_UNIQ_HELPER(ctr, type, factory, priority)
#define REGISTER_DEVICE_FACTORY(type, factory, priority) \
  SF_DEVICE_FACTORY_UNIQ(__COUNTER__, type, factory, priority)

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_DEVICE_FACTORY_H_
