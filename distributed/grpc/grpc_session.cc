// The "grpc://host:port" session: a client of the MasterService served at that address.
//
//   SessionOptions options;
//   options.target = "grpc://10.0.0.1:2222";
//   options.config.set_auth_token("s3cret");          // when the cluster uses one
//   SF_ASSIGN_OR_RETURN(auto session, NewSession(options));
//
// Feeds and fetched tensors travel in the RunStep call; everything else (placement, partition,
// the step on every task) happens on the master.
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/platform/status.h"
#include "core/protos/master.grpc.pb.h"
#include "distributed/grpc/grpc_security.h"
#include "distributed/grpc/grpc_status.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "grpcpp/create_channel.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

constexpr int64_t kControlTimeoutMs = 60000;

class GrpcSession final : public Session {
 public:
  GrpcSession(std::string address, SessionOptionsProto config,
              std::unique_ptr<MasterService::Stub> stub)
      : address_(std::move(address)), config_(std::move(config)), stub_(std::move(stub)) {}
  ~GrpcSession() override { Close().IgnoreError(); }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    if (!handle_.empty()) {
      return absl::FailedPreconditionError(
          "Session::Create was called twice; use Extend to add nodes");
    }
    CreateSessionRequest request;
    *request.mutable_graph_def() = graph;
    *request.mutable_config() = config_;
    CreateSessionResponse response;
    grpc::ClientContext context;
    Prepare(&context, kControlTimeoutMs);
    SF_RETURN_IF_ERROR(
        Annotate("CreateSession", stub_->CreateSession(&context, request, &response)));
    handle_ = response.session_handle();
    return absl::OkStatus();
  }

  absl::Status Extend(const GraphDef& graph) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    ExtendSessionRequest request;
    request.set_session_handle(handle);
    *request.mutable_graph_def() = graph;
    ExtendSessionResponse response;
    grpc::ClientContext context;
    Prepare(&context, kControlTimeoutMs);
    return Annotate("ExtendSession", stub_->ExtendSession(&context, request, &response));
  }

  absl::Status Run(const RunOptions& options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    RunStepRequest request;
    request.set_session_handle(handle);
    for (const auto& [name, tensor] : feeds) {
      NamedTensor* f = request.add_feeds();
      f->set_name(name);
      if (tensor.IsInitialized()) tensor.AsProto(f->mutable_tensor());
    }
    for (const std::string& f : fetches) request.add_fetches(f);
    for (const std::string& t : targets) request.add_targets(t);
    *request.mutable_options() = options;
    if (metadata != nullptr) request.mutable_options()->set_report_placement(true);
    RunStepResponse response;
    grpc::ClientContext context;
    // The master enforces timeout_in_ms; the call's deadline leaves it time to say so.
    Prepare(&context, options.timeout_in_ms() > 0 ? options.timeout_in_ms() + 5000 : 0);
    SF_RETURN_IF_ERROR(Annotate("RunStep", stub_->RunStep(&context, request, &response)));
    if (outputs != nullptr) {
      outputs->clear();
      for (const TensorProto& p : response.tensors()) {
        SF_ASSIGN_OR_RETURN(Tensor t, Tensor::FromProto(p));
        outputs->push_back(std::move(t));
      }
    }
    if (metadata != nullptr) *metadata = std::move(*response.mutable_metadata());
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() const override {
    ListDevicesRequest request;
    ListDevicesResponse response;
    grpc::ClientContext context;
    Prepare(&context, kControlTimeoutMs);
    std::vector<DeviceAttributes> out;
    SF_RETURN_IF_ERROR(Annotate("ListDevices", stub_->ListDevices(&context, request, &response)));
    for (const WorkerDevice& d : response.devices()) {
      out.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
    }
    return out;
  }

  absl::Status Reset(const std::vector<std::string>& containers) override {
    ResetRequest request;
    for (const std::string& c : containers) request.add_container(c);
    *request.mutable_device_filters() = config_.device_filters();
    ResetResponse response;
    grpc::ClientContext context;
    Prepare(&context, kControlTimeoutMs);
    return Annotate("Reset", stub_->Reset(&context, request, &response));
  }

  absl::Status Close() override {
    std::string handle;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      handle.swap(handle_);
    }
    if (handle.empty()) return absl::OkStatus();
    CloseSessionRequest request;
    request.set_session_handle(handle);
    CloseSessionResponse response;
    grpc::ClientContext context;
    Prepare(&context, kControlTimeoutMs);
    return Annotate("CloseSession", stub_->CloseSession(&context, request, &response));
  }

 private:
  void Prepare(grpc::ClientContext* context, int64_t timeout_ms) const {
    AddBearerToken(context, config_.auth_token());
    if (timeout_ms > 0) {
      context->set_deadline(std::chrono::system_clock::now() +
                            std::chrono::milliseconds(timeout_ms));
    }
  }

  absl::Status Annotate(const char* method, const grpc::Status& status) const {
    if (status.ok()) return absl::OkStatus();
    absl::Status s = FromGrpcStatus(status);
    // Errors from the master name their task already; say where the master is otherwise.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::Status(
          s.code(), absl::StrCat("master at ", address_, ": ", method, " failed: ", s.message()));
    }
    return s;
  }

  absl::StatusOr<std::string> Handle() {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    if (handle_.empty()) {
      return absl::FailedPreconditionError("Session::Run before Session::Create");
    }
    return handle_;
  }

  const std::string address_;
  const SessionOptionsProto config_;
  const std::unique_ptr<MasterService::Stub> stub_;
  absl::Mutex mu_;
  std::string handle_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

absl::StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options) {
  std::string address = options.target.substr(std::string("grpc://").size());
  if (address.empty() || address.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("session target '", options.target, "' has no address; use grpc://host:port"));
  }
  GrpcClientOptions client;
  client.security.token = options.config.auth_token();
  client.security.tls_ca_file = options.config.tls_ca_file();
  client.security.tls_cert_file = options.config.tls_cert_file();
  client.security.tls_key_file = options.config.tls_key_file();
  client.security.plaintext = options.config.plaintext();
  SF_ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(client.security, address));
  auto channel = grpc::CreateCustomChannel(address, credentials, WorkerChannelArguments(client));
  return std::unique_ptr<Session>(
      new GrpcSession(address, options.config, MasterService::NewStub(channel)));
}

const bool kRegistered = [] {
  RegisterSessionFactory("grpc", NewGrpcSession);
  return true;
}();

}  // namespace
}  // namespace shardflow
