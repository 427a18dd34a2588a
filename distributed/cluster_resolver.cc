#include "distributed/cluster_resolver.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/platform/status.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

extern char** environ;

namespace shardflow {
namespace {

constexpr int kMaxTasks = 100000;

const std::string* Find(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

absl::StatusOr<std::string> Required(const Environment& env, const std::string& name,
                                     const std::string& source) {
  const std::string* v = Find(env, name);
  if (v == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the environment variable ", name, " is not set"));
  }
  return *v;
}

// A non-negative integer variable below `limit`.
absl::StatusOr<int> IntVariable(const Environment& env, const std::string& name,
                                const std::string& source, int limit = kMaxTasks) {
  SF_ASSIGN_OR_RETURN(std::string text, Required(env, name, source));
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0 || value >= limit) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", name, "='", text,
                                                   "' is not a whole number in [0, ", limit, ")"));
  }
  return value;
}

absl::StatusOr<int> OptionalInt(const Environment& env, const std::string& name,
                                const std::string& source, int fallback, int limit) {
  if (Find(env, name) == nullptr) return fallback;
  return IntVariable(env, name, source, limit);
}

absl::Status CheckPort(int port, const std::string& what) {
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " gives port ", port, ", outside 1..65535; choose another base port"));
  }
  return absl::OkStatus();
}

// Rank and size of a source that gives ranks, checked against each other.
absl::Status RankAndSize(const Environment& env, const std::string& rank_var,
                         const std::string& size_var, const std::string& source, int* rank,
                         int* size) {
  SF_ASSIGN_OR_RETURN(*size, IntVariable(env, size_var, source, kMaxTasks + 1));
  SF_ASSIGN_OR_RETURN(*rank, IntVariable(env, rank_var, source));
  if (*size < 1 || *rank >= *size) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", rank_var, "=", *rank, " is not below ", size_var, "=", *size));
  }
  return absl::OkStatus();
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, eq - *e)] = std::string(eq + 1);
  }
  return env;
}

// ---- TF_CONFIG ------------------------------------------------------------------------------

absl::StatusOr<ClusterResolution> ResolveTfConfig(const Environment& env) {
  const std::string source = "TF_CONFIG";
  SF_ASSIGN_OR_RETURN(std::string text, Required(env, "TF_CONFIG", source));
  google::protobuf::Struct root;
  if (!google::protobuf::util::JsonStringToMessage(text, &root).ok()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG is not a JSON object; expected {\"cluster\": {\"worker\": [\"host:port\", "
        "...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  }
  auto cluster = root.fields().find("cluster");
  if (cluster == root.fields().end() ||
      cluster->second.kind_case() != google::protobuf::Value::kStructValue) {
    return absl::InvalidArgumentError("TF_CONFIG has no \"cluster\" object");
  }
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(cluster->second.struct_value(), &json).ok()) {
    return absl::InternalError("TF_CONFIG: cannot re-encode \"cluster\"");
  }
  ClusterResolution r;
  r.source = source;
  SF_ASSIGN_OR_RETURN(r.spec, ClusterSpec::FromJson(json, "TF_CONFIG's \"cluster\""));
  auto task = root.fields().find("task");
  if (task == root.fields().end() ||
      task->second.kind_case() != google::protobuf::Value::kStructValue) {
    return absl::InvalidArgumentError(
        "TF_CONFIG has no \"task\" object ({\"type\": \"worker\", \"index\": 0})");
  }
  const auto& fields = task->second.struct_value().fields();
  auto type = fields.find("type");
  auto index = fields.find("index");
  if (type == fields.end() || type->second.kind_case() != google::protobuf::Value::kStringValue) {
    return absl::InvalidArgumentError("TF_CONFIG's \"task\" has no string \"type\"");
  }
  r.job = type->second.string_value();
  double number = 0;
  if (index == fields.end()) {
    number = 0;  // TensorFlow's default
  } else if (index->second.kind_case() == google::protobuf::Value::kNumberValue) {
    number = index->second.number_value();
  } else {
    return absl::InvalidArgumentError("TF_CONFIG's task \"index\" is not a number");
  }
  if (number < 0 || number >= kMaxTasks || number != static_cast<int>(number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG's task \"index\" ", number, " is not a task index"));
  }
  r.task = static_cast<int>(number);
  if (!r.spec.HasTask(r.job, r.task)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG names task ", r.job, ":", r.task, " but its cluster has ",
        r.spec.num_tasks(r.job) == 0
            ? absl::StrCat("no job '", r.job, "' (jobs: ", absl::StrJoin(r.spec.jobs(), ", "), ")")
            : absl::StrCat(r.spec.num_tasks(r.job), " ", r.job, " task(s)")));
  }
  r.num_tasks = r.spec.num_tasks(r.job);
  return r;
}

