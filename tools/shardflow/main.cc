// shardflow: the command-line tool.
//
//   shardflow train [flags]     train a model on Fashion-MNIST (see shardflow train --help)
//   shardflow profile [flags]   profile a training step split across CPU devices
//   shardflow place [flags]     place a graph, explain a node's placement, simulate the step
//   shardflow server [flags]    run one task of a cluster (worker and master services)
//
// Every command takes --log-level info|warning|error (tools/shardflow/flags.h).
#include "glog/logging.h"
#include "tools/shardflow/flags.h"
#include "tools/shardflow/place.h"
#include "tools/shardflow/profile.h"
#include "tools/shardflow/server.h"
#include "tools/shardflow/train.h"

int main(int argc, char** argv) {
  // glog (Debian's libgoogle-glog): servers log sessions, lost tasks, what they collect and
  // refuse, to stderr; --log-level sets the least severe message printed.
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  shardflow::CommandLine cli("shardflow",
                             "Dataflow graphs split across devices and hosts: train, profile and\n"
                             "place models, and serve the tasks of a cluster.");
  shardflow::AddTrainCommand(&cli);
  shardflow::AddProfileCommand(&cli);
  shardflow::AddPlaceCommand(&cli);
  shardflow::AddServerCommand(&cli);
  return cli.Run(argc, argv);
}
