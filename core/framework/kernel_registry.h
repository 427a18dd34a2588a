// KernelRegistry: which kernel computes an op on a device type for given dtypes.
//
//   REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceCpu).TypeConstraint<float>("T"),
//                   MatMulOp<float>);
//
// The placer asks SupportedDeviceTypes() which device types can run a node; the executor asks
// CreateKernel() for the kernel of a placed node.
//
// Thread safety: filled before main(), read-only afterwards.
#ifndef SHARDFLOW_CORE_FRAMEWORK_KERNEL_REGISTRY_H_
#define SHARDFLOW_CORE_FRAMEWORK_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/op_kernel.h"

namespace shardflow {

class KernelDef {
 public:
  explicit KernelDef(std::string op) : op_(std::move(op)) {}
  KernelDef& Device(std::string device_type) {
    device_type_ = std::move(device_type);
    return *this;
  }
  KernelDef& TypeConstraint(std::string attr, DataType type) {
    constraints_.emplace_back(std::move(attr), type);
    return *this;
  }
  template <typename T>
  KernelDef& TypeConstraint(std::string attr) {
    return TypeConstraint(std::move(attr), DataTypeToEnum<T>::value);
  }
  // Input or output argument kept in host memory even on an accelerator (shapes, axes).
  KernelDef& HostMemory(std::string arg) {
    host_memory_.push_back(std::move(arg));
    return *this;
  }

  const std::string& op() const { return op_; }
  const std::string& device_type() const { return device_type_; }
  const std::vector<std::pair<std::string, DataType>>& constraints() const { return constraints_; }
  const std::vector<std::string>& host_memory() const { return host_memory_; }
  // True if the node's attrs satisfy every type constraint.
  bool Matches(const NodeDef& node) const;
  std::string DebugString() const;

 private:
  std::string op_;
  std::string device_type_;
  std::vector<std::pair<std::string, DataType>> constraints_;
  std::vector<std::string> host_memory_;
};

using KernelFactory = std::function<OpKernel*(OpKernelConstruction*)>;

class KernelRegistry {
 public:
  static KernelRegistry* Global();
  void Register(KernelDef def, KernelFactory factory);

  // The registration matching the node on the device type; NotFound lists what exists.
  absl::StatusOr<const KernelDef*> Find(const NodeDef& node, const std::string& device_type) const;
  // Device types with a kernel for this node (e.g. {"CPU", "GPU"}).
  std::vector<std::string> SupportedDeviceTypes(const NodeDef& node) const;
  // Instantiates the kernel; errors (no kernel, bad attrs in the kernel's constructor) name the
  // node.
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(DeviceBase* device, const NodeDef& node,
                                                         const DataTypeVector& input_types,
                                                         const DataTypeVector& output_types) const;
  // All registrations of `op`.
  std::vector<const KernelDef*> KernelsForOp(const std::string& op) const;

  // Which inputs and outputs of `node` the kernel for `device_type` keeps in host memory
  // (KernelDef::HostMemory names op arguments; list arguments expand to all their tensors).
  // `num_inputs`/`num_outputs`: the node's tensor counts.
  absl::Status HostMemoryArgs(const NodeDef& node, const std::string& device_type, int num_inputs,
                              int num_outputs, std::vector<bool>* inputs,
                              std::vector<bool>* outputs) const;

 private:
  struct Entry {
    KernelDef def;
    KernelFactory factory;
  };
  const Entry* FindEntry(const NodeDef& node, const std::string& device_type) const;
  std::multimap<std::string, Entry> kernels_;
};

struct KernelRegistration {
  KernelRegistration(KernelDef def, KernelFactory factory) {
    KernelRegistry::Global()->Register(std::move(def), std::move(factory));
  }
};

#define SF_KERNEL_UNIQ_HELPER(ctr, def, ...)                                    \
  static ::shardflow::KernelRegistration sf_kernel_registration_##ctr(          \
      def, [](::shardflow::OpKernelConstruction* c) -> ::shardflow::OpKernel* { \
        return new __VA_ARGS__(c);                                              \
      })
#define SF_KERNEL_UNIQ(ctr, def, ...) SF_KERNEL_UNIQ_HELPER(ctr, def, __VA_ARGS__)
#define REGISTER_KERNEL(def, ...) SF_KERNEL_UNIQ(__COUNTER__, def, __VA_ARGS__)

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_KERNEL_REGISTRY_H_
