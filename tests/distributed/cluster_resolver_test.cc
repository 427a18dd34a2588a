// Cluster resolvers (distributed/cluster_resolver.h) on recorded launcher environments, good and
// malformed, and the rendezvous of ranks that know no addresses (threads on loopback).
#include "distributed/cluster_resolver.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(ClusterResolverTest, TfConfig) {
  Environment env = {{"TF_CONFIG", R"({"cluster": {"worker": ["w0:2222", "w1:2222"],
                                        "ps": ["p0:2222"]},
                                        "task": {"type": "worker", "index": 1}})"}};
  auto r = ResolveCluster(env, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "TF_CONFIG");
  EXPECT_EQ(r->job, "worker");
  EXPECT_EQ(r->task, 1);
  EXPECT_FALSE(r->needs_rendezvous());
  EXPECT_EQ(*r->spec.TaskAddress("ps", 0), "p0:2222");
}

TEST(ClusterResolverTest, MalformedTfConfigsNameTheProblem) {
  for (const auto& [text, words] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "TF_CONFIG is not a JSON object"},
           {R"({"task": {"type": "worker", "index": 0}})", "no \"cluster\""},
           {R"({"cluster": {"worker": ["a:1"]}})", "no \"task\""},
           {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})",
            "no job 'chief' (jobs: worker)"},
           {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}})",
            "has 1 worker task(s)"},
           {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "x"}})",
            "not a number"},
           {R"({"cluster": {"worker": ["nohostport"]}, "task": {"type": "worker"}})",
            "not an address"}}) {
    auto r = ResolveTfConfig({{"TF_CONFIG", text}});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(words)) << text;
  }
}

TEST(ClusterResolverTest, Hostlists) {
  EXPECT_THAT(*ExpandHostlist("node[01-04,07],gpu7", "V"),
              ElementsAre("node01", "node02", "node03", "node04", "node07", "gpu7"));
  EXPECT_THAT(*ExpandHostlist("a[8-10]-ib", "V"), ElementsAre("a8-ib", "a9-ib", "a10-ib"));
  EXPECT_THAT(*ExpandHostlist("single", "V"), ElementsAre("single"));
  for (const std::string bad :
       {"", "node[1-", "node[]", "node[3-1]", "n[1-2]x[3]", "a,,b", "a,", "n[a-b]", "n]1["}) {
    auto r = ExpandHostlist(bad, "SLURM_STEP_NODELIST");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("SLURM_STEP_NODELIST")) << bad;
  }
  EXPECT_FALSE(ExpandHostlist("n[0-999999999]", "V").ok());  // too many names
  EXPECT_THAT(*ExpandTasksPerNode("2(x3),1", "V"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandTasksPerNode("4", "V"), ElementsAre(4));
  for (const std::string bad : {"", "2(x)", "x", "2(3)", "2(x0)", "-1"}) {
    EXPECT_FALSE(ExpandTasksPerNode(bad, "SLURM_TASKS_PER_NODE").ok()) << bad;
  }
}

