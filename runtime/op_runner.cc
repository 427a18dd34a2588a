#include "runtime/op_runner.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "runtime/device.h"
#include "runtime/device_factory.h"

namespace shardflow {
namespace {

// The shared eager device: the CPU factory's first device (it never fails on default options).
Device* EagerCpuDevice() {
  static Device* device = [] {
    std::vector<std::unique_ptr<Device>> devices;
    DeviceFactory::Get(kDeviceCpu)
        ->AddDevices(SessionOptionsProto(), "localhost", 0, &devices)
        .IgnoreError();
    return devices[0].release();
  }();
  return device;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op, std::vector<Tensor> inputs,
                                          const std::map<std::string, AttrValue>& attrs,
                                          const RunOpOptions& options) {
  SF_ASSIGN_OR_RETURN(const OpDef* op_def, OpRegistry::Global()->Find(op));
  NodeDef def;
  def.set_name(op);
  def.set_op(op);
  for (const auto& [name, value] : attrs) (*def.mutable_attr())[name] = value;
  // Infer type and length attrs from the inputs, argument by argument.
  size_t next = 0;
  for (const ArgDef& arg : op_def->inputs) {
    int64_t n = 1;
    if (!arg.number_attr.empty()) {
      if (!def.attr().contains(arg.number_attr)) {
        // A list argument takes every remaining input except one per later argument.
        n = static_cast<int64_t>(inputs.size() - next) -
            static_cast<int64_t>(op_def->inputs.size() - (&arg - op_def->inputs.data()) - 1);
        (*def.mutable_attr())[arg.number_attr] = MakeAttr(n);
      } else {
        n = def.attr().at(arg.number_attr).i();
      }
    }
    if (!arg.type_attr.empty() && !def.attr().contains(arg.type_attr) && next < inputs.size()) {
      (*def.mutable_attr())[arg.type_attr] = MakeAttr(inputs[next].dtype());
    }
    next += n;
  }
  SF_RETURN_IF_ERROR(AddDefaultsAndValidate(*op_def, &def));
  DataTypeVector in_types, out_types;
  SF_RETURN_IF_ERROR(ComputeArgTypes(*op_def, def, &in_types, &out_types));
  std::string prefix = NodeErrorPrefix(def);
  if (in_types.size() != inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "takes ", in_types.size(),
                                                   " inputs but got ", inputs.size(),
                                                   "; signature: ", op_def->Signature()));
  }
  std::vector<TensorShape> shapes;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != in_types[i]) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "input ", i, " must be ",
                                                     DataTypeString(in_types[i]), " but is ",
                                                     DataTypeString(inputs[i].dtype())));
    }
    shapes.push_back(inputs[i].shape());
    values.push_back(&inputs[i]);
  }
  if (options.infer_shapes && op_def->shape_fn) {
    InferenceContext ctx(def, in_types, out_types, shapes, values);
    absl::Status s = op_def->shape_fn(&ctx);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
  }
  std::vector<std::unique_ptr<Device>> own_device;
  Device* device = EagerCpuDevice();
  if (options.intra_op_threads > 0) {
    SessionOptionsProto config;
    config.set_inter_op_threads(1);
    config.set_intra_op_threads(options.intra_op_threads);
    SF_RETURN_IF_ERROR(
        DeviceFactory::Get(kDeviceCpu)->AddDevices(config, "localhost", 0, &own_device));
    device = own_device[0].get();
  }
  SF_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                      KernelRegistry::Global()->CreateKernel(device, def, in_types, out_types));
  shapes.clear();
  values.clear();  // they point into `inputs`, which the kernel may now move from
  OpKernelContext::Params params;
  params.device = device;
  params.kernel = kernel.get();
  params.inputs = inputs.data();
  params.num_inputs = static_cast<int>(inputs.size());
  OpKernelContext ctx(&params);
  kernel->Compute(&ctx);
  if (!ctx.status().ok()) {
    return absl::Status(ctx.status().code(), absl::StrCat(prefix, ctx.status().message()));
  }
  std::vector<Tensor> outputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) outputs.push_back(ctx.release_output(i));
  return outputs;
}

}  // namespace shardflow
