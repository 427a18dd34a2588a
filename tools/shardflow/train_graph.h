// What `shardflow train` runs: its configuration (the flags), the training graph of each
// strategy (one model, all-reduce or averaging replicas, parameter-server workers) and where
// training stands. Used by train.cc (the loop) and train_ps.cc (parameter-server workers).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_GRAPH_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/fashion_mnist.h"
#include "distributed/strategies/parameter_server.h"
#include "ops/training.h"
#include "runtime/saver.h"
#include "runtime/session.h"
#include "tools/shardflow/cluster_flags.h"
#include "tools/shardflow/models.h"

namespace shardflow {

struct TrainConfig {
  std::string model = "cnn";
  // Train on one fixed batch of random images (train_synthetic.h) instead of Fashion-MNIST.
  bool synthetic = false;
  // "on" (default) or "off": the graph optimizer (docs/optimizer.md), off for A/B measurements.
  std::string graph_optimizer = "on";
  // "fp32" (default) or "bf16": matrix products and convolutions on bfloat16 inputs, fp32 master
  // weights (the optimizer's auto_mixed_precision_onednn_bfloat16 pass).
  std::string precision = "fp32";
  // "auto" (default: every op with a GPU kernel on GPU:0 when the machine has a GPU), "gpu"
  // (the same, and an error without a GPU) or "cpu" (no GPU device). docs/gpu.md.
  std::string device = "auto";
  int64_t batch_size = 64;
  int64_t epochs = 2;
  std::string optimizer = "adam";
  double lr = 0;  // 0: the optimizer's default
  int64_t threads = 0;
  std::string checkpoint_dir = "checkpoints";
  int64_t checkpoint_every_steps = 0;  // 0: off
  double checkpoint_every_secs = 600;  // 0: off
  int64_t keep_checkpoints = 5;
  bool resume = false;
  bool auto_resume = false;  // resume when --checkpoint-dir has a checkpoint
  int64_t seed = 1;
  std::string data_dir = kDefaultFashionMnistDir;
  int64_t max_steps = 0;
  std::string trace_dir;
  bool progress = true;
  std::string lr_decay = "cosine";
  int64_t profile_step = 0;
  int64_t devices = 1;
  std::string placement_policy = "constraints";
  bool log_placement = false;
  ClusterFlags cluster;
  // "none" (one model; with --cluster or --devices, split across them) or "allreduce" (one
  // replica per task of --cluster, or per device of --devices; gradients averaged).
  std::string strategy = "none";
  // With --cluster: this process's own task (-1: none, the process only drives the cluster's
  // `shardflow server` tasks). Task 0 of the job trains; the others serve until it is done.
  std::string job = "worker";
  int64_t task = -1;
  // Strategy averaging: steps between parameter averages.
  int64_t average_every = 10;
  // Strategy allreduce: the largest fused all-reduce (distributed/strategies/all_reduce.h,
  // Note [Gradient buckets]) and the gradients' precision on the wire: none, fp16 or bf16.
  int64_t bucket_bytes = 4 << 20;
  std::string compression = "none";
  // Strategies allreduce and averaging with --task: "in-graph" (task 0 drives every replica
  // from one graph; the others serve) or "between-graph" (every task trains its own replica
  // from its own graph; only gradients or parameters cross tasks).
  std::string replication = "in-graph";
  // Filled from --cluster: the task of every model layer, in turn (strategy none).
  std::vector<std::string> layer_devices;
  // Filled for strategies allreduce and averaging: the device of every replica and, with
  // --cluster and --devices N > 1, the devices its layers are split over (model parallelism
  // inside a replica).
  std::vector<std::string> replica_devices;
  std::vector<std::vector<std::string>> replica_layer_devices;
  // Filled for strategies ps-async and ps-sync: the ps tasks' devices, this worker's, and the
  // number of workers.
  std::vector<std::string> ps_devices;
  std::string worker_device;
  int64_t num_workers = 1;
  // Trace every step and write its time split (train_report.h) as a JSON line here.
  std::string step_stats;
};

bool IsParameterServerStrategy(const std::string& strategy);

// The devices of `task` ("/job:worker/replica:0/task:1") a replica's layers go to with
// --devices n: CPU:0..n-1 (GPU:0..n-1 with type "GPU"), or none (the replica's device) for n = 1.
std::vector<std::string> TaskDevices(const std::string& task, int64_t n,
                                     const std::string& type = "CPU");
// The device type of the devices the tool names itself (replicas, layers, a ps worker's
// compute): "GPU" with --device gpu, else "CPU" (--device auto leaves ops on GPU:0 only through
// the placer's default).
std::string ComputeDeviceType(const TrainConfig& c);

double DefaultLearningRate(const std::string& optimizer);

// The learning rate of global batch `index` (0-based) of the run: --lr, with cosine decay to 0
// over every step of --epochs (epoch-exact, so --resume agrees).
double LearningRateAt(const TrainConfig& c, int64_t index, int64_t steps_per_epoch);

// Everything the training loop runs.
struct TrainGraph {
  Scope scope = Scope::NewRootScope();
  Model model;
  Operation train_op;
  Operation init_op;
  Output learning_rate;  // float scalar placeholder, fed every step
  Output predictions;
  std::vector<Var> variables;    // every variable, optimizer slots included
  std::unique_ptr<Saver> saver;  // set by Train once the graph is a GraphDef
  // Strategy allreduce: every replica's model (model is replicas[0]), their mean loss, and the
  // op that copies replica 0's variables to the others (after init or restore).
  std::vector<Model> replicas;
  Output mean_loss;
  Operation sync_op;
  Operation average_op;  // strategy averaging
  // Between-graph replication: the chief's Position [epoch, step, global_step] (int64, fed to
  // position_in on task 0) reaches every task as position_out, in the sync_op's step.
  Output position_in;
  Output position_out;
  // Strategies ps-async and ps-sync: this worker's graph (its train_op is train_op).
  bool parameter_servers = false;
  ParameterServerTraining ps;
};

// Where training stands: `epoch` epochs are complete, and `step` batches of the next one.
struct Position {
  int64_t epoch = 0;
  int64_t step = 0;
  int64_t global_step = 0;
};

// Rows [begin, begin + count) of `t` (dimension 0), copied.
Tensor Rows(const Tensor& t, int64_t begin, int64_t count);

// The session options of a training run: threads, devices, placement, the graph optimizer and
// the precision.
SessionOptions TrainSessionOptions(const TrainConfig& c);
// --device gpu on a session without a GPU device: an error saying why there is none.
absl::Status CheckDeviceChoice(const TrainConfig& c, const Session& session);

// The graph of c.strategy. Errors: an unknown --optimizer or --model, the strategy's errors.
absl::StatusOr<std::unique_ptr<TrainGraph>> BuildTrainGraph(const TrainConfig& c);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_GRAPH_H_
