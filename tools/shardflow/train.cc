#include "tools/shardflow/train.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/platform/status.h"
#include "datasets/batch_iterator.h"
#include "datasets/fashion_mnist.h"
#include "distributed/peer_watch.h"
#include "runtime/checkpoint.h"
#include "runtime/device.h"
#include "runtime/saver.h"
#include "runtime/session.h"
#include "tools/shardflow/checkpoint_series.h"
#include "tools/shardflow/cluster_flags.h"
#include "tools/shardflow/flags.h"
#include "tools/shardflow/models.h"
#include "tools/shardflow/npy.h"
#include "tools/shardflow/task_server.h"
#include "tools/shardflow/train_graph.h"
#include "tools/shardflow/train_ps.h"
#include "tools/shardflow/train_report.h"
#include "tools/shardflow/train_synthetic.h"

namespace shardflow {
namespace {

absl::StatusOr<double> Evaluate(Session* session, const TrainGraph& g, const Dataset& test) {
  BatchIteratorOptions o;
  o.batch_size = 1000;
  o.shuffle = false;
  o.num_epochs = 1;
  o.layout = g.model.image_layout ? ImageLayout::kImage : ImageLayout::kFlat;
  SF_ASSIGN_OR_RETURN(auto it, BatchIterator::Create(test, o));
  int64_t correct = 0, total = 0;
  while (true) {
    auto batch = it->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    SF_RETURN_IF_ERROR(batch.status());
    std::vector<Tensor> out;
    SF_RETURN_IF_ERROR(
        session->Run({{g.model.images.name(), batch->images}}, {g.predictions.name()}, {}, &out));
    for (int64_t i = 0; i < batch->labels.NumElements(); ++i) {
      correct += out[0].data<int32_t>()[i] == batch->labels.data<int32_t>()[i];
    }
    total += batch->labels.NumElements();
  }
  return static_cast<double>(correct) / static_cast<double>(total);
}

// Writes a checkpoint of every variable and of `at` and adds it to the series. Besides the
// variables it holds _meta/model (the --model name), _meta/epoch and _meta/epoch_step (a
// Position), _meta/global_step and _meta/batch_size (the batches _meta/epoch_step counts).
// model.ckpt of earlier versions has no epoch_step and no batch_size: it was written at an epoch
// end, or at --max-steps, where resuming restarted the epoch.
absl::Status SaveTo(Session* session, const TrainGraph& g, const TrainConfig& c,
                    CheckpointSeries* series, const Position& at) {
  Tensor model(DT_STRING, TensorShape());
  model.data<std::string>()[0] = c.model;
  std::error_code ec;
  std::filesystem::create_directories(c.checkpoint_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create --checkpoint-dir '", c.checkpoint_dir, "': ", ec.message()));
  }
  SF_RETURN_IF_ERROR(g.saver->Save(session, series->PathFor(at.global_step),
                                   {{"_meta/model", model},
                                    {"_meta/epoch", Tensor::Scalar<int64_t>(at.epoch)},
                                    {"_meta/epoch_step", Tensor::Scalar<int64_t>(at.step)},
                                    {"_meta/global_step", Tensor::Scalar<int64_t>(at.global_step)},
                                    {"_meta/batch_size", Tensor::Scalar<int64_t>(c.batch_size)}}));
  return series->Commit(at.global_step);
}

struct Resumed {
  std::string path;
  Position at;
  int64_t batch_size = 0;  // 0: not recorded (model.ckpt of earlier versions)
};

// Restores the variables from the latest loadable checkpoint of the series. A checkpoint that
// cannot be read (missing, truncated, a checksum mismatch) is skipped for the one before it,
// with a warning naming it; one that reads but does not fit (another --model or --optimizer) is
// an error, as every older one would fit no better.
absl::StatusOr<Resumed> RestoreFrom(Session* session, const TrainGraph& g, const TrainConfig& c,
                                    CheckpointSeries* series) {
  std::string note;
  std::vector<std::string> candidates = series->ResumeCandidates(&note);
  if (!note.empty()) std::fprintf(stderr, "warning: %s\n", note.c_str());
  if (candidates.empty()) {
    return absl::NotFoundError(
        absl::StrCat("--resume found no checkpoint in --checkpoint-dir '", c.checkpoint_dir,
                     "' (no index '", CheckpointSeries::kIndexName,
                     "', no model.ckpt-<step>, no model.ckpt); train without "
                     "--resume to start, or pass the --checkpoint-dir of an earlier run"));
  }
  std::vector<std::string> unreadable;
  for (const std::string& path : candidates) {
    absl::StatusOr<NamedTensors> loaded = LoadCheckpoint(path);
    if (!loaded.ok()) {
      unreadable.push_back(std::string(loaded.status().message()));
      continue;
    }
    // The model name is checked first: it gives the clearest message for the commonest mistake.
    std::string model;
    for (const auto& [name, t] : *loaded) {
      if (name == "_meta/model") model = t.data<std::string>()[0];
    }
    if (model != c.model) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint '", path, "' was written for --model ",
                       model.empty() ? "<unknown>" : model, " but this run trains --model ",
                       c.model, "; pass the same --model, or another --checkpoint-dir"));
    }
    auto meta = g.saver->Restore(session, *loaded, path);
    if (!meta.ok()) {
      return WithContext(meta.status(), absl::StrCat("with --optimizer ", c.optimizer, ": "));
    }
    Resumed r;
    r.path = path;
    for (const auto& [name, t] : *meta) {
      if (name == "_meta/epoch") r.at.epoch = t.scalar<int64_t>();
      if (name == "_meta/epoch_step") r.at.step = t.scalar<int64_t>();
      if (name == "_meta/global_step") r.at.global_step = t.scalar<int64_t>();
      if (name == "_meta/batch_size") r.batch_size = t.scalar<int64_t>();
    }
    if (!unreadable.empty()) {
      std::fprintf(stderr,
                   "warning: skipped %zu unreadable checkpoint(s): %s; resuming from '%s'\n",
                   unreadable.size(), absl::StrJoin(unreadable, "; ").c_str(), path.c_str());
    }
    series->ContinueAfter(path);
    return r;
  }
  return absl::DataLossError(absl::StrCat(
      "--resume found no readable checkpoint in --checkpoint-dir '", c.checkpoint_dir,
      "': ", absl::StrJoin(unreadable, "; "),
      ". Restore the directory from a backup, or move it away and train without --resume"));
}

