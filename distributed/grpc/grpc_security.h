// Transport security for shardflow's gRPC servers and clients: TLS and a shared token.
//
//   GrpcSecurityOptions security;
//   security.tls_cert_file = "server.pem";  security.tls_key_file = "server.key";
//   security.tls_ca_file = "ca.pem";        // clients verify servers against it; with
//   security.require_client_cert = true;    //   this, servers verify clients against it too
//   security.token = "s3cret";              // every call carries "authorization: Bearer s3cret"
//
// A server without TLS serves plaintext only when `plaintext` is set or its address is a
// loopback one (127.0.0.0/8, localhost, [::1]); otherwise it refuses to start. The token is
// checked on every call of every service hosted by a shardflow Server; a wrong or missing one is
// answered UNAUTHENTICATED and the server keeps serving. Services the lead adds to a Server
// check it with CheckBearerToken.
//
// Thread safety: the functions are thread-safe; options are plain values.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SECURITY_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distributed/security.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"

namespace shardflow {

// The protocol-neutral options, by their gRPC-era name.
using GrpcSecurityOptions = SecurityOptions;

// Credentials for a server bound to `address`. Errors: plaintext refused (naming the address
// and the way out), unreadable PEM files, a client CA required but not given.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const GrpcSecurityOptions& options, const std::string& address);

// Credentials for a channel to a server at `address`.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const GrpcSecurityOptions& options, const std::string& address);

// OK when `token` is empty or the call carries "authorization: Bearer <token>"; else
// UNAUTHENTICATED (without echoing what was sent).
grpc::Status CheckBearerToken(const grpc::ServerContextBase& context, const std::string& token);

// Adds the token (when set) to an outgoing call.
void AddBearerToken(grpc::ClientContext* context, const std::string& token);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SECURITY_H_
