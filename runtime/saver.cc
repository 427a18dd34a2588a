#include "runtime/saver.h"

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"

namespace shardflow {

Saver::Saver(const Scope& scope) : variables_(AllVariables(scope)) {
  Scope rs = scope.NewSubScope("save").WithNoControlDependencies();
  std::vector<Operation> assigns;
  for (const Var& v : variables_) {
    Output value = ops::Placeholder(rs, v.dtype(), v.shape());
    values_.push_back(value);
    assigns.push_back(OpBuilder(rs, "AssignVariableOp").Input(v.handle()).Input(value).Finalize());
  }
  Operation restore = ops::NoOp(rs.WithControlDependencies(assigns).WithOpName("restore_all"));
  restore_op_ = restore.name();
}

absl::Status Saver::Save(Session* session, const std::string& path,
                         const NamedTensors& extra) const {
  std::vector<std::string> names;
  for (const Var& v : variables_) names.push_back(v.value().name());
  std::vector<Tensor> values;
  if (!names.empty()) SF_RETURN_IF_ERROR(session->Run({}, names, {}, &values));
  NamedTensors tensors;
  for (size_t i = 0; i < variables_.size(); ++i)
    tensors.push_back({variables_[i].name(), values[i]});
  for (const auto& [name, t] : extra) {
    if (name.rfind("_meta/", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("extra checkpoint entry '", name, "' must be named _meta/..."));
    }
    tensors.push_back({name, t});
  }
  return SaveCheckpoint(path, tensors);
}

absl::StatusOr<NamedTensors> Saver::Restore(Session* session, const std::string& path) const {
  SF_ASSIGN_OR_RETURN(NamedTensors loaded, LoadCheckpoint(path));
  return Restore(session, loaded, path);
}

absl::StatusOr<NamedTensors> Saver::Restore(Session* session, const NamedTensors& loaded,
                                            const std::string& path) const {
  NamedTensors vars, meta;
  for (auto& entry : loaded) (entry.first.rfind("_meta/", 0) == 0 ? meta : vars).push_back(entry);
  std::vector<VariableSpec> specs;
  for (const Var& v : variables_) specs.push_back({v.name(), v.dtype(), v.shape()});
  SF_RETURN_IF_ERROR(
      WithContext(CheckCompatible(vars, specs),
                  absl::StrCat("checkpoint '", path, "' does not fit this graph: ")));
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < variables_.size(); ++i) {
    for (const auto& [name, t] : vars) {
      if (name == variables_[i].name()) feeds.push_back({values_[i].name(), t});
    }
  }
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run(feeds, {}, {restore_op_}, &out));
  return meta;
}

}  // namespace shardflow