// Where this run starts: the beginning, or with --resume the position of the checkpoint it
// restored (in batches of this run's --batch-size), printed; *saved_step becomes that
// checkpoint's step when it belongs to the series (not a model.ckpt of earlier versions).
absl::StatusOr<Position> StartingPosition(Session* session, const TrainGraph& g,
                                          const TrainConfig& c, int64_t steps_per_epoch,
                                          CheckpointSeries* series, int64_t* saved_step) {
  std::vector<std::string> earlier;
  const bool have_earlier =
      CheckpointSeries::ReadIndex(c.checkpoint_dir, &earlier).ok() && !earlier.empty();
  if (!c.resume && !(c.auto_resume && have_earlier)) {
    if (c.auto_resume) {
      std::printf("--auto-resume: no checkpoint in '%s' yet; starting\n", c.checkpoint_dir.c_str());
    } else if (have_earlier) {
      std::fprintf(
          stderr,
          "note: --checkpoint-dir '%s' holds the checkpoints of an earlier run (latest "
          "%s); this run's first checkpoint replaces them (pass --resume to continue it)\n",
          c.checkpoint_dir.c_str(), earlier.back().c_str());
    }
    return Position();
  }
  SF_ASSIGN_OR_RETURN(Resumed r, RestoreFrom(session, g, c, series));
  Position at = r.at;
  if (r.path != absl::StrCat(c.checkpoint_dir, "/", CheckpointSeries::kLegacyName)) {
    *saved_step = at.global_step;
  }
  if (r.batch_size != 0 && r.batch_size != c.batch_size && at.step > 0) {
    std::printf(
        "the checkpoint counted batches of %lld; its %lld examples into epoch %lld are "
        "%lld batches of %lld\n",
        static_cast<long long>(r.batch_size), static_cast<long long>(at.step * r.batch_size),
        static_cast<long long>(at.epoch + 1),
        static_cast<long long>(at.step * r.batch_size / c.batch_size),
        static_cast<long long>(c.batch_size));
    at.step = at.step * r.batch_size / c.batch_size;
  }
  if (steps_per_epoch > 0 && at.step >= steps_per_epoch) at = {at.epoch + 1, 0, at.global_step};
  std::printf("resumed from %s: %lld epoch(s), %lld steps done", r.path.c_str(),
              static_cast<long long>(at.epoch), static_cast<long long>(at.global_step));
  if (at.step > 0) {
    std::printf(", continuing epoch %lld at step %lld/%lld", static_cast<long long>(at.epoch + 1),
                static_cast<long long>(at.step + 1), static_cast<long long>(steps_per_epoch));
  }
  std::printf("\n");
  if (at.epoch >= c.epochs) {
    std::printf("nothing to do: --epochs %lld already reached\n", static_cast<long long>(c.epochs));
  }
  return at;
}

// Re-runs a step whose loss was not finite with check_numerics, to name the first op that
// produced a non-finite value (the failed step updated nothing).
std::string DiagnoseNonFinite(Session* session, const TrainGraph& g,
                              const std::vector<std::pair<std::string, Tensor>>& feeds) {
  RunOptions opts;
  opts.set_check_numerics(true);
  std::vector<Tensor> out;
  std::vector<std::pair<std::string, Tensor>> forward;
  for (const auto& f : feeds) {
    if (f.first != g.learning_rate.name()) forward.push_back(f);
  }
  absl::Status st = session->Run(opts, forward, {g.model.loss.name()}, {}, &out, nullptr);
  return st.ok() ? std::string("no op produced a non-finite value when the step was re-run")
                 : std::string(st.message());
}

