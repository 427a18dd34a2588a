#include "tools/shardflow/train_graph.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/framework/device_name.h"
#include "core/platform/status.h"
#include "distributed/strategies/all_reduce.h"
#include "ops/nn_ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

ImageSpec SpecOf(const TrainConfig& c) {
  return c.synthetic ? SyntheticImageSpec(c.model) : ImageSpec();
}

absl::StatusOr<std::unique_ptr<Optimizer>> NewOptimizer(const TrainConfig& c) {
  double lr = c.lr > 0 ? c.lr : DefaultLearningRate(c.optimizer);
  if (c.optimizer == "sgd") return std::make_unique<GradientDescentOptimizer>(lr);
  if (c.optimizer == "momentum") return std::make_unique<MomentumOptimizer>(lr, 0.9);
  if (c.optimizer == "adam") return std::make_unique<AdamOptimizer>(lr);
  if (c.optimizer == "rmsprop") return std::make_unique<RMSPropOptimizer>(lr);
  if (c.optimizer == "adagrad") return std::make_unique<AdagradOptimizer>(lr);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", c.optimizer,
                   "'; --optimizer takes sgd, momentum, adam, rmsprop or adagrad"));
}

// Fails the step before any variable is updated when `loss` is not finite.
Output CheckedLoss(const Scope& s, const Output& loss) {
  return ops::Identity(s.WithOpName("loss_is_finite"),
                       Output(OpBuilder(s.WithOpName("check_loss"), "CheckNumerics")
                                  .Input(loss)
                                  .Attr("message", std::string("loss is not finite"))
                                  .Finalize()
                                  .node(),
                              0));
}

// Strategies allreduce and averaging: a replica per device of c.replica_devices
// (distributed/strategies/all_reduce.h).
absl::StatusOr<std::unique_ptr<TrainGraph>> BuildAllReduceTrainGraph(const TrainConfig& c) {
  auto g = std::make_unique<TrainGraph>();
  Scope& s = g->scope;
  SF_RETURN_IF_ERROR(NewOptimizer(c).status());
  g->learning_rate = ops::Placeholder(s.WithOpName("learning_rate"), DT_FLOAT, TensorShape());
  auto build = [&](const Scope& rs, int replica) -> absl::StatusOr<Output> {
    SF_ASSIGN_OR_RETURN(
        Model m, BuildModel(rs, c.model, c.seed,
                            c.replica_layer_devices.empty() ? std::vector<std::string>()
                                                            : c.replica_layer_devices[replica],
                            SpecOf(c)));
    g->replicas.push_back(m);
    return m.loss;
  };
  auto optimizer = [&]() -> std::unique_ptr<Optimizer> {
    auto opt = NewOptimizer(c);
    (*opt)->set_learning_rate(g->learning_rate);
    return std::move(opt).value();
  };
  AllReduceOptions options;
  options.gate = CheckedLoss;
  options.average_parameters = c.strategy == "averaging";
  options.bucket_bytes = c.bucket_bytes;
  if (c.compression == "fp16") options.compression = DT_HALF;
  if (c.compression == "bf16") options.compression = DT_BFLOAT16;
  const bool between = c.replication == "between-graph";
  if (between) options.between_graph_rank = static_cast<int>(c.task);
  SF_ASSIGN_OR_RETURN(AllReduceTraining dp,
                      BuildAllReduceTraining(s, c.replica_devices, build, optimizer, options));
  g->model = g->replicas[0];
  const std::string& home = c.replica_devices[between ? c.task : 0];
  Scope chief = s.WithDevice(home);
  g->mean_loss = ops::Mul(chief.WithOpName("mean_loss"),
                          ops::AddN(chief, std::vector<Input>(dp.losses.begin(), dp.losses.end())),
                          1.0f / static_cast<float>(dp.losses.size()));
  g->train_op = dp.train_op;
  g->sync_op = dp.sync_op;
  g->average_op = dp.average_op;
  g->predictions =
      ops::ArgMax(s.WithOpName("predictions").WithDevice(home), g->model.eval_logits, 1, DT_INT32);
  if (between) {
    // Where training stands, from the chief (which restored it) to every task, with the
    // variables' broadcast: one more instance of the group.
    const int group = static_cast<int>(c.replica_devices.size());
    const int64_t instance = int64_t{1} << 22;
    g->position_in =
        ops::Placeholder(chief.WithOpName("start_position"), DT_INT64, TensorShape({3}));
    g->position_out =
        c.task == 0
            ? ops::CollectiveBcastSend(chief.WithOpName("position_send"), g->position_in, group,
                                       options.group_key, instance, TensorShape({3}))
            : ops::CollectiveBcastRecv(chief.WithOpName("position_recv"), DT_INT64,
                                       TensorShape({3}), group, options.group_key, instance);
  }
  g->variables = AllVariables(s);
  g->init_op = InitializeAllVariables(s);
  SF_RETURN_IF_ERROR(s.status());
  return g;
}

