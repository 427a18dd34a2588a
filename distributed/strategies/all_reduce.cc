#include "distributed/strategies/all_reduce.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

// The variables of `after` that are not in `before`, by name, in creation order.
std::vector<Var> NewVariables(const std::vector<Var>& before, const std::vector<Var>& after) {
  std::set<std::string> old;
  for (const Var& v : before) old.insert(v.name());
  std::vector<Var> out;
  for (const Var& v : after) {
    if (!old.count(v.name())) out.push_back(v);
  }
  return out;
}

}  // namespace

absl::StatusOr<AllReduceTraining> BuildAllReduceTraining(const Scope& scope,
                                                         const std::vector<std::string>& devices,
                                                         const ReplicaBuilder& build,
                                                         const OptimizerFactory& make_optimizer,
                                                         int64_t group_key,
                                                         const UpdateGate& gate) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("all-reduce training needs at least one replica device");
  }
  const int replicas = static_cast<int>(devices.size());
  AllReduceTraining out;
  std::vector<Scope> scopes;
  for (int r = 0; r < replicas; ++r) {
    Scope s = (r == 0 ? scope : scope.NewSubScope(absl::StrCat("replica_", r))).WithDevice(devices[r]);
    std::vector<Var> before = AllVariables(scope, /*trainable_only=*/true);
    SF_ASSIGN_OR_RETURN(Output loss, build(s, r));
    SF_RETURN_IF_ERROR(scope.status());
    std::vector<Var> vars = NewVariables(before, AllVariables(scope, /*trainable_only=*/true));
    if (r > 0) {
      const std::vector<Var>& first = out.variables[0];
      if (vars.size() != first.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica ", r, " has ", vars.size(), " trainable variables but replica 0 has ",
            first.size(), ": every replica must build the same model"));
      }
      for (size_t k = 0; k < vars.size(); ++k) {
        if (vars[k].dtype() != first[k].dtype() || vars[k].shape() != first[k].shape()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "replica ", r, "'s variable '", vars[k].name(), "' is ",
              DataTypeString(vars[k].dtype()), " ", vars[k].shape().DebugString(),
              " but replica 0's '", first[k].name(), "' is ", DataTypeString(first[k].dtype()),
              " ", first[k].shape().DebugString(), ": every replica must build the same model"));
        }
      }
    }
    out.losses.push_back(loss);
    out.variables.push_back(std::move(vars));
    scopes.push_back(s);
  }
  const int64_t num_vars = static_cast<int64_t>(out.variables[0].size());
  std::vector<Operation> updates;
  for (int r = 0; r < replicas; ++r) {
    const Scope& s = scopes[r];
    std::vector<Output> xs;
    for (const Var& v : out.variables[r]) xs.push_back(v.value());
    std::vector<Output> grads;
    SF_RETURN_IF_ERROR(AddGradients(s, {out.losses[r]}, xs, &grads));
    std::vector<std::pair<Output, Var>> averaged;
    for (int64_t k = 0; k < num_vars; ++k) {
      if (!grads[k].node()) continue;  // the loss does not depend on it
      Output g = replicas == 1 ? grads[k]
                               : ops::CollectiveReduce(s.WithOpName(absl::StrCat("allreduce_", k)),
                                                       grads[k], replicas, group_key, k + 1,
                                                       "Add", "Div");
      averaged.emplace_back(g, out.variables[r][k]);
    }
    std::unique_ptr<Optimizer> opt = make_optimizer();
    Scope apply = gate ? s.WithControlDependencies(gate(s, out.losses[r])) : s;
    SF_ASSIGN_OR_RETURN(Operation update, opt->ApplyGradients(apply, averaged));
    updates.push_back(update);
  }
  Scope root = scope.WithDevice(devices[0]);
  out.train_op = ops::NoOp(root.WithOpName("all_reduce_train").WithControlDependencies(updates));
  // Replica 0's values to every other replica (one broadcast per variable).
  std::vector<Operation> assigns;
  for (int64_t k = 0; k < num_vars && replicas > 1; ++k) {
    const Var& source = out.variables[0][k];
    const int64_t instance = num_vars + k + 1;
    Output sent = ops::CollectiveBcastSend(scopes[0].WithOpName(absl::StrCat("sync_send_", k)),
                                           source.value(), replicas, group_key, instance,
                                           source.shape());
    assigns.push_back(sent.op());
    for (int r = 1; r < replicas; ++r) {
      const Var& target = out.variables[r][k];
      Output got = ops::CollectiveBcastRecv(scopes[r].WithOpName(absl::StrCat("sync_recv_", k)),
                                            source.dtype(), source.shape(), replicas, group_key,
                                            instance);
      assigns.push_back(OpBuilder(scopes[r].WithOpName(absl::StrCat("sync_assign_", k)),
                                  "AssignVariableOp")
                            .Input(target.handle())
                            .Input(got)
                            .Finalize());
    }
  }
  out.sync_op = ops::NoOp(root.WithOpName("all_reduce_sync").WithControlDependencies(assigns));
  SF_RETURN_IF_ERROR(scope.status());
  return out;
}

}  // namespace shardflow