// The flags' values, checked before this process serves its task (a bad flag given to every
// task of a job must not leave servers up that wait for a chief that already exited).
absl::Status CheckTrainFlags(const TrainConfig& c, bool ps_strategy) {
  if (c.batch_size <= 0) return absl::InvalidArgumentError("--batch-size must be positive");
  if (c.epochs <= 0) return absl::InvalidArgumentError("--epochs must be positive");
  if (c.threads < 0) return absl::InvalidArgumentError("--threads must be >= 0 (0 = all cores)");
  if (c.devices < 1) return absl::InvalidArgumentError("--devices must be at least 1");
  if (c.graph_optimizer != "on" && c.graph_optimizer != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --graph-optimizer '", c.graph_optimizer, "'; it takes on or off"));
  }
  if (c.precision != "fp32" && c.precision != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --precision '", c.precision, "'; it takes fp32 or bf16"));
  }
  if (c.device != "auto" && c.device != "gpu" && c.device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --device '", c.device, "'; it takes auto, gpu or cpu"));
  }
  if (c.precision == "bf16" && c.graph_optimizer == "off") {
    return absl::InvalidArgumentError(
        "--precision bf16 is a pass of the graph optimizer: leave out --graph-optimizer off");
  }
  if (c.lr_decay != "cosine" && c.lr_decay != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --lr-decay '", c.lr_decay, "'; it takes cosine or none"));
  }
  if (c.checkpoint_every_steps < 0 || c.checkpoint_every_secs < 0) {
    return absl::InvalidArgumentError(
        "--checkpoint-every-steps and --checkpoint-every-secs must be >= 0 (0 = off)");
  }
  if (c.keep_checkpoints < 1) {
    return absl::InvalidArgumentError("--keep-checkpoints must be at least 1");
  }
  if (c.strategy != "none" && c.strategy != "allreduce" && c.strategy != "averaging" &&
      !ps_strategy) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --strategy '", c.strategy,
                     "'; it takes none, allreduce, averaging, ps-async or ps-sync"));
  }
  if (c.average_every < 1) {
    return absl::InvalidArgumentError("--average-every must be at least 1 (steps)");
  }
  if (c.bucket_bytes < 0) {
    return absl::InvalidArgumentError(
        "--bucket-bytes must be >= 0 (0: one all-reduce per gradient)");
  }
  if (c.compression != "none" && c.compression != "fp16" && c.compression != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --compression '", c.compression, "'; it takes none, fp16 or bf16"));
  }
  return absl::OkStatus();
}

// The flags every task of a job must share, as the labels its server publishes
// (GetStatusResponse.labels): tasks started with different ones would hang in a collective
// whose tensors disagree, or train different replicas without a word.
std::map<std::string, std::string> SharedTrainFlags(const TrainConfig& c) {
  return {{"--strategy", c.strategy},
          {"--replication", c.replication},
          {"--model", c.model},
          {"--synthetic", c.synthetic ? "true" : "false"},
          {"--batch-size", absl::StrCat(c.batch_size)},
          {"--epochs", absl::StrCat(c.epochs)},
          {"--max-steps", absl::StrCat(c.max_steps)},
          {"--optimizer", c.optimizer},
          {"--lr", absl::StrCat(c.lr)},
          {"--lr-decay", c.lr_decay},
          {"--seed", absl::StrCat(c.seed)},
          {"--precision", c.precision},
          {"--devices", absl::StrCat(c.devices)},
          {"--average-every", absl::StrCat(c.average_every)},
          {"--bucket-bytes", absl::StrCat(c.bucket_bytes)},
          {"--compression", c.compression}};
}