Environment SlurmEnv(int procid, int node, int local) {
  return {{"SLURM_PROCID", absl::StrCat(procid)},
          {"SLURM_NTASKS", "4"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_NODEID", absl::StrCat(node)},
          {"SLURM_LOCALID", absl::StrCat(local)}};
}

TEST(ClusterResolverTest, SlurmTwoNodesTwoTasksEach) {
  ResolveOptions o;
  o.base_port = 3000;
  auto r = ResolveCluster(SlurmEnv(3, 1, 1), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "Slurm");
  EXPECT_EQ(r->task, 3);
  EXPECT_EQ(r->port, 3001);
  EXPECT_THAT(r->spec.job_addresses().at("worker"),
              ElementsAre("node1:3000", "node1:3001", "node2:3000", "node2:3001"));
  // Cyclic: ranks 0 and 2 on node1, 1 and 3 on node2.
  Environment cyclic = SlurmEnv(1, 1, 0);
  cyclic["SLURM_DISTRIBUTION"] = "cyclic";
  r = ResolveSlurm(cyclic, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->spec.job_addresses().at("worker"),
              ElementsAre("node1:3000", "node2:3000", "node1:3001", "node2:3001"));
}

TEST(ClusterResolverTest, MalformedSlurmEnvironmentsNameTheVariable) {
  struct Case {
    std::string variable, value, words;
  };
  for (const Case& c : std::vector<Case>{
           {"SLURM_NTASKS", "", "SLURM_NTASKS is not set"},
           {"SLURM_PROCID", "x", "SLURM_PROCID='x' is not a whole number"},
           {"SLURM_PROCID", "4", "SLURM_PROCID=4 is not below SLURM_NTASKS=4"},
           {"SLURM_STEP_NODELIST", "node[1-", "SLURM_STEP_NODELIST='node[1-' is not a Slurm"},
           {"SLURM_STEP_TASKS_PER_NODE", "3,1", "adds up to 4"},  // fine: 4 tasks
           {"SLURM_STEP_TASKS_PER_NODE", "2", "gives task counts for 1"},
           {"SLURM_STEP_TASKS_PER_NODE", "3(x2)", "adds up to 6 tasks but SLURM_NTASKS=4"},
           {"SLURM_NODEID", "0", "SLURM_NODEID=0"},
           {"SLURM_DISTRIBUTION", "plane=2", "not supported"}}) {
    Environment env = SlurmEnv(2, 1, 0);
    if (c.value.empty()) {
      env.erase(c.variable);
    } else {
      env[c.variable] = c.value;
    }
    auto r = ResolveSlurm(env, {});
    if (c.value == "3,1") {
      // 3 on node1, 1 on node2: rank 2 is on node1, not node 1 as SLURM_NODEID says.
      ASSERT_FALSE(r.ok());
      EXPECT_THAT(std::string(r.status().message()), HasSubstr("SLURM_NODEID=1"));
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.variable << "=" << c.value;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.words))
        << c.variable << "=" << c.value;
  }
  // An allocation without a step (sbatch's script itself) is told to use srun.
  auto r = ResolveCluster({{"SLURM_JOB_ID", "7"}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("srun"));
}

TEST(ClusterResolverTest, OpenMpiAndTorchrunNeedARendezvous) {
  ResolveOptions o;
  o.base_port = 4000;
  auto r = ResolveCluster({{"OMPI_COMM_WORLD_RANK", "2"},
                           {"OMPI_COMM_WORLD_SIZE", "3"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}},
                          o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "OpenMPI");
  EXPECT_TRUE(r->needs_rendezvous());
  EXPECT_EQ(r->task, 2);
  EXPECT_EQ(r->num_tasks, 3);
  EXPECT_EQ(r->port, 4002);
  EXPECT_EQ(r->coordinator, "127.0.0.1:3999");
  // Several nodes: MPI does not say where rank 0 is.
  r = ResolveOpenMpi({{"OMPI_COMM_WORLD_RANK", "2"},
                      {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                     o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--coordinator"));
  o.coordinator = "head:5000";
  r = ResolveOpenMpi({{"OMPI_COMM_WORLD_RANK", "2"},
                      {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                     o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->coordinator, "head:5000");

  r = ResolveCluster({{"RANK", "1"},
                      {"WORLD_SIZE", "2"},
                      {"LOCAL_RANK", "0"},
                      {"MASTER_ADDR", "10.0.0.1"},
                      {"MASTER_PORT", "29500"}},
                     {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "torchrun");
  EXPECT_EQ(r->coordinator, "10.0.0.1:29500");
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"MASTER_PORT", "99999"}, {"MASTER_ADDR", ""}, {"WORLD_SIZE", "0"}, {"RANK", "-1"}}) {
    Environment env = {
        {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
    env[name] = value;
    auto bad = ResolveTorchrun(env, {});
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(name)) << name;
  }
}

TEST(ClusterResolverTest, KubernetesIndexedJob) {
  Environment env = {{"JOB_COMPLETION_INDEX", "2"},         {"SHARDFLOW_NUM_TASKS", "3"},
                     {"SHARDFLOW_SERVICE", "train"},        {"HOSTNAME", "mnist-2"},
                     {"SHARDFLOW_PS_JOB_NAME", "mnist-ps"}, {"SHARDFLOW_NUM_PS", "1"}};
  auto r = ResolveCluster(env, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "Kubernetes");
  EXPECT_EQ(r->job, "worker");
  EXPECT_EQ(r->task, 2);
  EXPECT_THAT(r->spec.job_addresses().at("worker"),
              ElementsAre("mnist-0.train:2222", "mnist-1.train:2222", "mnist-2.train:2222"));
  EXPECT_THAT(r->spec.job_addresses().at("ps"), ElementsAre("mnist-ps-0.train:2222"));
  // The ps Job's pod.
  Environment ps = {{"JOB_COMPLETION_INDEX", "0"},
                    {"SHARDFLOW_NUM_TASKS", "3"},
                    {"SHARDFLOW_SERVICE", "train"},
                    {"HOSTNAME", "mnist-ps-0"},
                    {"SHARDFLOW_JOB", "ps"},
                    {"SHARDFLOW_NUM_PS", "1"},
                    {"SHARDFLOW_WORKER_JOB_NAME", "mnist"}};
  r = ResolveKubernetes(ps, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job, "ps");
  EXPECT_EQ(*r->spec.TaskAddress("worker", 0), "mnist-0.train:2222");
  for (const auto& [name, value, words] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"HOSTNAME", "mnist-7", "is not <job name>-2"},
           {"JOB_COMPLETION_INDEX", "5", "JOB_COMPLETION_INDEX=5 but the Job has 3"},
           {"SHARDFLOW_SERVICE", "", "SHARDFLOW_SERVICE is not set"},
           {"SHARDFLOW_JOB", "chief", "neither worker nor ps"},
           {"SHARDFLOW_PORT", "0", "outside 1..65535"}}) {
    Environment e = env;
    if (name == "JOB_COMPLETION_INDEX") e["HOSTNAME"] = "mnist-" + value;
    if (value.empty()) {
      e.erase(name);
    } else {
      e[name] = value;
    }
    auto bad = ResolveKubernetes(e, {});
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(words)) << name;
  }
}

TEST(ClusterResolverTest, NoLauncherIsAClearError) {
  auto r = ResolveCluster({{"HOME", "/root"}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("found no launcher"));
}

ClusterResolution Rank(int rank, int size, int coordinator_port) {
  ClusterResolution r;
  r.source = "test";
  r.task = rank;
  r.num_tasks = size;
  r.port = 5000 + rank;
  r.coordinator = absl::StrCat("127.0.0.1:", coordinator_port);
  return r;
}

// Regressions (launcher probe, 2026-11-30): a coordinator port of 99999 listened on 34463 and
// one of 0 on a port of the kernel's choosing, where no other rank looks; a TF_CONFIG left in
// the environment of mpirun's ranks made every rank worker:0 without a word; empty Slurm node
// lists named a variable nobody set.
TEST(ClusterResolverTest, CoordinatorPortsTfConfigBesideALauncherAndEmptyNodeLists) {
  for (const std::string port : {"99999", "0", "-5", "http", "22x"}) {
    ClusterResolution r = Rank(0, 2, 1);
    r.coordinator = "127.0.0.1:" + port;
    auto spec = GatherClusterSpec(r, absl::Seconds(1));
    ASSERT_FALSE(spec.ok()) << port;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
    EXPECT_THAT(spec.status().message(), HasSubstr("port in 1..65535")) << spec.status();
  }
  Environment env = {{"TF_CONFIG", R"({"cluster": {"worker": ["w0:2222", "w1:2222"]},
                                        "task": {"type": "worker", "index": 0}})"},
                     {"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "2"}};
  auto r = ResolveCluster(env, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, "TF_CONFIG");
  EXPECT_THAT(r->warning, HasSubstr("OMPI_COMM_WORLD_RANK"));
  env.erase("OMPI_COMM_WORLD_RANK");
  env.erase("OMPI_COMM_WORLD_SIZE");
  EXPECT_TRUE(ResolveCluster(env, {})->warning.empty());
  Environment slurm = SlurmEnv(2, 1, 0);
  for (const char* v : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    slurm.erase(v);
  }
  auto empty = ResolveCluster(slurm, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("none of SLURM_STEP_NODELIST"));
}

TEST(ClusterResolverTest, RendezvousGathersEveryRanksAddress) {
  const int port = FreePort();
  std::vector<absl::StatusOr<ClusterSpec>> got(3, absl::UnknownError(""));
  std::vector<std::thread> ranks;
  for (int rank = 2; rank >= 0; --rank) {  // rank 0 last: the others wait for it
    ranks.emplace_back(
        [&, rank] { got[rank] = GatherClusterSpec(Rank(rank, 3, port), absl::Seconds(20)); });
  }
  for (auto& t : ranks) t.join();
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(got[rank].ok()) << got[rank].status();
    EXPECT_THAT(got[rank]->job_addresses().at("worker"),
                ElementsAre("127.0.0.1:5000", "127.0.0.1:5001", "127.0.0.1:5002"));
  }
}

TEST(ClusterResolverTest, RendezvousNamesTheRanksThatNeverCame) {
  const int port = FreePort();
  absl::StatusOr<ClusterSpec> one = absl::UnknownError("");
  std::thread rank1([&] { one = GatherClusterSpec(Rank(1, 4, port), absl::Seconds(2)); });
  auto zero = GatherClusterSpec(Rank(0, 4, port), absl::Seconds(1));
  rank1.join();
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(std::string(zero.status().message()), HasSubstr("rank(s) 2, 3 of 4 never arrived"));
  ASSERT_FALSE(one.ok());
  // A rank whose coordinator never answers names it.
  auto lonely = GatherClusterSpec(Rank(3, 4, FreePort()), absl::Milliseconds(500));
  ASSERT_FALSE(lonely.ok());
  EXPECT_THAT(std::string(lonely.status().message()), HasSubstr("could not reach the rendezvous"));
}

TEST(ClusterResolverTest, RendezvousDropsGarbageAndKeepsGoing) {
  const int port = FreePort();
  absl::StatusOr<ClusterSpec> zero = absl::UnknownError("");
  std::thread rank0([&] { zero = GatherClusterSpec(Rank(0, 2, port), absl::Seconds(20)); });
  // A stranger sends garbage (and a rank out of range), then the real rank 1 comes.
  for (const std::string hello :
       {std::string(1000, 'x') + "\n", std::string("shardflow-rendezvous 9:1 worker\n")}) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
        send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
        close(fd);
        break;
      }
      close(fd);
      usleep(20000);
    }
  }
  auto one = GatherClusterSpec(Rank(1, 2, port), absl::Seconds(20));
  rank0.join();
  ASSERT_TRUE(zero.ok()) << zero.status();
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(*one->TaskAddress("worker", 1), "127.0.0.1:5001");
}

}  // namespace
}  // namespace shardflow
