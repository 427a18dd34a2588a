// StepCallFrame: the fed values and fetched results of one step, by _Arg / _Retval index.
//
//   StepCallFrame frame({{0, x}, {1, y}}, /*num_retvals=*/2);
//   args.call_frame = &frame;                 // the step's _Arg and _Retval kernels use it
//   ... run the step ...
//   std::vector<Tensor> fetched = frame.TakeRetvals();
//
// The local session feeds every index; a worker only the indices its partitions read (the
// indices are those of the whole graph, so a task's frame may hold a sparse set).
//
// Thread safety: GetArg and SetRetval may be called concurrently (a step's executors run on
// several threads); TakeRetvals after the step.
#ifndef SHARDFLOW_RUNTIME_CALL_FRAME_H_
#define SHARDFLOW_RUNTIME_CALL_FRAME_H_

#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/framework/op_kernel.h"
#include "core/framework/tensor.h"

namespace shardflow {

class StepCallFrame final : public CallFrame {
 public:
  // `num_retvals`: results are accepted for indices [0, num_retvals).
  StepCallFrame(std::map<int, Tensor> args, int num_retvals)
      : args_(std::move(args)), num_retvals_(num_retvals) {}

  // INVALID_ARGUMENT when the step was given no value for `index`.
  absl::Status GetArg(int index, Tensor* value) const override;
  // INTERNAL for an index outside [0, num_retvals) (a graph rewritten for another signature).
  absl::Status SetRetval(int index, const Tensor& value) override;

  // Every result set, by index.
  std::map<int, Tensor> TakeRetvalMap();
  // The results in index order, uninitialized where none was set.
  std::vector<Tensor> TakeRetvals();

 private:
  const std::map<int, Tensor> args_;
  const int num_retvals_;
  absl::Mutex mu_;
  std::map<int, Tensor> retvals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_CALL_FRAME_H_
