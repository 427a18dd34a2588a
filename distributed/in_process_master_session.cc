// NewInProcessMasterSession (distributed/master.h): a Session whose client is the master
// itself, in this process.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/platform/status.h"
#include "distributed/master.h"

namespace shardflow {

namespace {

class InProcessMasterSession final : public Session {
 public:
  InProcessMasterSession(std::shared_ptr<Master> master, SessionOptions options)
      : master_(std::move(master)), options_(std::move(options)) {}
  ~InProcessMasterSession() override { Close().IgnoreError(); }

  absl::Status Create(const GraphDef& graph) override {
    absl::MutexLock lock(&mu_);
    if (!handle_.empty()) {
      return absl::FailedPreconditionError(
          "Session::Create was called twice; use Extend to add nodes");
    }
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    SF_ASSIGN_OR_RETURN(handle_, master_->CreateSession(graph, options_.config));
    return absl::OkStatus();
  }
  absl::Status Extend(const GraphDef& graph) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    return master_->ExtendSession(handle, graph);
  }
  absl::Status Run(const RunOptions& options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    SF_ASSIGN_OR_RETURN(std::string handle, Handle());
    std::vector<Tensor> out;
    RunOptions asked = options;
    if (metadata != nullptr) asked.set_report_placement(true);  // as a remote client asks
    SF_RETURN_IF_ERROR(master_->RunStep(handle, asked, feeds, fetches, targets,
                                        outputs != nullptr ? outputs : &out, metadata));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() const override {
    return master_->ListDevices();
  }
  absl::Status Reset(const std::vector<std::string>& containers) override {
    const auto& filters = options_.config.device_filters();
    return master_->Reset(containers, {filters.begin(), filters.end()});
  }
  absl::Status Close() override {
    std::string handle;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      handle.swap(handle_);
    }
    return handle.empty() ? absl::OkStatus() : master_->CloseSession(handle);
  }

 private:
  absl::StatusOr<std::string> Handle() {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    if (handle_.empty()) {
      return absl::FailedPreconditionError("Session::Run before Session::Create");
    }
    return handle_;
  }

  const std::shared_ptr<Master> master_;
  const SessionOptions options_;
  absl::Mutex mu_;
  std::string handle_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> NewInProcessMasterSession(std::shared_ptr<Master> master,
                                                                   const SessionOptions& options) {
  if (master == nullptr)
    return absl::InvalidArgumentError("NewInProcessMasterSession needs a master");
  return std::unique_ptr<Session>(new InProcessMasterSession(std::move(master), options));
}

}  // namespace shardflow
