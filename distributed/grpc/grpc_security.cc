#include "distributed/grpc/grpc_security.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

std::string HostOf(const std::string& address) {
  std::string host = address;
  size_t colon = address.rfind(':');
  if (colon != std::string::npos) host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  std::string host = HostOf(address);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

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
          "plaintext explicitly (GrpcSecurityOptions.plaintext / --plaintext)"));
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(
      options.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                  : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  auto key = ReadPem(options.tls_key_file, "TLS key");
  if (!key.ok()) return key.status();
  auto cert = ReadPem(options.tls_cert_file, "TLS certificate");
  if (!cert.ok()) return cert.status();
  pair.private_key = *key;
  pair.cert_chain = *cert;
  ssl.pem_key_cert_pairs.push_back(pair);
  if (options.require_client_cert) {
    if (options.tls_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "require_client_cert needs tls_ca_file, the CA that signs client certificates");
    }
    auto ca = ReadPem(options.tls_ca_file, "TLS CA");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const GrpcSecurityOptions& options, const std::string& address) {
  if (!options.tls()) {
    if (!options.plaintext && !IsLoopbackAddress(address)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing to connect in plaintext to ", address,
          ", which is not a loopback address; give a TLS CA file, or ask for plaintext "
          "explicitly (GrpcSecurityOptions.plaintext / --plaintext)"));
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
  if (it != metadata.end()) {
    const grpc::string_ref& value = it->second;
    const std::string expected = "Bearer " + token;
    if (value.size() == expected.size() && std::string(value.data(), value.size()) == expected) {
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong token: this server requires \"authorization: Bearer "
                      "<token>\" metadata with the cluster's shared token (--token)");
}

void AddBearerToken(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

}  // namespace shardflow