absl::Status Train(TrainConfig c) {
  // --cluster auto: this process is the task its launcher says (mpirun, srun, ...).
  if (c.cluster.is_auto()) SF_RETURN_IF_ERROR(c.cluster.ResolveAuto(&c.job, &c.task));
  SF_ASSIGN_OR_RETURN(c.layer_devices, c.cluster.Tasks());
  if (c.layer_devices.empty() && c.strategy == "none") {
    // One model split by layer over this process's --devices N (as `shardflow profile`); it
    // halved the threads and put every node on device 0.
    c.layer_devices = TaskDevices("", c.devices, ComputeDeviceType(c));
  }
  const bool ps_strategy = IsParameterServerStrategy(c.strategy);
  if (ps_strategy) SF_RETURN_IF_ERROR(SetUpParameterServerWorker(&c));
  if (c.replication != "in-graph" && c.replication != "between-graph") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --replication '", c.replication,
                                                   "'; it takes in-graph or between-graph"));
  }
  // Every task trains its own replica from its own graph (Note [Between-graph groups]).
  const bool between = c.replication == "between-graph";
  if (between && (c.task < 0 || (c.strategy != "allreduce" && c.strategy != "averaging"))) {
    return absl::InvalidArgumentError(
        "--replication between-graph needs --strategy allreduce or averaging and --cluster with "
        "--task N (one training process per task)");
  }
  SF_RETURN_IF_ERROR(CheckTrainFlags(c, ps_strategy));
  if (!ps_strategy && c.task >= 0) {
    // One job: its task 0 is the chief and the task index is the replica's rank. Task 0 of a
    // second job (TF_CONFIG's "chief" or "ps") would train as a second chief beside it.
    SF_ASSIGN_OR_RETURN(ClusterSpec spec, c.cluster.Spec());
    if (spec.jobs().size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategy ", c.strategy,
          " trains on the tasks of one job (task 0 is the chief), "
          "but the cluster ",
          c.cluster.is_auto() ? "the launcher gave" : c.cluster.cluster, " has jobs [",
          absl::StrJoin(spec.jobs(), ", "),
          "]: list every task in one job (the chief as task 0 of \"worker\", TF1's convention), "
          "or use --strategy ps-sync|ps-async for a cluster with \"ps\" and \"worker\" jobs"));
    }
  }
  // One process per task (--job/--task): serve this task. Only the chief (task 0) goes on, or
  // with parameter servers every worker (a ps task serves until the workers are done).
  std::unique_ptr<Server> own_task;  // declared first: it outlives the session below
  // A task other than the chief serves until the chief says the job is done.
  auto serve_until_chief_is_done = [&]() -> absl::Status {
    SF_ASSIGN_OR_RETURN(ClusterSpec spec, c.cluster.Spec());
    return ServeUntilTasksLeave(own_task.get(), spec, {{c.job, 0}}, c.cluster.Security(),
                                absl::Minutes(5), absl::Seconds(3));
  };
  if (c.task >= 0) {
    if (c.cluster.cluster.empty()) {
      return absl::InvalidArgumentError("--task N needs --cluster FILE (the tasks' addresses)");
    }
    const std::map<std::string, std::string> shared = SharedTrainFlags(c);
    SF_ASSIGN_OR_RETURN(own_task, StartTaskServer(c.cluster, c.job, static_cast<int>(c.task),
                                                  static_cast<int>(c.threads),
                                                  static_cast<int>(c.devices), shared));
    // The other tasks' processes may start a little after this one (a launcher starts them
    // all at once, not in order).
    c.cluster.connect_timeout = absl::Seconds(60);
    SF_ASSIGN_OR_RETURN(ClusterSpec spec, c.cluster.Spec());
    // Before anything waits on a peer: its flags must be this task's (a ps task's only its
    // --strategy).
    SF_RETURN_IF_ERROR(CheckPeersAgree(c.cluster, spec, {c.job, static_cast<int>(c.task)}, shared,
                                       {"train --strategy"}, absl::Seconds(60)));
    if (ps_strategy && c.job == "ps") {
      std::vector<TaskId> workers;
      for (int t = 0; t < spec.num_tasks("worker"); ++t) workers.push_back({"worker", t});
      return ServeUntilTasksLeave(own_task.get(), spec, workers, c.cluster.Security(),
                                  absl::Minutes(5), absl::Seconds(3));
    }
    if (!ps_strategy && !between && c.task != 0) return serve_until_chief_is_done();
  }
  if (c.synthetic) return TrainSynthetic(c);
  // Strategy allreduce: a replica per task of --cluster, else per device of --devices; each
  // replica trains on its own --batch-size examples of every step's global batch.
  const int64_t per_replica_batch = c.batch_size;
  if (c.strategy == "allreduce" || c.strategy == "averaging") {
    if (!c.layer_devices.empty()) {
      // A replica per task; with --devices N its layers are split over the task's N devices.
      for (const std::string& task : c.layer_devices) {
        c.replica_devices.push_back(absl::StrCat(task, "/device:", ComputeDeviceType(c), ":0"));
        c.replica_layer_devices.push_back(TaskDevices(task, c.devices, ComputeDeviceType(c)));
      }
    } else {
      for (int64_t r = 0; r < c.devices; ++r) {
        c.replica_devices.push_back(
            absl::StrCat("/job:localhost/replica:0/task:0/device:", ComputeDeviceType(c), ":", r));
      }
    }
    c.layer_devices.clear();
    c.batch_size *= static_cast<int64_t>(c.replica_devices.size());  // the global batch
  }
  if (ps_strategy) {
    // With --devices N each worker's layers are split over its task's N devices.
    c.layer_devices = TaskDevices(c.worker_device.substr(0, c.worker_device.find("/device:")),
                                  c.devices, ComputeDeviceType(c));
    c.batch_size *= c.num_workers;  // the global batch: each worker takes its rows of it
  }
  SF_ASSIGN_OR_RETURN(Dataset train, LoadFashionMnist(c.data_dir, Split::kTrain));
  SF_ASSIGN_OR_RETURN(Dataset test, LoadFashionMnist(c.data_dir, Split::kTest));
  SF_ASSIGN_OR_RETURN(std::unique_ptr<TrainGraph> g, BuildTrainGraph(c));
  GraphDef def;
  SF_RETURN_IF_ERROR(g->scope.ToGraphDef(&def));
  SF_ASSIGN_OR_RETURN(Saver saver, Saver::AddToGraph(&def));
  g->saver = std::make_unique<Saver>(std::move(saver));
  SessionOptions options = TrainSessionOptions(c);
  // With parameter servers every other task is watched: a lost one fails this worker's steps
  // (a synchronous step would otherwise wait for its gradients forever).
  std::shared_ptr<PeerWatch> watch;
  if (ps_strategy || between) {
    SF_ASSIGN_OR_RETURN(watch, WatchOtherTasks(c));
  }
  SF_ASSIGN_OR_RETURN(
      std::unique_ptr<Session> session,
      c.cluster.OpenSession(options, watch, own_task ? own_task->local_worker() : nullptr));
  SF_RETURN_IF_ERROR(CheckDeviceChoice(c, *session));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  const bool is_chief = (!ps_strategy && !between) || c.task == 0;
  CheckpointSeries series(c.checkpoint_dir, c.keep_checkpoints);
  Position at;              // where training stands
  int64_t saved_step = -1;  // global step of this series' latest checkpoint
  const int64_t steps_per_epoch = train.size() / c.batch_size;  // batches drop the remainder
  // Strategy averaging: the steps after which every replica averages, whatever the task.
  auto regular_average = [&c](const Position& p) {
    return p.global_step % c.average_every == 0 || p.step == 0;
  };
  if (is_chief || between) {
    SF_RETURN_IF_ERROR(session->Run({}, {}, {g->init_op.node()->name()}, &out));
  }
  if (is_chief) {
    SF_ASSIGN_OR_RETURN(
        at, StartingPosition(session.get(), *g, c, steps_per_epoch, &series, &saved_step));
  }
  if (between) {
    // Every task starts from the chief's variables and position (initialised or restored).
    std::vector<std::pair<std::string, Tensor>> feeds;
    if (is_chief) {
      feeds.push_back({g->position_in.name(),
                       Tensor::FromVector<int64_t>({at.epoch, at.step, at.global_step})});
    }
    SF_RETURN_IF_ERROR(
        session->Run(feeds, {g->position_out.name()}, {g->sync_op.node()->name()}, &out));
    const int64_t* p = out[0].data<int64_t>();
    at = {p[0], p[1], p[2]};
  }
  std::unique_ptr<SyncUpdateLoop> update_loop;
  if (ps_strategy) {
    SF_RETURN_IF_ERROR(
        StartParameterServerWorker(session.get(), *g, c, steps_per_epoch, &at, &update_loop));
  }
  const int64_t start_epoch = at.epoch;
  BatchIteratorOptions o;
  o.batch_size = c.batch_size;
  o.seed = static_cast<uint64_t>(c.seed) + static_cast<uint64_t>(start_epoch);  // epoch e: seed+e
  o.layout = g->model.image_layout ? ImageLayout::kImage : ImageLayout::kFlat;
  o.num_epochs = std::max<int64_t>(c.epochs - start_epoch, 0);
  o.drop_remainder = true;
  SF_ASSIGN_OR_RETURN(auto batches, BatchIterator::Create(train, o));
  // Mid-epoch: the batches of this epoch that the checkpoint had trained on, in the same order.
  for (int64_t i = 0; i < at.step && o.num_epochs > 0; ++i) {
    SF_RETURN_IF_ERROR(batches->Next().status());
  }
  if (g->sync_op.node() != nullptr) {
    // Every replica starts from replica 0's values (initialised or restored).
    if (!between) SF_RETURN_IF_ERROR(session->Run({}, {}, {g->sync_op.node()->name()}, &out));
    absl::PrintF(
        "data parallel: %s over %d replicas (%s), %d examples each per step\n",
        g->average_op.node() != nullptr
            ? absl::StrCat("parameters averaged every ", c.average_every, " steps")
        : c.compression == "none" ? std::string("gradients all-reduced")
                                  : absl::StrCat("gradients all-reduced in ", c.compression),
        c.replica_devices.size(), absl::StrJoin(c.replica_devices, ", "), per_replica_batch);
  }
  absl::PrintF(
      "training %s on Fashion-MNIST (%d examples, %d steps/epoch, %sbatch %d), %s lr %g (%s), "
      "%d thread(s), seed %d%s\n",
      c.model, train.size(), steps_per_epoch, g->replicas.empty() && !ps_strategy ? "" : "global ",
      c.batch_size, c.optimizer, c.lr > 0 ? c.lr : DefaultLearningRate(c.optimizer),
      c.lr_decay == "cosine" ? "cosine decay" : "constant",
      c.threads > 0 ? c.threads : int64_t{NumHardwareThreads()}, c.seed,
      c.precision == "bf16" ? ", bf16 mixed precision" : "");
  ProgressBar bar(c.epochs, steps_per_epoch, c.progress && is_chief);
  std::vector<std::string> fetch = {g->mean_loss.node() != nullptr ? g->mean_loss.name()
                                                                   : g->model.loss.name()};
  if (g->ps.staleness.valid()) fetch.push_back(g->ps.staleness.name());
  int64_t staleness_sum = 0, staleness_max = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> step_stats(nullptr, &std::fclose);
  if (!c.step_stats.empty()) {
    step_stats.reset(std::fopen(c.step_stats.c_str(), "w"));
    if (step_stats == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write --step-stats '", c.step_stats, "': ", std::strerror(errno)));
    }
  }
  std::vector<StepSplit> splits;
  // The step split is this worker's view (replica 0's task with allreduce).
  const std::string split_task = [&] {
    const std::string& d = ps_strategy                 ? c.worker_device
                           : c.replica_devices.empty() ? std::string()
                                                       : c.replica_devices[0];
    return d.substr(0, d.find("/device:"));
  }();
  const std::vector<std::string> targets = {g->train_op.node()->name()};
  // Parity traces: initial weights, every batch, every loss.
  std::vector<Tensor> traced_images, traced_labels;
  std::vector<float> losses;
  if (!c.trace_dir.empty()) {
    std::filesystem::create_directories(c.trace_dir);
    std::vector<std::string> names;
    for (const Var& v : g->variables) names.push_back(v.value().name());
    std::vector<Tensor> values;
    SF_RETURN_IF_ERROR(session->Run({}, names, {}, &values));
    for (size_t i = 0; i < values.size(); ++i) {
      std::string file = absl::StrReplaceAll(g->variables[i].name(), {{"/", "__"}});
      SF_RETURN_IF_ERROR(WriteNpy(c.trace_dir + "/init_" + file + ".npy", values[i]));
    }
  }
  auto epoch_start = std::chrono::steady_clock::now();
  double smoothed = 0;
  int64_t steps_this_run = 0;
  int64_t steps_this_epoch = 0;  // in this run
  int64_t current_epoch = start_epoch;
  auto train_start = std::chrono::steady_clock::now();
  auto last_save = train_start;
  // Throughput is also reported without the first steps (kernel set-up, first-touch memory).
  constexpr int64_t kWarmupSteps = 10;
  auto warm_start = train_start;
  while (c.max_steps == 0 || steps_this_run < c.max_steps) {
    auto batch = batches->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    SF_RETURN_IF_ERROR(batch.status());
    int64_t epoch = start_epoch + batch->epoch;
    if (epoch != current_epoch) {
      current_epoch = epoch;
      steps_this_epoch = 0;
      epoch_start = std::chrono::steady_clock::now();
    }
    const double lr = LearningRateAt(c, epoch * steps_per_epoch + batch->step, steps_per_epoch);
    std::vector<std::pair<std::string, Tensor>> feeds = {
        {g->learning_rate.name(), Tensor::Scalar(static_cast<float>(lr))}};
    if (ps_strategy || between) {
      // This worker's rows of the global batch.
      feeds.push_back({g->model.images.name(),
                       Rows(batch->images, c.task * per_replica_batch, per_replica_batch)});
      feeds.push_back({g->model.labels.name(),
                       Rows(batch->labels, c.task * per_replica_batch, per_replica_batch)});
    } else if (g->replicas.empty()) {
      feeds.push_back({g->model.images.name(), batch->images});
      feeds.push_back({g->model.labels.name(), batch->labels});
    } else {
      // Replica r trains on rows [r * b, (r + 1) * b) of the global batch.
      for (size_t r = 0; r < g->replicas.size(); ++r) {
        feeds.push_back({g->replicas[r].images.name(),
                         Rows(batch->images, r * per_replica_batch, per_replica_batch)});
        feeds.push_back({g->replicas[r].labels.name(),
                         Rows(batch->labels, r * per_replica_batch, per_replica_batch)});
      }
    }
    RunOptions run_options;
    RunMetadata metadata;
    bool profile = c.profile_step > 0 && at.global_step + 1 == c.profile_step;
    if (profile || step_stats) run_options.set_trace_level(RunOptions::FULL_TRACE);
    const auto step_start = std::chrono::steady_clock::now();
    absl::Status st = session->Run(run_options, feeds, fetch, targets, &out, &metadata);
    const double step_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start)
            .count();
    if (st.ok() && profile) PrintOpProfile(metadata, at.global_step + 1);
    if (!st.ok()) {
      if (st.message().find("loss is not finite") != absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("training stopped at step ", at.global_step + 1, " (epoch ", epoch + 1,
                         "): the loss is not finite. First op with a non-finite value: ",
                         DiagnoseNonFinite(session.get(), *g, feeds),
                         ". Variables keep their values from before this step; try a lower --lr"));
      }
      return st;
    }
    float loss = out[0].scalar<float>();
    const int64_t staleness = out.size() > 1 ? out[1].scalar<int64_t>() : 0;
    staleness_sum += staleness;
    staleness_max = std::max(staleness_max, staleness);
    if (step_stats) {
      StepSplit split = SplitStep(metadata, step_ms, split_task);
      splits.push_back(split);
      std::fprintf(step_stats.get(),
                   "{\"step\": %lld, \"loss\": %.6f, \"wall_ms\": %.3f, \"compute_ms\": %.3f, "
                   "\"communication_ms\": %.3f, \"waiting_ms\": %.3f, \"staleness\": %lld}\n",
                   static_cast<long long>(at.global_step + 1), loss, split.wall_ms,
                   split.compute_ms, split.communication_ms, split.waiting_ms,
                   static_cast<long long>(staleness));
    }
    if (!c.trace_dir.empty()) {
      traced_images.push_back(batch->images);
      traced_labels.push_back(batch->labels);
      losses.push_back(loss);
    }
    at = {epoch, batch->step + 1, at.global_step + 1};
    if (at.step == steps_per_epoch) at = {epoch + 1, 0, at.global_step};
    ++steps_this_run;
    ++steps_this_epoch;
    if (steps_this_run == kWarmupSteps) warm_start = std::chrono::steady_clock::now();
    smoothed = steps_this_run == 1 ? loss : 0.98 * smoothed + 0.02 * loss;
    auto now = std::chrono::steady_clock::now();
    double epoch_secs = std::chrono::duration<double>(now - epoch_start).count();
    double ex_per_sec = steps_this_epoch * c.batch_size / std::max(epoch_secs, 1e-9);
    double steps_left =
        (c.epochs - epoch - 1) * steps_per_epoch + (steps_per_epoch - batch->step - 1);
    bar.Update(epoch, batch->step, smoothed, ex_per_sec, steps_left * c.batch_size / ex_per_sec);
    bool due =
        is_chief &&
        (at.step == 0 ||  // an epoch ended
         (c.checkpoint_every_steps > 0 && at.global_step % c.checkpoint_every_steps == 0) ||
         (c.checkpoint_every_secs > 0 &&
          std::chrono::duration<double>(now - last_save).count() >= c.checkpoint_every_secs));
    // Strategy averaging: every replica takes the replicas' mean every --average-every steps,
    // and before a checkpoint (replica 0's variables are what is saved and evaluated).
    // Between-graph, every task must average at the same steps: not at the chief's timed saves.
    if (g->average_op.node() != nullptr && (regular_average(at) || (due && !between))) {
      SF_RETURN_IF_ERROR(session->Run({}, {}, {g->average_op.node()->name()}, &out));
    }
    if (due) {
      SF_RETURN_IF_ERROR(SaveTo(session.get(), *g, c, &series, at));
      saved_step = at.global_step;
      last_save = std::chrono::steady_clock::now();
    }
  }
  if (ps_strategy) {
    SF_RETURN_IF_ERROR(
        FinishParameterServerWorker(session.get(), *g, c, watch.get(), update_loop.get()));
  }
  auto train_end = std::chrono::steady_clock::now();
  if (!splits.empty()) PrintStepSplits(splits);
  if (g->ps.staleness.valid() && steps_this_run > 0) {
    absl::PrintF("staleness: %.2f updates of other workers per step on average, at most %d\n",
                 static_cast<double>(staleness_sum) / steps_this_run, staleness_max);
  }
  double train_secs = std::chrono::duration<double>(train_end - train_start).count();
  double warm_secs = std::chrono::duration<double>(train_end - warm_start).count();
  double warm_rate = steps_this_run > kWarmupSteps ? (steps_this_run - kWarmupSteps) *
                                                         c.batch_size / std::max(warm_secs, 1e-9)
                                                   : 0;
  if (!c.trace_dir.empty() && !losses.empty()) {
    auto stack = [](const std::vector<Tensor>& parts) {
      TensorShape shape = parts[0].shape();
      shape.set_dim(0, 0);
      for (const Tensor& p : parts) shape.set_dim(0, shape.dim(0) + p.dim_size(0));
      Tensor all(parts[0].dtype(), shape);
      size_t offset = 0;
      for (const Tensor& p : parts) {
        std::memcpy(static_cast<char*>(all.raw_data()) + offset, p.raw_data(), p.TotalBytes());
        offset += p.TotalBytes();
      }
      return all;
    };
    SF_RETURN_IF_ERROR(WriteNpy(c.trace_dir + "/images.npy", stack(traced_images)));
    SF_RETURN_IF_ERROR(WriteNpy(c.trace_dir + "/labels.npy", stack(traced_labels)));
    SF_RETURN_IF_ERROR(WriteNpy(c.trace_dir + "/losses.npy", Tensor::FromVector(losses)));
  }
  if (g->average_op.node() != nullptr && between && !regular_average(at) && steps_this_run > 0) {
    SF_RETURN_IF_ERROR(session->Run({}, {}, {g->average_op.node()->name()}, &out));
  }
  if (!is_chief) {
    absl::PrintF("worker %d: trained %d steps in %s; the chief evaluates and checkpoints\n", c.task,
                 steps_this_run, Duration(train_secs));
    if (!between) return absl::OkStatus();
    // The chief may still be taking this task's last tensors.
    std::fflush(stdout);
    return serve_until_chief_is_done();
  }
  if (g->average_op.node() != nullptr && !between && at.global_step != saved_step) {
    SF_RETURN_IF_ERROR(session->Run({}, {}, {g->average_op.node()->name()}, &out));
  }
  if (at.global_step != saved_step) SF_RETURN_IF_ERROR(SaveTo(session.get(), *g, c, &series, at));
  SF_ASSIGN_OR_RETURN(double accuracy, Evaluate(session.get(), *g, test));
  // The rate after the warm-up steps exists only when more steps than those ran.
  const std::string warm = steps_this_run > kWarmupSteps
                               ? absl::StrFormat("; %.0f examples/s after the first %lld steps",
                                                 warm_rate, static_cast<long long>(kWarmupSteps))
                               : std::string();
  std::printf(
      "trained %lld steps in %s (%.0f examples/s%s)\ntest accuracy %.2f%% on %lld images; "
      "checkpoint %s\n",
      static_cast<long long>(steps_this_run), Duration(train_secs).c_str(),
      steps_this_run * c.batch_size / std::max(train_secs, 1e-9), warm.c_str(), 100 * accuracy,
      static_cast<long long>(test.size()), series.latest().c_str());
  std::fflush(stdout);
  if (c.task >= 0) {
    // The tasks serving this job (the other replicas' tasks; the ps tasks) may leave now.
    SF_ASSIGN_OR_RETURN(ClusterSpec spec, c.cluster.Spec());
    std::vector<TaskId> serving;
    for (const TaskId& t : spec.tasks()) {
      const bool self = t.job == c.job && t.task == c.task;
      if (!self && (!ps_strategy || t.job == "ps")) serving.push_back(t);
    }
    absl::Status marked = MarkJobDone(c.cluster, serving);
    if (!marked.ok()) {
      std::fprintf(stderr, "warning: could not tell every task that training is done: %s\n",
                   std::string(marked.message()).c_str());
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddTrainCommand(CommandLine* cli) {
  auto config = std::make_shared<TrainConfig>();
  TrainConfig& c = *config;
  Flags& flags = *cli->AddCommand(
      "train", "train a CNN or MLP on Fashion-MNIST",
      "Trains a CNN or an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist) with a live\n"
      "progress bar, then prints the test accuracy. It checkpoints at every epoch end, at the\n"
      "end and (by default) every 10 minutes, keeping the latest 5, so a crash loses little:\n"
      "--resume continues from the latest. The same --seed and --threads give the same loss\n"
      "curve, also across a --resume.",
      [config] { return Train(*config); }, "\nshardflow train: ");
  flags.String("model", &c.model,
               "cnn (2 conv + 2 dense layers), mlp (784-512-512-10), resnet (ResNet-8 for "
               "28x28 images), resnet18 or resnet50 (torchvision's)");
  flags.Bool("synthetic", &c.synthetic,
             "train on one fixed batch of random images (224x224x3, 1000 classes for resnet18 "
             "and resnet50) and print images/s: a throughput benchmark, no dataset needed; "
             "--max-steps steps (default 12, the first 2 warm-up)");
  flags.Int("batch-size", &c.batch_size, "examples per training step");
  flags.String("precision", &c.precision,
               "fp32, or bf16: matrix products and convolutions on bfloat16 inputs with fp32 "
               "master weights (native bf16 kernels on AVX512-BF16/AMX processors, rounded "
               "inputs and fp32 kernels elsewhere; docs/optimizer.md)");
  flags.String("device", &c.device,
               "auto (ops with a GPU kernel on GPU:0 when there is a GPU, the rest on the CPU), "
               "gpu (the same, an error without a GPU, and the replicas of allreduce/averaging, "
               "the layers of --devices N and a ps worker's compute on GPU:0..N-1, one GPU "
               "split into logical devices where there are fewer) or cpu (no GPU); docs/gpu.md");
  flags.String("graph-optimizer", &c.graph_optimizer,
               "on or off: folding, CSE, fusion of MatMul/Conv2D + bias + activation "
               "(docs/optimizer.md)");
  flags.Int("epochs", &c.epochs, "passes over the 60,000 training images");
  flags.String("optimizer", &c.optimizer,
               "sgd, momentum (0.9), adam, rmsprop (decay 0.9) or adagrad (accumulators from "
               "0.1)");
  flags.Double(
      "lr", &c.lr,
      "learning rate; 0 = 0.001 for adam and rmsprop, 0.01 for momentum and adagrad, 0.1 for "
      "sgd");
  flags.String("lr-decay", &c.lr_decay, "cosine (from --lr down to 0 over all epochs) or none");
  flags.Int("threads", &c.threads, "CPU threads for the step (0 = every core)");
  flags.String("checkpoint-dir", &c.checkpoint_dir,
               "folder of the model.ckpt-<step> files and their index 'checkpoint' (written at "
               "every epoch end, at the end, and as --checkpoint-every-* say)");
  flags.Int("checkpoint-every-steps", &c.checkpoint_every_steps,
            "also checkpoint when the global step is a multiple of this (0 = off)");
  flags.Double("checkpoint-every-secs", &c.checkpoint_every_secs,
               "also checkpoint when this many seconds passed since the last one (0 = off)");
  flags.Int("keep-checkpoints", &c.keep_checkpoints,
            "checkpoints kept in --checkpoint-dir; older ones are deleted");
  flags.Bool("auto-resume", &c.auto_resume,
             "continue from the latest checkpoint in --checkpoint-dir when it has one, else "
             "start: the same command for a job's first start and for every restart by its "
             "cluster manager (Kubernetes, Slurm --requeue, mpirun again)");
  flags.Bool("resume", &c.resume,
             "continue from the latest readable checkpoint in --checkpoint-dir (mid-epoch: same "
             "step, batch order and learning rate); also reads model.ckpt of earlier versions");
  flags.Int("seed", &c.seed, "seed for the initial weights and the batch order");
  flags.String("data-dir", &c.data_dir, "folder with the four Fashion-MNIST idx(.gz) files");
  flags.Int("max-steps", &c.max_steps,
            "stop after this many steps of this run (0 = run every epoch); a resumed run counts "
            "its own steps, so a job restarted with --auto-resume is bounded by --epochs");
  flags.String("trace-dir", &c.trace_dir,
               "write initial weights, batches and losses as .npy files here (for parity checks)");
  flags.Bool("progress", &c.progress, "show the progress bar");
  flags.Int("devices", &c.devices,
            "CPU devices the session exposes (threads are split); with --cluster and a "
            "data-parallel strategy, each replica's layers are split over N devices of its task "
            "(model parallelism inside a replica; tasks started by --task get N devices, "
            "`shardflow server` tasks need --devices N)");
  flags.String("strategy", &c.strategy,
               "none (one model, split over --devices/--cluster by layer), allreduce (a replica "
               "per device, or per task of --cluster, gradients averaged every step; "
               "--batch-size is per replica), averaging (replicas train alone, parameters and "
               "optimizer state averaged every --average-every steps), ps-async or ps-sync "
               "(parameter servers: one process per task of a cluster with ps and worker jobs; "
               "variables on the ps tasks, each worker trains on --batch-size examples per "
               "step and updates them on its own (async) or averaged with the others (sync))");
  flags.String("job", &c.job, "with --cluster and --task: this process's job (worker or ps)");
  flags.String("step-stats", &c.step_stats,
               "trace every step and write its time split into compute, communication and "
               "waiting as JSON lines to this file (and print the medians)");
  flags.Int("task", &c.task,
            "with --cluster: this process serves task N of --job itself (one process per task, "
            "as launchers start them); task 0 trains, the others serve until it is done (-1: "
            "none, the cluster's tasks are `shardflow server` processes)");
  flags.Int("average-every", &c.average_every,
            "--strategy averaging: steps between parameter averages");
  flags.Int("bucket-bytes", &c.bucket_bytes,
            "--strategy allreduce: gradients are fused into all-reduces of at most this many "
            "bytes, each started as soon as its gradients exist (0: one per gradient)");
  flags.String("compression", &c.compression,
               "--strategy allreduce: none, fp16 or bf16 (gradients cross the network in that "
               "precision and are cast back; half the bytes, as Horovod's Compression.fp16)");
  flags.String("replication", &c.replication,
               "with --strategy allreduce|averaging and --task: in-graph (task 0 drives every "
               "replica from one graph, the others serve) or between-graph (every task trains "
               "its own replica on its rows of the global batch from its own graph, as Horovod "
               "and DDP do; only gradients or parameters cross tasks; docs/distributed.md)");
  flags.String("placement-policy", &c.placement_policy,
               "constraints (every node on the first device) or cost (spread by the cost model)");
  c.cluster.Register(&flags);
  flags.Bool("log-placement", &c.log_placement,
             "print 'name (Op) -> device' for every node, once, when the graph is placed");
  flags.Int("profile-step", &c.profile_step,
            "trace this step (1-based) and print the time spent per op type");
}

}  // namespace shardflow
