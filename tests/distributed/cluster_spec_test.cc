// ClusterSpec: the JSON form of DESIGN.md, task names and addresses, and errors that name the
// file and the field.
#include "distributed/cluster_spec.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

TEST(ClusterSpecTest, ParsesJobsAndTasks) {
  auto spec = ClusterSpec::FromJson(
      R"({"worker": ["10.0.0.1:2222", "10.0.0.2:2222"], "ps": ["10.0.0.3:2223"]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->jobs(), (std::vector<std::string>{"ps", "worker"}));
  EXPECT_EQ(spec->num_tasks("worker"), 2);
  EXPECT_EQ(*spec->TaskAddress("worker", 1), "10.0.0.2:2222");
  EXPECT_EQ(*spec->TaskAddress("/job:ps/replica:0/task:0/device:CPU:0"), "10.0.0.3:2223");
  EXPECT_EQ(ClusterSpec::TaskName("worker", 1), "/job:worker/replica:0/task:1");
  auto tasks = spec->tasks();
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].Name(), "/job:ps/replica:0/task:0");
  EXPECT_EQ(spec->TaskAddresses().at("/job:worker/replica:0/task:0"), "10.0.0.1:2222");
  auto round_trip = ClusterSpec::FromJson(spec->ToJson());
  ASSERT_TRUE(round_trip.ok()) << round_trip.status();
  EXPECT_EQ(round_trip->job_addresses(), spec->job_addresses());
}

TEST(ClusterSpecTest, ErrorsNameTheSourceAndTheField) {
  struct Case {
    const char* json;
    const char* expect;
  } cases[] = {
      {"not json", "not a JSON object"},
      {"{}", "no job"},
      {R"({"worker": "h:1"})", "\"worker\" must be a list"},
      {R"({"worker": [1]})", "worker[0] must be a \"host:port\" string"},
      {R"({"worker": ["h:1", "nohost"]})", "worker[1] = 'nohost'"},
      {R"({"worker": ["h:99999"]})", "port in 0..65535"},
      {R"({"bad job": ["h:1"]})", "job name 'bad job'"},
      {R"({"worker": []})", "has no task"},
  };
  for (const Case& c : cases) {
    auto spec = ClusterSpec::FromJson(c.json, "cluster.json");
    ASSERT_FALSE(spec.ok()) << c.json;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_TRUE(absl::StrContains(spec.status().message(), "cluster.json")) << spec.status();
    EXPECT_TRUE(absl::StrContains(spec.status().message(), c.expect)) << spec.status();
  }
}

TEST(ClusterSpecTest, TaskLookupErrors) {
  auto spec = ClusterSpec::FromJson(R"({"worker": ["h:1", "h:2"]})");
  ASSERT_TRUE(spec.ok());
  auto missing = spec->TaskAddress("worker", 2);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "has 2 task(s)")) << missing.status();
  auto no_job = spec->TaskAddress("ps", 0);
  EXPECT_TRUE(absl::StrContains(no_job.status().message(), "jobs are [worker]")) << no_job.status();
  EXPECT_FALSE(spec->TaskAddress("/device:CPU:0").ok());
}

TEST(ClusterSpecTest, FromFile) {
  std::string path = ::testing::TempDir() + "/cluster_spec_test.json";
  std::ofstream(path) << R"({"worker": ["127.0.0.1:5000"]})";
  auto spec = ClusterSpec::FromJsonFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec->TaskAddress("worker", 0), "127.0.0.1:5000");
  std::remove(path.c_str());
  auto gone = ClusterSpec::FromJsonFile(path);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(gone.status().message(), path));
}

}  // namespace
}  // namespace shardflow