// ---- Slurm ----------------------------------------------------------------------------------

absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& hostlist,
                                                        const std::string& variable) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable, "='", hostlist, "' is not a Slurm hostlist: ", why));
  };
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = hostlist.size();
  if (n == 0) return bad("it is empty");
  while (i < n) {
    // One item: prefix[ranges]suffix, up to a comma outside brackets.
    std::string prefix;
    while (i < n && hostlist[i] != ',' && hostlist[i] != '[') {
      if (hostlist[i] == ']') return bad("a ']' without '['");
      prefix += hostlist[i++];
    }
    if (i < n && hostlist[i] == '[') {
      const size_t close = hostlist.find(']', i);
      if (close == std::string::npos) return bad("a '[' without ']'");
      const std::string inner = hostlist.substr(i + 1, close - i - 1);
      i = close + 1;
      std::string suffix;
      while (i < n && hostlist[i] != ',') {
        if (hostlist[i] == '[' || hostlist[i] == ']') {
          return bad("more than one bracket group in one name");
        }
        suffix += hostlist[i++];
      }
      if (inner.empty()) return bad("empty brackets");
      for (absl::string_view range : absl::StrSplit(inner, ',')) {
        std::vector<std::string> ends = absl::StrSplit(range, '-');
        if (ends.size() > 2 || ends[0].empty() || (ends.size() == 2 && ends[1].empty())) {
          return bad(absl::StrCat("'", range, "' is not a number or a range a-b"));
        }
        int64_t lo = 0, hi = 0;
        for (const std::string& e : ends) {
          if (!std::all_of(e.begin(), e.end(), ::isdigit) || e.size() > 9) {
            return bad(absl::StrCat("'", range, "' is not a number or a range a-b"));
          }
        }
        absl::SimpleAtoi(ends[0], &lo);
        hi = lo;
        if (ends.size() == 2) absl::SimpleAtoi(ends[1], &hi);
        if (hi < lo) return bad(absl::StrCat("the range '", range, "' runs backwards"));
        if (static_cast<int64_t>(out.size()) + (hi - lo + 1) > kMaxTasks) {
          return bad(absl::StrCat("more than ", kMaxTasks, " names"));
        }
        const size_t width = ends[0].size();
        for (int64_t v = lo; v <= hi; ++v) {
          std::string digits = absl::StrCat(v);
          if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
          out.push_back(absl::StrCat(prefix, digits, suffix));
        }
      }
    } else {
      if (prefix.empty()) return bad("an empty name");
      out.push_back(prefix);
      if (out.size() > static_cast<size_t>(kMaxTasks)) {
        return bad(absl::StrCat("more than ", kMaxTasks, " names"));
      }
    }
    if (i < n) {
      ++i;  // the comma
      if (i == n) return bad("it ends with a comma");
    }
  }
  return out;
}

absl::StatusOr<std::vector<int>> ExpandTasksPerNode(const std::string& counts,
                                                    const std::string& variable) {
  std::vector<int> out;
  for (absl::string_view item : absl::StrSplit(counts, ',')) {
    int count = 0, repeat = 1;
    absl::string_view number = item;
    const size_t paren = item.find('(');
    if (paren != absl::string_view::npos) {
      number = item.substr(0, paren);
      absl::string_view rest = item.substr(paren);
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')' ||
          !absl::SimpleAtoi(rest.substr(2, rest.size() - 3), &repeat) || repeat < 1) {
        return absl::InvalidArgumentError(absl::StrCat(variable, "='", counts, "': '", item,
                                                       "' is not N or N(xM), as \"2(x3),1\""));
      }
    }
    if (!absl::SimpleAtoi(number, &count) || count < 0 || count > kMaxTasks || repeat > kMaxTasks ||
        out.size() + repeat > static_cast<size_t>(kMaxTasks)) {
      return absl::InvalidArgumentError(absl::StrCat(variable, "='", counts, "': '", item,
                                                     "' is not N or N(xM), as \"2(x3),1\""));
    }
    out.insert(out.end(), repeat, count);
  }
  return out;
}

