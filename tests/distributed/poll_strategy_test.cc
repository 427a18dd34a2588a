// gRPC's poll strategy is chosen by the serving process, explicitly (issue 11): the library no
// longer sets GRPC_POLL_STRATEGY for every process that loads it.
#include <cstdlib>

#include "distributed/grpc/grpc_poll_strategy.h"
#include "grpc/grpc.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

TEST(PollStrategyTest, LoadingTheLibraryChoosesNothingAndTheChoiceIsChecked) {
  // Nothing in libshardflow set the variable when it was loaded.
  EXPECT_EQ(std::getenv("GRPC_POLL_STRATEGY"), nullptr);
  EXPECT_EQ(ChooseGrpcPollStrategy("select").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ChooseGrpcPollStrategy("poll").ok());
  ASSERT_NE(std::getenv("GRPC_POLL_STRATEGY"), nullptr);
  EXPECT_STREQ(std::getenv("GRPC_POLL_STRATEGY"), "poll");
  // The user's own variable wins.
  setenv("GRPC_POLL_STRATEGY", "epoll1", 1);
  ASSERT_TRUE(ChooseGrpcPollStrategy("poll").ok());
  EXPECT_STREQ(std::getenv("GRPC_POLL_STRATEGY"), "epoll1");
  // Too late once gRPC runs: it read the variable already.
  unsetenv("GRPC_POLL_STRATEGY");
  grpc_init();
  EXPECT_EQ(ChooseGrpcPollStrategy("poll").code(), absl::StatusCode::kFailedPrecondition);
  grpc_shutdown();
}

}  // namespace
}  // namespace shardflow