// Strategies ps-async and ps-sync: this worker's model, the variables on the ps tasks
// (distributed/strategies/parameter_server.h).
absl::StatusOr<std::unique_ptr<TrainGraph>> BuildParameterServerTrainGraph(const TrainConfig& c) {
  auto g = std::make_unique<TrainGraph>();
  Scope& s = g->scope;
  SF_RETURN_IF_ERROR(NewOptimizer(c).status());
  g->learning_rate = ops::Placeholder(s.WithOpName("learning_rate").WithDevice(c.worker_device),
                                      DT_FLOAT, TensorShape());
  ParameterServerOptions o;
  o.ps_devices = c.ps_devices;
  o.worker_device = c.worker_device;
  o.sync = c.strategy == "ps-sync";
  o.replicas_to_aggregate = o.total_num_replicas = static_cast<int>(c.num_workers);
  o.gate = CheckedLoss;
  auto build = [&](const Scope& ws) -> absl::StatusOr<Output> {
    SF_ASSIGN_OR_RETURN(g->model, BuildModel(ws, c.model, c.seed, c.layer_devices, SpecOf(c)));
    return g->model.loss;
  };
  auto optimizer = [&]() -> std::unique_ptr<Optimizer> {
    auto opt = NewOptimizer(c);
    (*opt)->set_learning_rate(g->learning_rate);
    return std::move(opt).value();
  };
  SF_ASSIGN_OR_RETURN(g->ps, BuildParameterServerTraining(s, o, build, optimizer));
  g->parameter_servers = true;
  g->train_op = g->ps.train_op;
  g->predictions = ops::ArgMax(s.WithOpName("predictions").WithDevice(c.worker_device),
                               g->model.eval_logits, 1, DT_INT32);
  g->variables = AllVariables(s);
  g->init_op = InitializeAllVariables(s);
  SF_RETURN_IF_ERROR(s.status());
  return g;
}

}  // namespace

bool IsParameterServerStrategy(const std::string& strategy) {
  return strategy == "ps-async" || strategy == "ps-sync";
}

std::vector<std::string> TaskDevices(const std::string& task, int64_t n, const std::string& type) {
  std::vector<std::string> out;
  for (int64_t d = 0; d < n && n > 1; ++d)
    out.push_back(absl::StrCat(task, "/device:", type, ":", d));
  return out;
}

std::string ComputeDeviceType(const TrainConfig& c) { return c.device == "gpu" ? "GPU" : "CPU"; }

namespace {

// GPUs this process sees (a session's GPU devices with the default options), asked once.
int PhysicalGpus() {
  static const int count = [] {
    auto session = NewSession(SessionOptions());
    if (!session.ok()) return 0;
    auto devices = (*session)->ListDevices();
    if (!devices.ok()) return 0;
    int n = 0;
    for (const DeviceAttributes& d : *devices) n += d.device_type == kDeviceGpu;
    return n;
  }();
  return count;
}

}  // namespace

double DefaultLearningRate(const std::string& optimizer) {
  if (optimizer == "sgd") return 0.1;
  if (optimizer == "momentum" || optimizer == "adagrad") return 0.01;
  return 0.001;
}

double LearningRateAt(const TrainConfig& c, int64_t index, int64_t steps_per_epoch) {
  const double base = c.lr > 0 ? c.lr : DefaultLearningRate(c.optimizer);
  if (c.lr_decay != "cosine") return base;
  const double progress =
      static_cast<double>(index) / static_cast<double>(c.epochs * steps_per_epoch);
  return base * 0.5 * (1 + std::cos(M_PI * progress));
}