absl::StatusOr<ClusterResolution> ResolveSlurm(const Environment& env,
                                               const ResolveOptions& options) {
  const std::string source = "Slurm";
  ClusterResolution r;
  r.source = source;
  int size = 0;
  SF_RETURN_IF_ERROR(RankAndSize(env, "SLURM_PROCID", "SLURM_NTASKS", source, &r.task, &size));
  const char* nodes_var = Find(env, "SLURM_STEP_NODELIST") != nullptr  ? "SLURM_STEP_NODELIST"
                          : Find(env, "SLURM_JOB_NODELIST") != nullptr ? "SLURM_JOB_NODELIST"
                                                                       : "SLURM_NODELIST";
  const char* counts_var = Find(env, "SLURM_STEP_TASKS_PER_NODE") != nullptr
                               ? "SLURM_STEP_TASKS_PER_NODE"
                               : "SLURM_TASKS_PER_NODE";
  if (Find(env, nodes_var) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST and SLURM_NODELIST is set "
                     "(or each is empty): start the tasks with srun, which sets them"));
  }
  SF_ASSIGN_OR_RETURN(std::string nodelist, Required(env, nodes_var, source));
  SF_ASSIGN_OR_RETURN(std::string counts_text, Required(env, counts_var, source));
  SF_ASSIGN_OR_RETURN(std::vector<std::string> nodes, ExpandHostlist(nodelist, nodes_var));
  SF_ASSIGN_OR_RETURN(std::vector<int> counts, ExpandTasksPerNode(counts_text, counts_var));
  if (counts.size() != nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", nodes_var, " has ", nodes.size(),
                                                   " node(s) but ", counts_var, "='", counts_text,
                                                   "' gives task counts for ", counts.size()));
  }
  int64_t total = 0;
  for (int c : counts) total += c;
  if (total != size) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", counts_var, "='", counts_text,
                                                   "' adds up to ", total,
                                                   " tasks but SLURM_NTASKS=", size));
  }
  // Which node each rank runs on: block (consecutive ranks fill a node) or cyclic (one rank per
  // node in turn).
  const std::string* distribution = Find(env, "SLURM_DISTRIBUTION");
  const bool cyclic = distribution != nullptr && distribution->rfind("cyclic", 0) == 0;
  if (distribution != nullptr && !cyclic && distribution->rfind("block", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": SLURM_DISTRIBUTION='", *distribution,
                     "' is not supported; start the step with -m block or -m cyclic"));
  }
  std::vector<int> node_of(size), local_of(size);
  std::vector<int> filled(nodes.size(), 0);
  if (cyclic) {
    int rank = 0;
    while (rank < size) {
      for (size_t n = 0; n < nodes.size() && rank < size; ++n) {
        if (filled[n] < counts[n]) {
          node_of[rank] = static_cast<int>(n);
          local_of[rank++] = filled[n]++;
        }
      }
    }
  } else {
    int rank = 0;
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (int k = 0; k < counts[n]; ++k, ++rank) {
        node_of[rank] = static_cast<int>(n);
        local_of[rank] = k;
      }
    }
  }
  // Cross-check with what Slurm says of this task, where it says it.
  if (const std::string* node_id = Find(env, "SLURM_NODEID")) {
    SF_ASSIGN_OR_RETURN(int id, IntVariable(env, "SLURM_NODEID", source));
    if (id != node_of[r.task]) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": task ", r.task, " should run on node ", node_of[r.task], " (",
                       nodes[node_of[r.task]], ") by ", counts_var, " but SLURM_NODEID=", *node_id,
                       "; start the step with the default -m block or with -m cyclic"));
    }
  }
  if (Find(env, "SLURM_LOCALID") != nullptr) {
    SF_ASSIGN_OR_RETURN(int local, IntVariable(env, "SLURM_LOCALID", source));
    if (local != local_of[r.task]) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": task ", r.task,
                                                     " should be local task ", local_of[r.task],
                                                     " of its node but SLURM_LOCALID=", local));
    }
  }
  std::vector<std::string> addresses;
  for (int rank = 0; rank < size; ++rank) {
    const int port = options.base_port + local_of[rank];
    SF_RETURN_IF_ERROR(CheckPort(port, "the base port plus a node's task count"));
    addresses.push_back(absl::StrCat(nodes[node_of[rank]], ":", port));
  }
  SF_ASSIGN_OR_RETURN(r.spec, ClusterSpec::FromMap({{"worker", addresses}}, "Slurm"));
  r.num_tasks = size;
  r.port = options.base_port + local_of[r.task];
  return r;
}

// ---- OpenMPI, torchrun ------------------------------------------------------------------------

