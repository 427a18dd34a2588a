// `shardflow train`: trains the CNN or MLP on Fashion-MNIST with a live progress bar, reports
// test accuracy and checkpoints as it goes (tools/shardflow/checkpoint_series.h).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_

namespace shardflow {

class CommandLine;

// Adds the command and its flags to `cli`.
void AddTrainCommand(CommandLine* cli);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TRAIN_H_
