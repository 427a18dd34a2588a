// What `shardflow train` prints about its steps: the progress bar, a traced step's time per op
// type, and the split of a step's time into compute, communication and waiting.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_REPORT_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/protos/config.pb.h"

namespace shardflow {

// "m:ss" or "h:mm:ss".
std::string Duration(double seconds);

// One line per update on a terminal (redrawn with \r); one line every 10% otherwise.
class ProgressBar {
 public:
  ProgressBar(int64_t epochs, int64_t steps_per_epoch, bool enabled);
  void Update(int64_t epoch, int64_t step, double loss, double examples_per_sec,
              double seconds_left);

 private:
  int64_t epochs_, steps_;
  bool enabled_, tty_;
};

// Time per op type in one traced step, most expensive first.
void PrintOpProfile(const RunMetadata& md, int64_t step);

// Note [Step time split]. A traced step's wall time (as its caller measured it), seen from one
// task (a worker: its kernels only, on any of its devices; all tasks when `task` is empty), in
// three parts:
//   compute: time when at least one of the task's kernels ran, other than the kernels below;
//   communication: time when tensors were on the move between tasks (_Send/_Recv pairs that
//            cross tasks, collectives) and nothing computed: the part the network costs that
//            the computation did not hide;
//   waiting: the rest: a synchronous step waiting for the other workers' gradients or its
//            token (QueueDequeueV2, ResourceAccumulatorTakeGradient), for a ps to apply the
//            update, for a slower replica of the step, scheduling, RPC overhead.
// A collective's time includes waiting for the slowest peer of its ring; it counts as
// communication. Clocks of tasks on one host agree; across hosts they are as good as NTP.
struct StepSplit {
  double wall_ms = 0;
  double compute_ms = 0;
  double communication_ms = 0;
  double waiting_ms = 0;
};
StepSplit SplitStep(const RunMetadata& md, double wall_ms, const std::string& task = "");

// Medians of the traced steps' time split (train_report.h), after the first 10% (warm-up).
void PrintStepSplits(std::vector<StepSplit> splits);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_REPORT_H_
