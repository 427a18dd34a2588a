// `shardflow train --synthetic`: the training throughput of a model on one fixed batch of random
// images (standard normal pixels, uniform labels), as standard throughput benchmarks measure it
// when no dataset is at hand (e.g. ResNet-50 on 224x224 images without ImageNet).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_SYNTHETIC_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_SYNTHETIC_H_

#include "absl/status/status.h"
#include "tools/shardflow/train_graph.h"

namespace shardflow {

// Runs --max-steps steps (default 12; the first 2 are warm-up) of one model in this process and
// prints each step's time and the images per second after warm-up (from the median step time).
// Errors for a data-parallel strategy or a cluster (synthetic runs measure one process).
absl::Status TrainSynthetic(const TrainConfig& c);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_SYNTHETIC_H_
