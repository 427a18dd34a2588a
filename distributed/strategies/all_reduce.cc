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

// Note [Gradient buckets] in all_reduce.h: indices of `grads`, last first, grouped by dtype into
// buckets of at most `bucket_bytes` (0: one per gradient). Gradients that do not exist (the loss
// does not depend on the variable) or whose shape is not fully known go alone or nowhere.
struct Bucket {
  std::vector<int64_t> vars;
};

std::vector<Bucket> Buckets(const std::vector<Output>& grads, int64_t bucket_bytes) {
  std::vector<Bucket> out;
  int64_t bytes = 0;
  DataType dtype = DT_INVALID;
  for (int64_t k = static_cast<int64_t>(grads.size()) - 1; k >= 0; --k) {
    if (!grads[k].node()) continue;
    const TensorShape& shape = grads[k].shape();
    const bool known = shape.IsFullyDefined();
    const int64_t size = known ? shape.num_elements() * DataTypeSize(grads[k].dtype()) : 0;
    const bool fits = known && bucket_bytes > 0 && !out.empty() && dtype == grads[k].dtype() &&
                      bytes + size <= bucket_bytes;
    if (fits) {
      out.back().vars.push_back(k);
      bytes += size;
    } else {
      out.push_back(Bucket{{k}});
      bytes = known ? size : bucket_bytes + 1;  // an unknown shape stays alone
      dtype = grads[k].dtype();
    }
  }
  return out;
}

const std::string& VariableDevice(const Var& v) { return v.info().handle->requested_device(); }

}  // namespace