absl::StatusOr<ClusterResolution> ResolveOpenMpi(const Environment& env,
                                                 const ResolveOptions& options) {
  const std::string source = "OpenMPI";
  ClusterResolution r;
  r.source = source;
  SF_RETURN_IF_ERROR(RankAndSize(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", source,
                                 &r.task, &r.num_tasks));
  SF_ASSIGN_OR_RETURN(int local,
                      OptionalInt(env, "OMPI_COMM_WORLD_LOCAL_RANK", source, 0, kMaxTasks));
  SF_ASSIGN_OR_RETURN(int local_size, OptionalInt(env, "OMPI_COMM_WORLD_LOCAL_SIZE", source,
                                                  r.num_tasks, kMaxTasks + 1));
  r.port = options.base_port + local;
  SF_RETURN_IF_ERROR(CheckPort(r.port, "the base port plus OMPI_COMM_WORLD_LOCAL_RANK"));
  if (!options.coordinator.empty()) {
    r.coordinator = options.coordinator;
  } else if (local_size == r.num_tasks) {
    SF_RETURN_IF_ERROR(CheckPort(options.base_port - 1, "the base port minus one"));
    r.coordinator = absl::StrCat("127.0.0.1:", options.base_port - 1);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": the ranks run on several nodes (OMPI_COMM_WORLD_LOCAL_SIZE=", local_size,
        " of OMPI_COMM_WORLD_SIZE=", r.num_tasks,
        ") and MPI does not say where rank 0 is: give --coordinator <rank 0's host>:<port>"));
  }
  return r;
}

absl::StatusOr<ClusterResolution> ResolveTorchrun(const Environment& env,
                                                  const ResolveOptions& options) {
  const std::string source = "torchrun";
  ClusterResolution r;
  r.source = source;
  SF_RETURN_IF_ERROR(RankAndSize(env, "RANK", "WORLD_SIZE", source, &r.task, &r.num_tasks));
  SF_ASSIGN_OR_RETURN(int local, OptionalInt(env, "LOCAL_RANK", source, 0, kMaxTasks));
  SF_ASSIGN_OR_RETURN(std::string host, Required(env, "MASTER_ADDR", source));
  SF_ASSIGN_OR_RETURN(int master_port, IntVariable(env, "MASTER_PORT", source, 65536));
  SF_RETURN_IF_ERROR(CheckPort(master_port, "MASTER_PORT"));
  r.port = options.base_port + local;
  SF_RETURN_IF_ERROR(CheckPort(r.port, "the base port plus LOCAL_RANK"));
  r.coordinator =
      options.coordinator.empty() ? absl::StrCat(host, ":", master_port) : options.coordinator;
  return r;
}

// ---- Kubernetes -------------------------------------------------------------------------------

