#include "core/framework/kernel_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/op_def.h"
#include "core/platform/status.h"

namespace shardflow {

bool KernelDef::Matches(const NodeDef& node) const {
  for (const auto& [attr, type] : constraints_) {
    auto it = node.attr().find(attr);
    if (it == node.attr().end() || it->second.type() != type) return false;
  }
  return true;
}

std::string KernelDef::DebugString() const {
  std::vector<std::string> cs;
  for (const auto& [attr, type] : constraints_)
    cs.push_back(absl::StrCat(attr, "=", DataTypeString(type)));
  return absl::StrCat(device_type_,
                      cs.empty() ? "" : absl::StrCat("[", absl::StrJoin(cs, ","), "]"));
}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry();
  return registry;
}

void KernelRegistry::Register(KernelDef def, KernelFactory factory) {
  std::string op = def.op();
  kernels_.emplace(op, Entry{std::move(def), std::move(factory)});
}

const KernelRegistry::Entry* KernelRegistry::FindEntry(const NodeDef& node,
                                                       const std::string& device_type) const {
  auto range = kernels_.equal_range(node.op());
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.def.device_type() == device_type && it->second.def.Matches(node)) {
      return &it->second;
    }
  }
  return nullptr;
}

absl::StatusOr<const KernelDef*> KernelRegistry::Find(const NodeDef& node,
                                                      const std::string& device_type) const {
  const Entry* e = FindEntry(node, device_type);
  if (e != nullptr) return &e->def;
  std::vector<std::string> available;
  for (const KernelDef* d : KernelsForOp(node.op())) available.push_back(d->DebugString());
  std::vector<std::string> attrs;
  for (const auto& [name, value] : node.attr()) {
    if (value.value_case() == AttrValue::kType) {
      attrs.push_back(absl::StrCat(name, "=", DataTypeString(value.type())));
    }
  }
  return absl::NotFoundError(
      absl::StrCat(NodeErrorPrefix(node), "no ", device_type, " kernel for ", node.op(),
                   attrs.empty() ? "" : absl::StrCat(" with ", absl::StrJoin(attrs, ", ")),
                   "; registered kernels: ",
                   available.empty() ? std::string("none") : absl::StrJoin(available, " ")));
}

std::vector<std::string> KernelRegistry::SupportedDeviceTypes(const NodeDef& node) const {
  std::vector<std::string> types;
  auto range = kernels_.equal_range(node.op());
  for (auto it = range.first; it != range.second; ++it) {
    const std::string& t = it->second.def.device_type();
    if (it->second.def.Matches(node) && std::find(types.begin(), types.end(), t) == types.end()) {
      types.push_back(t);
    }
  }
  return types;
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(
    DeviceBase* device, const NodeDef& node, const DataTypeVector& input_types,
    const DataTypeVector& output_types) const {
  const Entry* e = FindEntry(node, device->device_type());
  if (e == nullptr) return Find(node, device->device_type()).status();
  OpKernelConstruction construction(device, node, input_types, output_types);
  std::unique_ptr<OpKernel> kernel(e->factory(&construction));
  if (!construction.status().ok()) {
    return absl::Status(construction.status().code(),
                        absl::StrCat(NodeErrorPrefix(node), construction.status().message()));
  }
  if (!e->def.host_memory().empty()) {
    std::vector<bool> inputs, outputs;
    SF_RETURN_IF_ERROR(HostMemoryArgs(node, device->device_type(),
                                      static_cast<int>(input_types.size()),
                                      static_cast<int>(output_types.size()), &inputs, &outputs));
    auto any = [](const std::vector<bool>& v) {
      return std::find(v.begin(), v.end(), true) != v.end();
    };
    auto all = [](const std::vector<bool>& v) {
      return std::find(v.begin(), v.end(), false) == v.end();
    };
    kernel->runs_on_host_ = all(inputs) && all(outputs) && (any(inputs) || any(outputs));
    if (any(inputs)) kernel->host_inputs_ = std::move(inputs);
    if (any(outputs)) kernel->host_outputs_ = std::move(outputs);
  }
  return kernel;
}

absl::Status KernelRegistry::HostMemoryArgs(const NodeDef& node, const std::string& device_type,
                                            int num_inputs, int num_outputs,
                                            std::vector<bool>* inputs,
                                            std::vector<bool>* outputs) const {
  inputs->assign(num_inputs, false);
  outputs->assign(num_outputs, false);
  const Entry* e = FindEntry(node, device_type);
  if (e == nullptr) return Find(node, device_type).status();
  const auto& host = e->def.host_memory();
  if (host.empty()) return absl::OkStatus();
  SF_ASSIGN_OR_RETURN(const OpDef* op_def, OpRegistry::Global()->Find(node.op()));
  // Expand the op's argument list (list arguments have `number_attr` entries) to indices.
  auto mark = [&](const std::vector<ArgDef>& args, std::vector<bool>* flags) {
    size_t index = 0;
    for (const ArgDef& arg : args) {
      int64_t count = 1;
      if (!arg.number_attr.empty()) GetAttr(node.attr(), arg.number_attr, &count).IgnoreError();
      if (!arg.type_list_attr.empty() && node.attr().contains(arg.type_list_attr)) {
        count = node.attr().at(arg.type_list_attr).list().type_size();
      }
      const bool is_host = std::find(host.begin(), host.end(), arg.name) != host.end();
      for (int64_t k = 0; k < count && index < flags->size(); ++k, ++index) {
        (*flags)[index] = is_host;
      }
    }
  };
  mark(op_def->inputs, inputs);
  mark(op_def->outputs, outputs);
  return absl::OkStatus();
}

std::vector<const KernelDef*> KernelRegistry::KernelsForOp(const std::string& op) const {
  std::vector<const KernelDef*> out;
  auto range = kernels_.equal_range(op);
  for (auto it = range.first; it != range.second; ++it) out.push_back(&it->second.def);
  return out;
}

}  // namespace shardflow
