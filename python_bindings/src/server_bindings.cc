// Python bindings for an in-process task server (sf.train.Server): one task of a cluster with
// its devices, its worker and a master, so that sessions opened at its target run graphs across
// the cluster — the piece TensorFlow 1.x's between-graph replication builds on.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distributed/cluster_resolver.h"
#include "distributed/cluster_spec.h"
#include "distributed/peer_watch.h"
#include "distributed/server.h"
#include "python_bindings/src/status_exceptions.h"

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;

class ServerHandle {
 public:
  ServerHandle(std::map<std::string, std::vector<std::string>> cluster, const std::string& job,
               int task, int inter_op_threads, int intra_op_threads, int cpu_device_count,
               const std::string& auth_token, bool plaintext, double connect_timeout_s,
               const std::string& transport) {
    ServerOptions options;
    options.transport = transport;
    options.job = job;
    options.task = task;
    SF_PY_ASSIGN_OR_THROW(options.cluster, ClusterSpec::FromMap(std::move(cluster)));
    if (!options.cluster.HasTask(job, task)) {
      throw StatusError(absl::InvalidArgumentError(
          absl::StrCat("the cluster has no task ", task, " of job '", job, "': its jobs are ",
                       options.cluster.ToJson())));
    }
    options.config.set_inter_op_threads(inter_op_threads);
    options.config.set_intra_op_threads(intra_op_threads);
    options.config.set_cpu_device_count(cpu_device_count);
    options.security.token = auth_token;
    options.security.plaintext = plaintext;
    options.host_master = true;
    // A worker started before its parameter servers waits this long for them (then the error
    // names them), as TensorFlow's CreateSession waits for its workers.
    if (connect_timeout_s > 0) options.master.connect_timeout = absl::Seconds(connect_timeout_s);
    cluster_ = options.cluster;
    security_ = options.security;
    py::gil_scoped_release release;
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(options);
    if (!server.ok()) {
      py::gil_scoped_acquire acquire;
      ThrowIfError(server.status());
    }
    server_ = std::move(*server);
  }
  ~ServerHandle() {
    py::gil_scoped_release release;
    server_.reset();
  }

  std::string address() const { return Get()->address(); }
  std::string task_name() const { return Get()->task_name(); }
  void Join() {
    Server* s = Get();
    py::gil_scoped_release release;
    s->Wait();
  }
  void Stop() {
    Server* s = Get();
    py::gil_scoped_release release;
    s->Shutdown();
  }
  // Until Unwatch, a lost task of `tasks` ((job, index) pairs) fails every step of this
  // server's master, naming it (distributed/peer_watch.h): synchronous training must not wait
  // for a dead worker's gradients.
  void Watch(const std::vector<std::pair<std::string, int>>& tasks) {
    Master* master = Get()->master();
    if (master == nullptr) return;
    std::vector<TaskId> ids;
    for (const auto& [job, task] : tasks) ids.push_back({job, task});
    py::gil_scoped_release release;
    absl::StatusOr<std::shared_ptr<PeerWatch>> watch = PeerWatch::Start(cluster_, ids, security_);
    if (!watch.ok()) {
      py::gil_scoped_acquire acquire;
      ThrowIfError(watch.status());
    }
    if (watch_ != nullptr) watch_->Stop();
    watch_ = *watch;
    master->SetPeerWatch(watch_);
  }
  void Unwatch() {
    Master* master = Get()->master();
    if (master == nullptr || watch_ == nullptr) return;
    py::gil_scoped_release release;
    watch_->Stop();
    master->SetPeerWatch(nullptr);
    watch_.reset();
  }

 private:
  Server* Get() const {
    if (!server_) throw StatusError(absl::FailedPreconditionError("the server was destroyed"));
    return server_.get();
  }
  ClusterSpec cluster_;
  SecurityOptions security_;
  std::shared_ptr<PeerWatch> watch_;
  std::unique_ptr<Server> server_;
};

// A resolution as a dict: source, job, task, num_tasks, port, coordinator, cluster (job ->
// addresses; empty until a rendezvous for MPI and torchrun).
py::dict ResolutionDict(const ClusterResolution& r) {
  py::dict d;
  d["source"] = r.source;
  d["job"] = r.job;
  d["task"] = r.task;
  d["num_tasks"] = r.num_tasks;
  d["port"] = r.port;
  d["coordinator"] = r.coordinator;
  d["cluster"] = r.spec.job_addresses();
  return d;
}

py::dict Resolve(const std::string& source, const Environment& env, int base_port,
                 const std::string& coordinator) {
  ResolveOptions options;
  options.base_port = base_port;
  options.coordinator = coordinator;
  absl::StatusOr<ClusterResolution> r =
      source == "auto"         ? ResolveCluster(env, options)
      : source == "TF_CONFIG"  ? ResolveTfConfig(env)
      : source == "Slurm"      ? ResolveSlurm(env, options)
      : source == "OpenMPI"    ? ResolveOpenMpi(env, options)
      : source == "Kubernetes" ? ResolveKubernetes(env, options)
      : source == "torchrun"   ? ResolveTorchrun(env, options)
                               : absl::StatusOr<ClusterResolution>(absl::InvalidArgumentError(
                                     absl::StrCat("unknown cluster resolver '", source, "'")));
  ThrowIfError(r.status());
  return ResolutionDict(*r);
}

std::map<std::string, std::vector<std::string>> Gather(const std::string& source,
                                                       const std::string& job, int task,
                                                       int num_tasks, int port,
                                                       const std::string& coordinator,
                                                       double timeout_s) {
  ClusterResolution r;
  r.source = source;
  r.job = job;
  r.task = task;
  r.num_tasks = num_tasks;
  r.port = port;
  r.coordinator = coordinator;
  absl::StatusOr<ClusterSpec> spec;
  {
    py::gil_scoped_release release;
    spec = GatherClusterSpec(r, absl::Seconds(timeout_s));
  }
  ThrowIfError(spec.status());
  return spec->job_addresses();
}

}  // namespace

void RegisterServerBindings(py::module_& m) {
  m.def("resolve_cluster", &Resolve, py::arg("source"), py::arg("env"), py::arg("base_port"),
        py::arg("coordinator"));
  m.def("gather_cluster_spec", &Gather, py::arg("source"), py::arg("job"), py::arg("task"),
        py::arg("num_tasks"), py::arg("port"), py::arg("coordinator"), py::arg("timeout_s"));
  py::class_<ServerHandle>(m, "ServerHandle", "The C++ task server behind sf.train.Server.")
      .def(py::init<std::map<std::string, std::vector<std::string>>, std::string, int, int, int,
                    int, std::string, bool, double, std::string>(),
           py::arg("cluster"), py::arg("job"), py::arg("task"), py::arg("inter_op_threads") = 0,
           py::arg("intra_op_threads") = 0, py::arg("cpu_device_count") = 0,
           py::arg("auth_token") = "", py::arg("plaintext") = false,
           py::arg("connect_timeout_s") = 0.0, py::arg("transport") = "auto")
      .def_property_readonly("address", &ServerHandle::address)
      .def_property_readonly("task_name", &ServerHandle::task_name)
      .def("join", &ServerHandle::Join)
      .def("stop", &ServerHandle::Stop)
      .def("watch", &ServerHandle::Watch, py::arg("tasks"))
      .def("unwatch", &ServerHandle::Unwatch);
}

}  // namespace python
}  // namespace shardflow
