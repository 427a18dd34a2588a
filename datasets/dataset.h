// Dataset: a labelled image classification set held in memory, as training input.
//
//   SF_ASSIGN_OR_RETURN(Dataset train, LoadFashionMnist());   // datasets/fashion_mnist.h
//   train.size()                    // 60000
//   train.images                    // float [60000,784], one contiguous buffer
//   train.example_shape             // [28,28,1]
//
// A Dataset is a value: copies share the image and label buffers (see Tensor).
#ifndef SHARDFLOW_DATASETS_DATASET_H_
#define SHARDFLOW_DATASETS_DATASET_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"

namespace shardflow {

struct Dataset {
  // float [N, D]: example i is row i, D = example_shape.num_elements().
  Tensor images;
  // int32 [N], each in [0, num_classes).
  Tensor labels;
  // The shape of one example when it is not flattened, e.g. [28,28,1] (height, width, channels).
  TensorShape example_shape;
  int num_classes = 0;

  int64_t size() const { return labels.IsInitialized() ? labels.dim_size(0) : 0; }
};

// Checks the invariants above (dtypes, ranks, matching counts, labels in range); the error says
// which one fails and with what values.
absl::Status ValidateDataset(const Dataset& dataset);

}  // namespace shardflow

#endif  // SHARDFLOW_DATASETS_DATASET_H_
