#include "datasets/dataset.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

absl::Status ValidateDataset(const Dataset& dataset) {
  const Tensor& images = dataset.images;
  const Tensor& labels = dataset.labels;
  if (images.dtype() != DT_FLOAT || images.dims() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset images must be float [N, D]; got ", DataTypeString(images.dtype()), " ",
        images.IsInitialized() ? images.shape().DebugString() : "(uninitialized)"));
  }
  if (labels.dtype() != DT_INT32 || labels.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset labels must be int32 [N]; got ", DataTypeString(labels.dtype()), " ",
                     labels.IsInitialized() ? labels.shape().DebugString() : "(uninitialized)"));
  }
  if (images.dim_size(0) != labels.dim_size(0)) {
    return absl::InvalidArgumentError(absl::StrCat("dataset has ", images.dim_size(0),
                                                   " images but ", labels.dim_size(0), " labels"));
  }
  if (!dataset.example_shape.IsFullyDefined() ||
      dataset.example_shape.num_elements() != images.dim_size(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset example_shape ", dataset.example_shape.DebugString(),
                     " does not hold the ", images.dim_size(1), " values of an image row"));
  }
  if (dataset.num_classes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset num_classes must be positive; got ", dataset.num_classes));
  }
  const int32_t* l = labels.data<int32_t>();
  for (int64_t i = 0; i < labels.NumElements(); ++i) {
    if (l[i] < 0 || l[i] >= dataset.num_classes) {
      return absl::InvalidArgumentError(absl::StrCat("dataset label of example ", i, " is ", l[i],
                                                     "; labels must be in [0, ",
                                                     dataset.num_classes, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace shardflow
