// `shardflow train`: trains the CNN or MLP on Fashion-MNIST with a live progress bar, reports
// test accuracy and checkpoints as it goes (tools/shardflow/checkpoint_series.h).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_

#include <string>

namespace shardflow {

// Runs the subcommand with argv[first..] as its flags; returns the process exit code (0 ok,
// 1 training failed, 2 bad flags).
int TrainMain(int argc, char** argv, int first);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_
