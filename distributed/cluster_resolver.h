// Cluster resolvers: where this process is in its cluster, from the environment a launcher
// gives it, so that nobody writes a cluster.json for 64 nodes.
//
//   SF_ASSIGN_OR_RETURN(ClusterResolution r, ResolveCluster(ProcessEnvironment(), {}));
//   if (r.needs_rendezvous()) {                       // MPI, torchrun: ranks but no addresses
//     SF_ASSIGN_OR_RETURN(r.spec, GatherClusterSpec(r, absl::Minutes(2)));
//   }
//   ... serve r.spec's task (r.job, r.task) ...
//
// Sources, tried in this order by ResolveCluster (each also callable on its own):
//   TF_CONFIG   TensorFlow's JSON: {"cluster": {"worker": ["h:p", ...], "ps": [...]},
//               "task": {"type": "worker", "index": 1}}.
//   Slurm       SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST),
//               SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE), SLURM_LOCALID, SLURM_NODEID,
//               SLURM_DISTRIBUTION (block, the default, or cyclic): task r of job "worker" is
//               its node's name : base_port + its local index, so several tasks per node get
//               distinct ports.
//   OpenMPI     OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//               OMPI_COMM_WORLD_LOCAL_SIZE: ranks only; the addresses come from a rendezvous at
//               the coordinator (options.coordinator, else 127.0.0.1:base_port-1 when every rank
//               is on one node).
//   Kubernetes  an indexed Job: JOB_COMPLETION_INDEX, SHARDFLOW_NUM_TASKS, SHARDFLOW_SERVICE
//               (the headless Service), HOSTNAME (<job>-<index>), SHARDFLOW_JOB (worker or ps;
//               default worker), SHARDFLOW_PORT; optionally SHARDFLOW_PS_JOB_NAME and
//               SHARDFLOW_NUM_PS (a second indexed Job of parameter servers). Task i of the Job
//               is <job>-<i>.<service>:port, the name Kubernetes gives that pod.
//   torchrun    RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT: ranks; the rendezvous is
//               at MASTER_ADDR:MASTER_PORT.
//
// Errors name the variable and what is wrong with it (missing, not a number, out of range, a
// TF_CONFIG that is not JSON or whose task type the cluster lacks, a hostlist that does not
// parse, counts that disagree).
#ifndef SHARDFLOW_DISTRIBUTED_CLUSTER_RESOLVER_H_
#define SHARDFLOW_DISTRIBUTED_CLUSTER_RESOLVER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distributed/cluster_spec.h"

namespace shardflow {

using Environment = std::map<std::string, std::string>;

// This process's environment variables.
Environment ProcessEnvironment();

struct ResolveOptions {
  // The first task's port on each host (Slurm, Kubernetes, rendezvous: base_port + local rank).
  int base_port = 2222;
  // Where ranks meet when the environment gives no addresses ("host:port"); "" = the source's
  // default (see above).
  std::string coordinator;
};

struct ClusterResolution {
  std::string source;  // "TF_CONFIG", "Slurm", "OpenMPI", "Kubernetes", "torchrun"
  std::string job = "worker";
  int task = 0;
  // Complete when the source names every address; empty when a rendezvous must gather them.
  ClusterSpec spec;
  // For a rendezvous: the number of tasks (all of job `job`), this task's port, and where rank 0
  // listens.
  int num_tasks = 0;
  int port = 0;
  std::string coordinator;
  // Said to the user when the choice may not be what they meant (a TF_CONFIG left in the
  // environment of a task another launcher started); empty otherwise.
  std::string warning;
  bool needs_rendezvous() const { return spec.tasks().empty(); }
};

absl::StatusOr<ClusterResolution> ResolveTfConfig(const Environment& env);
absl::StatusOr<ClusterResolution> ResolveSlurm(const Environment& env,
                                               const ResolveOptions& options);
absl::StatusOr<ClusterResolution> ResolveOpenMpi(const Environment& env,
                                                 const ResolveOptions& options);
absl::StatusOr<ClusterResolution> ResolveKubernetes(const Environment& env,
                                                    const ResolveOptions& options);
absl::StatusOr<ClusterResolution> ResolveTorchrun(const Environment& env,
                                                  const ResolveOptions& options);
// The first source whose variables are set. Error when none is, saying what each needs.
absl::StatusOr<ClusterResolution> ResolveCluster(const Environment& env,
                                                 const ResolveOptions& options);

// Slurm's hostlist syntax: "node[01-04,07],gpu7" -> node01 node02 node03 node04 node07 gpu7
// (zero padding kept). At most 100,000 names. `variable` names the source in errors.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& hostlist,
                                                        const std::string& variable);
// Slurm's tasks per node: "2(x3),1" -> 2 2 2 1.
absl::StatusOr<std::vector<int>> ExpandTasksPerNode(const std::string& counts,
                                                    const std::string& variable);

// The rendezvous of ranks that know no addresses (MPI, torchrun): rank 0 listens at
// r.coordinator, every rank sends it "<rank> <host:port>" (its own address as rank 0 sees it
// reach it, at r.port), and rank 0 answers everyone with the whole list once all have come. A
// rank that has not arrived within `timeout` is named in the error (on rank 0; the others get
// an error naming the coordinator). Messages are bounded (a line of at most 256 bytes each way
// per rank; the answer at most 64 bytes per rank). Returns the spec (job r.job, tasks in rank
// order).
absl::StatusOr<ClusterSpec> GatherClusterSpec(const ClusterResolution& r, absl::Duration timeout);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_CLUSTER_RESOLVER_H_
