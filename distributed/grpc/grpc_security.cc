#include "distributed/grpc/grpc_security.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"
#include "grpc/grpc_security.h"
#include "grpc/slice.h"
#include "grpcpp/client_context.h"

namespace shardflow {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read the ", what, " file '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", what, " file '", path, "' is not PEM (no -----BEGIN line)"));
  }
  return text.str();
}

constexpr char kWrongToken[] =
    "missing or wrong token: this server requires \"authorization: Bearer <token>\" metadata "
    "with the cluster's shared token (--token)";

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
bool ConstantTimeEquals(const char* a, size_t a_len, const std::string& b) {
  if (a_len != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a_len; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Note [Authentication before parsing]
// gRPC reads a whole request into memory before a handler can look at the call's metadata, so
// a token checked in the handler lets anyone make the server buffer and parse a message of
// the maximum size. The token is therefore checked by an auth metadata processor on the
// server's credentials: gRPC calls it when the call's headers arrive, before any message is
// read, and a wrong token ends the call there (UNAUTHENTICATED) with at most a flow-control
// window of body bytes ever received. The C++ wrapper of gRPC 1.51 refuses a processor on
// insecure credentials, so the server's credentials are made with gRPC's C API (insecure or
// SSL alike) and handed to the builder through CoreServerCredentials. The handlers check the
// token again (CheckBearerToken), which costs nothing and guards against a misconfigured build.
void ProcessToken(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md,
                  size_t num_md, grpc_process_auth_metadata_done_cb cb, void* user_data) {
  const std::string& expected = *static_cast<const std::string*>(state);
  for (size_t i = 0; i < num_md; ++i) {
    const grpc_slice& key = md[i].key;
    if (GRPC_SLICE_LENGTH(key) != 13 ||
        std::memcmp(GRPC_SLICE_START_PTR(key), "authorization", 13) != 0) {
      continue;
    }
    const grpc_slice& value = md[i].value;
    if (ConstantTimeEquals(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(value)),
                           GRPC_SLICE_LENGTH(value), expected)) {
      cb(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
      return;
    }
  }
  cb(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_UNAUTHENTICATED, kWrongToken);
}

void DestroyToken(void* state) { delete static_cast<std::string*>(state); }

// grpc::ServerCredentials over credentials made with gRPC's C API (which the builder binds
// through the private AddPortToServer, overridden here).
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit CoreServerCredentials(grpc_server_credentials* credentials)
      : credentials_(credentials) {}
  ~CoreServerCredentials() override { grpc_server_credentials_release(credentials_); }
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/) override {
    // Not used: the token processor is set on credentials_ directly (MakeServerCredentials).
  }

 private:
  int AddPortToServer(const std::string& address, grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* const credentials_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const GrpcSecurityOptions& options, const std::string& address) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate and a key file (tls_cert_file and tls_key_file)");
  }
  if (options.tls_cert_file.empty()) {
    if (!options.plaintext && !IsLoopbackAddress(address)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing to serve plaintext on ", address,
          ", which is not a loopback address; give a TLS certificate and key, or ask for "
          "plaintext explicitly (--plaintext; from Python plaintext=True or SHARDFLOW_PLAINTEXT=1; "
          "GrpcSecurityOptions.plaintext)"));
    }
  }
  grpc_server_credentials* credentials = nullptr;
  if (options.tls_cert_file.empty()) {
    credentials = grpc_insecure_server_credentials_create();
  } else {
    auto key = ReadPem(options.tls_key_file, "TLS key");
    if (!key.ok()) return key.status();
    auto cert = ReadPem(options.tls_cert_file, "TLS certificate");
    if (!cert.ok()) return cert.status();
    std::string ca;
    if (options.require_client_cert) {
      if (options.tls_ca_file.empty()) {
        return absl::InvalidArgumentError(
            "require_client_cert needs tls_ca_file, the CA that signs client certificates");
      }
      auto read = ReadPem(options.tls_ca_file, "TLS CA");
      if (!read.ok()) return read.status();
      ca = *read;
    }
    grpc_ssl_pem_key_cert_pair pair = {key->c_str(), cert->c_str()};
    credentials = grpc_ssl_server_credentials_create_ex(
        ca.empty() ? nullptr : ca.c_str(), &pair, 1,
        options.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
        nullptr);
  }
  if (credentials == nullptr) {
    return absl::InvalidArgumentError(
        "gRPC could not make server credentials from the TLS files (is the key the "
        "certificate's?)");
  }
  if (!options.token.empty()) {
    grpc_auth_metadata_processor processor;
    processor.process = &ProcessToken;
    processor.destroy = &DestroyToken;
    processor.state = new std::string("Bearer " + options.token);
    grpc_server_credentials_set_auth_metadata_processor(credentials, processor);
  }
  return std::shared_ptr<grpc::ServerCredentials>(new CoreServerCredentials(credentials));
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const GrpcSecurityOptions& options, const std::string& address) {
  if (!options.tls()) {
    if (!options.plaintext && !IsLoopbackAddress(address)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing to connect in plaintext to ", address,
          ", which is not a loopback address; give a TLS CA file, or ask for plaintext "
          "explicitly (--plaintext; from Python plaintext=True or SHARDFLOW_PLAINTEXT=1; "
          "GrpcSecurityOptions.plaintext)"));
    }
    return grpc::InsecureChannelCredentials();
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both tls_cert_file and tls_key_file (or neither, to present "
        "no certificate)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    auto ca = ReadPem(options.tls_ca_file, "TLS CA");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  if (!options.tls_cert_file.empty()) {
    auto key = ReadPem(options.tls_key_file, "TLS key");
    if (!key.ok()) return key.status();
    auto cert = ReadPem(options.tls_cert_file, "TLS certificate");
    if (!cert.ok()) return cert.status();
    ssl.pem_private_key = *key;
    ssl.pem_cert_chain = *cert;
  }
  return grpc::SslCredentials(ssl);
}

grpc::Status CheckBearerToken(const grpc::ServerContextBase& context, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it != metadata.end() &&
      ConstantTimeEquals(it->second.data(), it->second.size(), "Bearer " + token)) {
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, kWrongToken);
}

void AddBearerToken(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

}  // namespace shardflow