absl::StatusOr<AllReduceTraining> BuildAllReduceTraining(const Scope& scope,
                                                         const std::vector<std::string>& devices,
                                                         const ReplicaBuilder& build,
                                                         const OptimizerFactory& make_optimizer,
                                                         const AllReduceOptions& options) {
  const int64_t group_key = options.group_key;
  if (devices.empty()) {
    return absl::InvalidArgumentError("all-reduce training needs at least one replica device");
  }
  if (options.compression != DT_INVALID && options.compression != DT_HALF &&
      options.compression != DT_BFLOAT16) {
    return absl::InvalidArgumentError(
        absl::StrCat("all-reduce compression must be half or bfloat16 (or none), not ",
                     DataTypeString(options.compression)));
  }
  const int group = static_cast<int>(devices.size());  // the group's size: every replica
  const int self = options.between_graph_rank;
  if (self >= group) {
    return absl::InvalidArgumentError(absl::StrCat("between_graph_rank ", self, " is not below ",
                                                   group, ", the number of replica devices"));
  }
  // The replicas built here: every one (in-graph), or this task's (between-graph).
  std::vector<int> ranks;
  for (int r = 0; r < group; ++r) {
    if (self < 0 || r == self) ranks.push_back(r);
  }
  const int local = static_cast<int>(ranks.size());
  AllReduceTraining out;
  std::vector<Scope> scopes;
  for (int i = 0; i < local; ++i) {
    const int r = ranks[i];
    Scope s =
        (i == 0 ? scope : scope.NewSubScope(absl::StrCat("replica_", r))).WithDevice(devices[r]);
    std::vector<Var> before = AllVariables(scope, /*trainable_only=*/true);
    SF_ASSIGN_OR_RETURN(Output loss, build(s, r));
    SF_RETURN_IF_ERROR(scope.status());
    std::vector<Var> vars = NewVariables(before, AllVariables(scope, /*trainable_only=*/true));
    if (i > 0) {
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
              " but replica 0's '", first[k].name(), "' is ", DataTypeString(first[k].dtype()), " ",
              first[k].shape().DebugString(), ": every replica must build the same model"));
        }
      }
    }
    out.losses.push_back(loss);
    out.variables.push_back(std::move(vars));
    scopes.push_back(s);
  }
  const int64_t num_vars = static_cast<int64_t>(out.variables[0].size());
  std::vector<Operation> updates;
  std::vector<std::vector<Var>> to_average;  // per local replica
  for (int i = 0; i < local; ++i) {
    const Scope& s = scopes[i];
    std::vector<Output> xs;
    for (const Var& v : out.variables[i]) xs.push_back(v.value());
    std::vector<Output> grads;
    SF_RETURN_IF_ERROR(AddGradients(s, {out.losses[i]}, xs, &grads));
    std::vector<Output> reduced(num_vars);
    if (group == 1 || options.average_parameters) {
      reduced = grads;
    } else {
      // The mean across replicas; a float32 bucket travels as options.compression if set.
      auto mean = [&](const Scope& bs, const Output& x, int64_t instance) -> Output {
        const bool compress = options.compression != DT_INVALID && x.dtype() == DT_FLOAT;
        Output wire = compress ? ops::Cast(bs, x, options.compression) : x;
        Output r = ops::CollectiveReduce(bs, wire, group, group_key, instance, "Add", "Div");
        return compress ? ops::Cast(bs, r, DT_FLOAT) : r;
      };
      std::vector<Bucket> buckets = Buckets(grads, options.bucket_bytes);
      for (size_t b_index = 0; b_index < buckets.size(); ++b_index) {
        const Bucket& b = buckets[b_index];
        Scope bs = s.NewSubScope(absl::StrCat("allreduce_bucket_", b_index));
        const int64_t instance = static_cast<int64_t>(b_index) + 1;
        if (b.vars.size() == 1) {
          reduced[b.vars[0]] = mean(bs, grads[b.vars[0]], instance);
          continue;
        }
        std::vector<Input> flat;
        for (int64_t k : b.vars) flat.push_back(ops::Reshape(bs, grads[k], {-1}));
        Output fused = mean(bs, ops::Concat(bs, flat, 0), instance);
        int64_t offset = 0;
        for (int64_t k : b.vars) {
          const TensorShape& shape = out.variables[i][k].shape();
          const int64_t n = shape.num_elements();
          std::vector<int32_t> dims;
          for (int d = 0; d < shape.rank(); ++d) dims.push_back(static_cast<int32_t>(shape.dim(d)));
          reduced[k] = ops::Reshape(
              bs, ops::Slice(bs, fused, {static_cast<int32_t>(offset)}, {static_cast<int32_t>(n)}),
              ops::Const(bs, Tensor::FromVector<int32_t>(dims, TensorShape({shape.rank()}))));
          offset += n;
        }
      }
    }
    std::vector<std::pair<Output, Var>> averaged;
    for (int64_t k = 0; k < num_vars; ++k) {
      if (!reduced[k].node()) continue;  // the loss does not depend on it
      averaged.emplace_back(reduced[k], out.variables[i][k]);
    }
    std::unique_ptr<Optimizer> opt = make_optimizer();
    Scope apply = options.gate ? s.WithControlDependencies(options.gate(s, out.losses[i])) : s;
    std::vector<Var> before = AllVariables(scope);
    SF_ASSIGN_OR_RETURN(Operation update, opt->ApplyGradients(apply, averaged));
    updates.push_back(update);
    // What parameter averaging averages: the trainable variables, then the optimizer's state.
    std::vector<Var> averaged_vars = out.variables[i];
    if (options.average_optimizer_state) {
      for (const Var& v : NewVariables(before, AllVariables(scope))) averaged_vars.push_back(v);
    }
    to_average.push_back(std::move(averaged_vars));
  }
  const std::string& home = devices[ranks[0]];  // where the ops of the whole group go
  if (options.average_parameters && group > 1) {
    std::vector<Operation> assigns;
    for (size_t k = 0; k < to_average[0].size(); ++k) {
      const Var& first = to_average[0][k];
      for (int i = 0; i < local; ++i) {
        if (to_average[i].size() != to_average[0].size() ||
            to_average[i][k].shape() != first.shape() ||
            to_average[i][k].dtype() != first.dtype()) {
          return absl::InvalidArgumentError(
              absl::StrCat("replica ", ranks[i], "'s optimizer state differs from replica 0's ",
                           "(variable ", k, "): every replica must use the same optimizer"));
        }
        const Var& v = to_average[i][k];
        Scope vs = scopes[i].NewSubScope(absl::StrCat("average_", k));
        Output mean =
            ops::CollectiveReduce(vs, v.value(), group, group_key,
                                  (int64_t{1} << 21) + static_cast<int64_t>(k), "Add", "Div");
        // Where the variable lives (a device of the replica's task when its layers are split).
        assigns.push_back(
            OpBuilder(vs.WithOpName("assign").WithDevice(VariableDevice(v)), "AssignVariableOp")
                .Input(v.handle())
                .Input(mean)
                .Finalize());
      }
    }
    out.average_op = ops::NoOp(
        scope.WithDevice(home).WithOpName("average_parameters").WithControlDependencies(assigns));
  }
  Scope root = scope.WithDevice(home);
  out.train_op = ops::NoOp(root.WithOpName("all_reduce_train").WithControlDependencies(updates));
  // Replica 0's values to every other replica (one broadcast per variable).
  std::vector<Operation> assigns;
  for (int64_t k = 0; k < num_vars && group > 1; ++k) {
    const Var& local_first = out.variables[0][k];
    const int64_t instance = (int64_t{1} << 20) + k;
    for (int i = 0; i < local; ++i) {
      const Var& v = out.variables[i][k];
      if (ranks[i] == 0) {
        assigns.push_back(
            ops::CollectiveBcastSend(scopes[i].WithOpName(absl::StrCat("sync_send_", k)), v.value(),
                                     group, group_key, instance, v.shape())
                .op());
        continue;
      }
      Output got = ops::CollectiveBcastRecv(scopes[i].WithOpName(absl::StrCat("sync_recv_", k)),
                                            local_first.dtype(), local_first.shape(), group,
                                            group_key, instance);
      assigns.push_back(
          OpBuilder(
              scopes[i].WithOpName(absl::StrCat("sync_assign_", k)).WithDevice(VariableDevice(v)),
              "AssignVariableOp")
              .Input(v.handle())
              .Input(got)
              .Finalize());
    }
  }
  out.sync_op = ops::NoOp(root.WithOpName("all_reduce_sync").WithControlDependencies(assigns));
  SF_RETURN_IF_ERROR(scope.status());
  return out;
}

}  // namespace shardflow
