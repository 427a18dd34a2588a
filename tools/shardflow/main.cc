// shardflow: the command-line tool.
//
//   shardflow train [flags]     train a model on Fashion-MNIST (see shardflow train --help)
//   shardflow profile [flags]   profile a training step split across CPU devices
//   shardflow place [flags]     place a graph, explain a node's placement, simulate the step
//   shardflow server [flags]    run one task of a cluster (worker and master services)
#include <cstdio>
#include <string>

#include "glog/logging.h"
#include "tools/shardflow/place.h"
#include "tools/shardflow/profile.h"
#include "tools/shardflow/server.h"
#include "tools/shardflow/train.h"

namespace {
void Usage(FILE* out) {
  std::fprintf(
      out,
      "usage: shardflow <command> [flags]\n\n"
      "commands:\n"
      "  train    train a CNN or MLP on Fashion-MNIST (shardflow train --help)\n"
      "  profile  profile a training step split across CPU devices (shardflow profile --help)\n"
      "  place    place a graph on devices, explain a node, simulate the step\n"
      "           (shardflow place --help)\n"
      "  server   run one task of a cluster (shardflow server --help)\n");
}
}  // namespace

int main(int argc, char** argv) {
  // glog (Debian's libgoogle-glog): servers log what they collect and refuse, to stderr.
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string command = argv[1];
  if (command == "train") return shardflow::TrainMain(argc, argv, 2);
  if (command == "profile") return shardflow::ProfileMain(argc, argv, 2);
  if (command == "place") return shardflow::PlaceMain(argc, argv, 2);
  if (command == "server") return shardflow::ServerMain(argc, argv, 2);
  if (command == "--help" || command == "-h" || command == "help") {
    Usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "shardflow: unknown command '%s'\n\n", command.c_str());
  Usage(stderr);
  return 2;
}