absl::StatusOr<ClusterResolution> ResolveKubernetes(const Environment& env,
                                                    const ResolveOptions& options) {
  const std::string source = "Kubernetes indexed Job";
  ClusterResolution r;
  r.source = "Kubernetes";
  SF_ASSIGN_OR_RETURN(r.task, IntVariable(env, "JOB_COMPLETION_INDEX", source));
  SF_ASSIGN_OR_RETURN(int workers, IntVariable(env, "SHARDFLOW_NUM_TASKS", source, kMaxTasks + 1));
  SF_ASSIGN_OR_RETURN(std::string service, Required(env, "SHARDFLOW_SERVICE", source));
  SF_ASSIGN_OR_RETURN(std::string hostname, Required(env, "HOSTNAME", source));
  SF_ASSIGN_OR_RETURN(int port,
                      OptionalInt(env, "SHARDFLOW_PORT", source, options.base_port, 65536));
  SF_RETURN_IF_ERROR(CheckPort(port, "SHARDFLOW_PORT"));
  const std::string* job = Find(env, "SHARDFLOW_JOB");
  r.job = job != nullptr ? *job : "worker";
  if (r.job != "worker" && r.job != "ps") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": SHARDFLOW_JOB='", r.job, "' is neither worker nor ps"));
  }
  // The pod's hostname is <Job name>-<index>.
  const std::string suffix = absl::StrCat("-", r.task);
  if (hostname.size() <= suffix.size() ||
      hostname.compare(hostname.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": HOSTNAME='", hostname, "' is not <job name>-", r.task,
                     " (JOB_COMPLETION_INDEX=", r.task,
                     "); set the pod's subdomain to the headless Service "
                     "and leave its hostname to the Job"));
  }
  const std::string own_job_name = hostname.substr(0, hostname.size() - suffix.size());
  SF_ASSIGN_OR_RETURN(int num_ps, OptionalInt(env, "SHARDFLOW_NUM_PS", source, 0, kMaxTasks + 1));
  const std::string* ps_job_name = Find(env, "SHARDFLOW_PS_JOB_NAME");
  const std::string* worker_job_name = Find(env, "SHARDFLOW_WORKER_JOB_NAME");
  if (num_ps > 0 && ps_job_name == nullptr && r.job == "worker") {
    return absl::InvalidArgumentError(absl::StrCat(source, ": SHARDFLOW_NUM_PS=", num_ps,
                                                   " needs SHARDFLOW_PS_JOB_NAME (the ps Job)"));
  }
  auto addresses = [&](const std::string& job_name, int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) {
      out.push_back(absl::StrCat(job_name, "-", i, ".", service, ":", port));
    }
    return out;
  };
  std::map<std::string, std::vector<std::string>> jobs;
  if (r.job == "worker") {
    jobs["worker"] = addresses(own_job_name, workers);
    if (num_ps > 0) jobs["ps"] = addresses(*ps_job_name, num_ps);
  } else {
    if (worker_job_name == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(source,
                       ": a ps pod needs SHARDFLOW_WORKER_JOB_NAME (the workers' Job) and "
                       "SHARDFLOW_NUM_TASKS (their count)"));
    }
    SF_ASSIGN_OR_RETURN(num_ps, IntVariable(env, "SHARDFLOW_NUM_PS", source, kMaxTasks + 1));
    jobs["ps"] = addresses(own_job_name, num_ps);
    jobs["worker"] = addresses(*worker_job_name, workers);
  }
  if (r.task >= static_cast<int>(jobs[r.job].size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": JOB_COMPLETION_INDEX=", r.task, " but the Job has ", jobs[r.job].size(),
        " task(s) (", r.job == "worker" ? "SHARDFLOW_NUM_TASKS" : "SHARDFLOW_NUM_PS", ")"));
  }
  SF_ASSIGN_OR_RETURN(r.spec, ClusterSpec::FromMap(jobs, source));
  r.num_tasks = r.spec.num_tasks(r.job);
  r.port = port;
  return r;
}

absl::StatusOr<ClusterResolution> ResolveCluster(const Environment& env,
                                                 const ResolveOptions& options) {
  if (Find(env, "TF_CONFIG") != nullptr) {
    SF_ASSIGN_OR_RETURN(ClusterResolution r, ResolveTfConfig(env));
    // TF_CONFIG comes first, but one exported in a shell outlives the job it was written for:
    // a task mpirun or srun started with it would take TF_CONFIG's task, the same in every
    // rank.
    std::vector<std::string> others;
    for (const char* v : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX", "RANK"}) {
      if (Find(env, v) != nullptr) others.push_back(v);
    }
    if (!others.empty()) {
      r.warning =
          absl::StrCat("TF_CONFIG is set and so is ", absl::StrJoin(others, ", "),
                       " of another launcher; TF_CONFIG decides this task (", r.job, ":", r.task,
                       "). If that launcher started this task, unset "
                       "TF_CONFIG");
    }
    return r;
  }
  if (Find(env, "SLURM_PROCID") != nullptr && Find(env, "SLURM_STEP_ID") != nullptr) {
    return ResolveSlurm(env, options);
  }
  if (Find(env, "OMPI_COMM_WORLD_RANK") != nullptr) return ResolveOpenMpi(env, options);
  if (Find(env, "JOB_COMPLETION_INDEX") != nullptr) return ResolveKubernetes(env, options);
  if (Find(env, "RANK") != nullptr && Find(env, "WORLD_SIZE") != nullptr) {
    return ResolveTorchrun(env, options);
  }
  if (Find(env, "SLURM_JOB_ID") != nullptr) {
    return absl::InvalidArgumentError(
        "--cluster auto: this is a Slurm allocation but not a job step (no SLURM_STEP_ID): "
        "start the tasks with srun");
  }
  return absl::InvalidArgumentError(
      "--cluster auto found no launcher in the environment: set TF_CONFIG, or start under srun "
      "(SLURM_PROCID, ...), mpirun (OMPI_COMM_WORLD_RANK, ...), a Kubernetes indexed Job "
      "(JOB_COMPLETION_INDEX, SHARDFLOW_NUM_TASKS, SHARDFLOW_SERVICE), or torchrun (RANK, "
      "WORLD_SIZE, MASTER_ADDR, MASTER_PORT); or pass --cluster FILE");
}

}  // namespace shardflow
