#include "runtime/call_frame.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

absl::Status StepCallFrame::GetArg(int index, Tensor* value) const {
  auto it = args_.find(index);
  if (it == args_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the step was given no value for fed tensor ", index, " (_Arg index)"));
  }
  *value = it->second;
  return absl::OkStatus();
}

absl::Status StepCallFrame::SetRetval(int index, const Tensor& value) {
  if (index < 0 || index >= num_retvals_) {
    return absl::InternalError(absl::StrCat("_Retval index ", index, " is not one of the step's ",
                                            num_retvals_, " fetches"));
  }
  absl::MutexLock lock(&mu_);
  retvals_[index] = value;
  return absl::OkStatus();
}

std::map<int, Tensor> StepCallFrame::TakeRetvalMap() {
  absl::MutexLock lock(&mu_);
  return std::move(retvals_);
}

std::vector<Tensor> StepCallFrame::TakeRetvals() {
  std::vector<Tensor> out(num_retvals_ > 0 ? num_retvals_ : 0);
  for (auto& [index, value] : TakeRetvalMap()) out[index] = std::move(value);
  return out;
}

}  // namespace shardflow
