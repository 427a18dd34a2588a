// SecurityOptions: how the tasks of a cluster and their clients authenticate each other and
// protect their traffic, whatever the protocol (gRPC today; see distributed/protocol.h).
//
//   SecurityOptions security;
//   security.tls_cert_file = "server.pem";  security.tls_key_file = "server.key";
//   security.tls_ca_file = "ca.pem";        // clients verify servers against it; with
//   security.require_client_cert = true;    //   this, servers verify clients against it too
//   security.token = "s3cret";              // every call carries "authorization: Bearer s3cret"
//
// A server without TLS serves plaintext only when `plaintext` is set or its address is a
// loopback one (127.0.0.0/8, localhost, [::1]); otherwise it refuses to start. The token is
// checked on every call before its body is read (docs/distributed.md, "Security and limits").
//
// Thread safety: plain values; the functions are thread-safe.
#ifndef SHARDFLOW_DISTRIBUTED_SECURITY_H_
#define SHARDFLOW_DISTRIBUTED_SECURITY_H_

#include <string>

namespace shardflow {

struct SecurityOptions {
  // Allow plaintext on a non-loopback address (servers) or to any address (clients).
  bool plaintext = false;
  // PEM files. A server with cert+key serves TLS; a client with ca verifies servers with it
  // (and presents cert+key when they are given, for servers that require client certs; one
  // without the other is an error). A server's own calls to its peers (RecvTensor) are made with
  // the same options: give servers tls_ca_file too, or their peers are checked against the
  // system's roots.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
  // Server: require and verify client certificates against tls_ca_file.
  bool require_client_cert = false;
  // Client: the name to expect in the server's certificate instead of the host of the address
  // (e.g. when connecting to 127.0.0.1 with a certificate for "worker0").
  std::string tls_server_name_override;
  // Shared secret sent as "authorization: Bearer <token>" and checked on every call.
  std::string token;

  bool tls() const { return !tls_cert_file.empty() || !tls_ca_file.empty(); }
};

// True for 127.0.0.0/8, localhost, [::1] hosts ("host:port").
bool IsLoopbackAddress(const std::string& address);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_SECURITY_H_