SessionOptions TrainSessionOptions(const TrainConfig& c) {
  SessionOptions options;
  options.config.set_intra_op_threads(static_cast<int>(c.threads));
  options.config.set_inter_op_threads(static_cast<int>(c.threads));
  options.config.set_cpu_device_count(static_cast<int>(c.devices));
  options.config.set_placement_policy(c.placement_policy);
  options.config.set_log_device_placement(c.log_placement);
  RewriterConfig* rewrite = options.config.mutable_rewrite_options();
  rewrite->set_disable_meta_optimizer(c.graph_optimizer == "off");
  if (c.precision == "bf16") rewrite->set_auto_mixed_precision_onednn_bfloat16(RewriterConfig::ON);
  if (c.device == "cpu") options.config.set_gpu_device_count(-1);
  // --device gpu --devices N on fewer than N GPUs: each GPU shows as several logical devices,
  // so that GPU:0..N-1 exist (they share their GPU's memory and stream).
  // Replicas and layers named on GPUs keep their ops without a GPU kernel (the initialisers'
  // RandomUniform) on their task's CPU.
  if (c.device == "gpu") options.config.set_allow_soft_placement(true);
  if (c.device == "gpu" && c.devices > 1) {
    const int gpus = PhysicalGpus();
    if (gpus > 0 && gpus < c.devices) {
      options.config.mutable_gpu_options()->set_virtual_devices_per_gpu(
          static_cast<int>((c.devices + gpus - 1) / gpus));
    }
  }
  return options;
}

absl::Status CheckDeviceChoice(const TrainConfig& c, const Session& session) {
  if (c.device == "cpu") return absl::OkStatus();
  SF_ASSIGN_OR_RETURN(std::vector<DeviceAttributes> devices, session.ListDevices());
  std::vector<std::string> gpus;
  for (const DeviceAttributes& d : devices) {
    if (d.device_type == kDeviceGpu) gpus.push_back(d.name);
  }
  if (!gpus.empty()) {
    absl::PrintF("GPU devices: %s (ops with a GPU kernel run on the first)\n",
                 absl::StrJoin(gpus, ", "));
    return absl::OkStatus();
  }
  if (c.device != "gpu") return absl::OkStatus();
  return absl::FailedPreconditionError(
      "--device gpu: the session has no GPU device (this build has no CUDA support, or CUDA "
      "found no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES); use --device cpu or auto");
}

Tensor Rows(const Tensor& t, int64_t begin, int64_t count) {
  TensorShape shape = t.shape();
  shape.set_dim(0, count);
  Tensor out(t.dtype(), shape);
  const size_t row = t.dim_size(0) > 0 ? t.TotalBytes() / t.dim_size(0) : 0;
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row, count * row);
  return out;
}

absl::StatusOr<std::unique_ptr<TrainGraph>> BuildTrainGraph(const TrainConfig& c) {
  if (c.strategy == "allreduce" || c.strategy == "averaging") return BuildAllReduceTrainGraph(c);
  if (IsParameterServerStrategy(c.strategy)) return BuildParameterServerTrainGraph(c);
  auto g = std::make_unique<TrainGraph>();
  Scope& s = g->scope;
  SF_ASSIGN_OR_RETURN(g->model, BuildModel(s, c.model, c.seed, c.layer_devices, SpecOf(c)));
  // A non-finite loss fails the step before any variable is updated.
  Output checked = CheckedLoss(s, g->model.loss);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> opt, NewOptimizer(c));
  g->learning_rate = ops::Placeholder(s.WithOpName("learning_rate"), DT_FLOAT, TensorShape());
  opt->set_learning_rate(g->learning_rate);
  SF_ASSIGN_OR_RETURN(g->train_op,
                      opt->Minimize(s.WithControlDependencies(checked), g->model.loss));
  g->predictions = ops::ArgMax(s.WithOpName("predictions"), g->model.eval_logits, 1, DT_INT32);
  g->variables = AllVariables(s);
  g->init_op = InitializeAllVariables(s);
  SF_RETURN_IF_ERROR(s.status());
  return g;
}

}  // namespace shardflow
