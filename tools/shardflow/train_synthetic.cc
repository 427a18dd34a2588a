#include "tools/shardflow/train_synthetic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/platform/status.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "tools/shardflow/train_report.h"

namespace shardflow {

absl::Status TrainSynthetic(const TrainConfig& c) {
  if (c.strategy != "none" || !c.cluster.cluster.empty()) {
    return absl::InvalidArgumentError(
        "--synthetic measures one model in this process: leave out --strategy and --cluster");
  }
  if (c.resume || c.auto_resume || !c.trace_dir.empty()) {
    return absl::InvalidArgumentError(
        "--synthetic neither checkpoints nor traces: leave out --resume, --auto-resume and "
        "--trace-dir");
  }
  constexpr int64_t kWarmup = 2;
  const int64_t steps = c.max_steps > 0 ? c.max_steps : 12;
  SF_ASSIGN_OR_RETURN(std::unique_ptr<TrainGraph> g, BuildTrainGraph(c));
  const ImageSpec& spec = g->model.spec;
  GraphDef def;
  SF_RETURN_IF_ERROR(g->scope.ToGraphDef(&def));
  SessionOptions options = TrainSessionOptions(c);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, c.cluster.OpenSession(options));
  SF_RETURN_IF_ERROR(CheckDeviceChoice(c, *session));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({}, {}, {g->init_op.node()->name()}, &out));

  // One batch, fed every step.
  const TensorShape shape =
      g->model.image_layout ? TensorShape({c.batch_size, spec.height, spec.width, spec.channels})
                            : TensorShape({c.batch_size, spec.height * spec.width * spec.channels});
  Tensor images(DT_FLOAT, shape);
  Tensor labels(DT_INT32, TensorShape({c.batch_size}));
  std::mt19937_64 rng(static_cast<uint64_t>(c.seed));
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(spec.classes) - 1);
  for (int64_t i = 0; i < images.NumElements(); ++i) images.data<float>()[i] = pixel(rng);
  for (int64_t i = 0; i < c.batch_size; ++i) labels.data<int32_t>()[i] = label(rng);
  const float lr = static_cast<float>(c.lr > 0 ? c.lr : DefaultLearningRate(c.optimizer));

  absl::PrintF(
      "training %s on synthetic data (%dx%dx%d images, %d classes, batch %d), %s lr %g, %d "
      "thread(s), graph optimizer %s, %s; %d steps, the first %d warm-up\n",
      c.model, spec.height, spec.width, spec.channels, spec.classes, c.batch_size, c.optimizer, lr,
      c.threads > 0 ? c.threads : int64_t{NumHardwareThreads()}, c.graph_optimizer, c.precision,
      steps, std::min(kWarmup, steps - 1));
  std::fflush(stdout);
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {g->learning_rate.name(), Tensor::Scalar(lr)},
      {g->model.images.name(), images},
      {g->model.labels.name(), labels}};
  std::vector<double> step_ms;
  for (int64_t step = 1; step <= steps; ++step) {
    RunOptions run_options;
    RunMetadata metadata;
    const bool profile = step == c.profile_step;
    if (profile) run_options.set_trace_level(RunOptions::FULL_TRACE);
    const auto start = std::chrono::steady_clock::now();
    SF_RETURN_IF_ERROR(session->Run(run_options, feeds, {g->model.loss.name()},
                                    {g->train_op.node()->name()}, &out, &metadata));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    step_ms.push_back(ms);
    absl::PrintF("step %d: loss %.4f, %.1f ms (%.1f images/s)\n", step, out[0].scalar<float>(), ms,
                 1000.0 * c.batch_size / ms);
    if (profile) PrintOpProfile(metadata, step);
    std::fflush(stdout);
  }
  // Throughput from the median step after warm-up (all steps when there are too few).
  std::vector<double> timed(step_ms.begin() + std::min<int64_t>(kWarmup, steps - 1), step_ms.end());
  std::sort(timed.begin(), timed.end());
  const double median = timed[timed.size() / 2];
  absl::PrintF("%s synthetic: %.2f images/s (median step %.1f ms over %d step%s after warm-up)\n",
               c.model, 1000.0 * c.batch_size / median, median, timed.size(),
               timed.size() == 1 ? "" : "s");
  return absl::OkStatus();
}

}  // namespace shardflow
