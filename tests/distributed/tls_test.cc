// TLS between shardflow's gRPC servers and clients, with certificates made at test time by the
// `openssl` command (a throwaway CA, a server certificate for 127.0.0.1/localhost, a client
// certificate, and a second CA that signs nothing the server trusts). Skipped, with a message,
// when openssl is not installed.
//
// Checks: a TLS client that trusts the CA gets GetStatus, RunGraph and RecvTensor; a plaintext
// client and a client trusting another CA do not; two TLS servers exchange a tensor between
// themselves; with require_client_cert a client without a certificate, or with one from another
// CA, is refused and one with a CA-signed certificate is served; a token is still checked over
// TLS; a certificate for another name is refused unless the client names it.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/rendezvous.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/distributed/distributed_test_util.h"

namespace shardflow {
namespace {

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";

// PEM files in a temporary directory, made once for all tests of this file.
class Certificates {
 public:
  // Null, with `why` set, when openssl is missing or fails.
  static const Certificates* Get(std::string* why) {
    static std::string* error = new std::string;
    static const std::unique_ptr<const Certificates> certs(Make(error));  // removed at exit
    *why = *error;
    return certs.get();
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  ~Certificates() { std::system(("rm -rf '" + dir_ + "'").c_str()); }

 private:
  static const Certificates* Make(std::string* why) {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      *why = "openssl is not installed (apt-get install -y openssl); TLS tests skipped";
      return nullptr;
    }
    char tmpl[] = "/tmp/shardflow_tls_test_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      *why = "cannot make a temporary directory";
      return nullptr;
    }
    auto* certs = new Certificates();
    certs->dir_ = tmpl;
    const std::string d = certs->dir_;
    // EC keys: much faster to make than RSA ones.
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string commands[] = {
        // Two CAs: the one everybody trusts, and one that nobody does.
        absl::StrCat("openssl req -x509 ", key, " -keyout ", d, "/ca.key -out ", d,
                     "/ca.pem -days 2 -subj '/CN=shardflow test CA'"),
        absl::StrCat("openssl req -x509 ", key, " -keyout ", d, "/other_ca.key -out ", d,
                     "/other_ca.pem -days 2 -subj '/CN=another CA'"),
        Sign(d, key, "server", "localhost", "ca", "local.ext"),
        Sign(d, key, "worker0", "worker0", "ca", "worker0.ext"),
        Sign(d, key, "client", "shardflow client", "ca", "client.ext"),
        Sign(d, key, "other_client", "stranger", "other_ca", "client.ext"),
    };
    for (const auto& [name, text] : {std::pair<const char*, const char*>{
                                         "local.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
                                     {"worker0.ext", "subjectAltName=DNS:worker0"},
                                     {"client.ext", "extendedKeyUsage=clientAuth"}}) {
      std::ofstream(d + "/" + name) << text << "\n";
    }
    for (const std::string& command : commands) {
      const std::string log = d + "/openssl.log";
      if (std::system(("(" + command + ") >" + log + " 2>&1").c_str()) != 0) {
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        *why = absl::StrCat("openssl failed: ", command, "\n", text.str());
        return nullptr;
      }
    }
    return certs;
  }

  // A key and a certificate `name`.{key,pem} for `cn`, signed by `ca` with extensions `ext`.
  static std::string Sign(const std::string& d, const std::string& key, const std::string& name,
                          const std::string& cn, const std::string& ca, const std::string& ext) {
    return absl::StrCat("openssl req ", key, " -keyout ", d, "/", name, ".key -out ", d, "/", name,
                        ".csr -subj '/CN=", cn, "' && openssl x509 -req -in ", d, "/", name,
                        ".csr -CA ", d, "/", ca, ".pem -CAkey ", d, "/", ca,
                        ".key -CAcreateserial -days 2 -out ", d, "/", name, ".pem -extfile ", d,
                        "/", ext);
  }

  std::string dir_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    certs_ = Certificates::Get(&why);
    if (certs_ == nullptr) GTEST_SKIP() << why;
  }

  // A server on 127.0.0.1:0 with the certificate for 127.0.0.1; it trusts the CA for its own
  // calls to peers (and for client certificates when `require_client_cert`).
  std::unique_ptr<Server> StartTlsServer(int task, bool require_client_cert = false,
                                         const std::string& token = "",
                                         const std::string& cert = "server") {
    ServerOptions options;
    options.task = task;
    options.address = "127.0.0.1:0";
    options.config.set_inter_op_threads(2);
    options.config.set_intra_op_threads(1);
    options.security.tls_cert_file = certs_->Path(cert + ".pem");
    options.security.tls_key_file = certs_->Path(cert + ".key");
    options.security.tls_ca_file = certs_->Path("ca.pem");
    options.security.require_client_cert = require_client_cert;
    options.security.token = token;
    auto server = Server::Create(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  // Client options trusting `ca` ("" = no TLS) and presenting `cert` ("" = none).
  GrpcClientOptions Client(const std::string& ca, const std::string& cert = "") {
    GrpcClientOptions options;
    if (!ca.empty()) options.security.tls_ca_file = certs_->Path(ca + ".pem");
    if (!cert.empty()) {
      options.security.tls_cert_file = certs_->Path(cert + ".pem");
      options.security.tls_key_file = certs_->Path(cert + ".key");
    }
    options.control_timeout_ms = 5000;
    return options;
  }

  static absl::Status GetStatus(const GrpcClientOptions& options, const Server& server) {
    GrpcWorkerCache cache(options);
    auto client = cache.GetClient(server.address());
    if (!client.ok()) return client.status();
    GetStatusResponse status;
    SF_RETURN_IF_ERROR((*client)->GetStatus(&status));
    if (status.task() != server.task_name()) {
      return absl::InternalError(absl::StrCat("GetStatus names ", status.task()));
    }
    return absl::OkStatus();
  }

  const Certificates* certs_ = nullptr;
};

// Registers Const(values) -> _Send on the server's task 0, runs step 1 and pulls the tensor with
// RecvTensor, as task 1 would.
absl::StatusOr<Tensor> RunAndRecv(GrpcWorkerClient* client, uint64_t incarnation,
                                  const Tensor& value) {
  GraphDef def;
  NodeDef* c = def.add_node();
  c->set_name("c");
  c->set_op("Const");
  (*c->mutable_attr())["dtype"] = MakeAttr(value.dtype());
  (*c->mutable_attr())["value"] = MakeAttr(value);
  NodeDef* send = def.add_node();
  send->set_name("send");
  send->set_op("_Send");
  send->add_input("c");
  auto& attr = *send->mutable_attr();
  attr["T"] = MakeAttr(value.dtype());
  attr["tensor_name"] = MakeAttr(std::string("c:0"));
  attr["send_device"] = MakeAttr(std::string(kTask0Cpu));
  attr["recv_device"] = MakeAttr(std::string(kTask1Cpu));
  attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(incarnation));
  RegisterGraphRequest reg;
  (*reg.mutable_partitions())[kTask0Cpu] = def;
  RegisterGraphResponse reg_response;
  SF_RETURN_IF_ERROR(client->RegisterGraph(reg, &reg_response));
  RunGraphRequest run;
  run.set_graph_handle(reg_response.graph_handle());
  run.set_step_id(1);
  RunGraphResponse run_response;
  SF_RETURN_IF_ERROR(client->RunGraph(run, &run_response, 5000));
  absl::Notification done;
  absl::Status status;
  Tensor received;
  client->RecvTensorAsync(1, RendezvousKey(kTask0Cpu, incarnation, kTask1Cpu, "c:0"), nullptr,
                          nullptr, [&](const absl::Status& s, Tensor t) {
                            status = s;
                            received = std::move(t);
                            done.Notify();
                          });
  done.WaitForNotification();
  SF_RETURN_IF_ERROR(status);
  return received;
}

TEST_F(TlsTest, ClientTrustingTheCaRunsAGraphAndReceivesATensor) {
  auto server = StartTlsServer(0);
  ASSERT_NE(server, nullptr);
  GrpcWorkerCache cache(Client("ca"));
  auto client = cache.GetClient(server->address(), server->task_name());
  ASSERT_TRUE(client.ok()) << client.status();
  GetStatusResponse status;
  ASSERT_TRUE((*client)->GetStatus(&status).ok());
  EXPECT_EQ(status.incarnation(), server->incarnation());
  // Large enough to go as the tensor's own slice rather than inline with the header.
  Tensor value(DT_FLOAT, TensorShape({64, 1024}));
  for (int64_t i = 0; i < value.NumElements(); ++i) value.data<float>()[i] = 0.5f * i;
  auto received = RunAndRecv(client->get(), server->incarnation(), value);
  ASSERT_TRUE(received.ok()) << received.status();
  ASSERT_EQ(received->shape(), value.shape());
  EXPECT_EQ(std::memcmp(received->raw_data(), value.raw_data(), value.TotalBytes()), 0);
}

TEST_F(TlsTest, PlaintextClientAndClientTrustingAnotherCaAreRefused) {
  auto server = StartTlsServer(0);
  ASSERT_NE(server, nullptr);
  absl::Status plaintext = GetStatus(Client(""), *server);
  EXPECT_EQ(plaintext.code(), absl::StatusCode::kUnavailable) << plaintext;
  absl::Status other_ca = GetStatus(Client("other_ca"), *server);
  EXPECT_EQ(other_ca.code(), absl::StatusCode::kUnavailable) << other_ca;
  // The server keeps serving.
  EXPECT_TRUE(GetStatus(Client("ca"), *server).ok());
}

TEST_F(TlsTest, TwoTlsServersExchangeTensors) {
  auto server0 = StartTlsServer(0);
  auto server1 = StartTlsServer(1);
  ASSERT_NE(server0, nullptr);
  ASSERT_NE(server1, nullptr);
  Scope s = Scope::NewRootScope();
  auto c = ops::Const(s.WithDevice(kTask0Cpu).WithOpName("c"),
                      Tensor::FromVector<float>({-1.f, 2.f, -3.f, 4.f}));
  auto y = ops::Relu(s.WithDevice(kTask1Cpu).WithOpName("y"), c);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  GrpcWorkerCache cache(Client("ca"));
  auto g = test::RegisterDistributed(def, {}, {y.name()}, {server0.get(), server1.get()}, &cache);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<Tensor> outputs;
  // task 1 pulls c from task 0 over TLS, with the servers' own client credentials.
  ASSERT_TRUE(test::RunDistributedStep(*g, 7, {}, &outputs).ok());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].data<float>()[0], 0.f);
  EXPECT_EQ(outputs[0].data<float>()[1], 2.f);
  EXPECT_EQ(outputs[0].data<float>()[2], 0.f);
  EXPECT_EQ(outputs[0].data<float>()[3], 4.f);
}

TEST_F(TlsTest, RequiredClientCertificateMustBeSignedByTheCa) {
  auto server = StartTlsServer(0, /*require_client_cert=*/true);
  ASSERT_NE(server, nullptr);
  absl::Status no_cert = GetStatus(Client("ca"), *server);
  EXPECT_EQ(no_cert.code(), absl::StatusCode::kUnavailable) << no_cert;
  absl::Status stranger = GetStatus(Client("ca", "other_client"), *server);
  EXPECT_EQ(stranger.code(), absl::StatusCode::kUnavailable) << stranger;
  absl::Status with_cert = GetStatus(Client("ca", "client"), *server);
  EXPECT_TRUE(with_cert.ok()) << with_cert;
}

TEST_F(TlsTest, TwoServersRequiringClientCertificatesExchangeTensors) {
  // Each server presents its own certificate when it calls the other.
  auto server0 = StartTlsServer(0, /*require_client_cert=*/true);
  auto server1 = StartTlsServer(1, /*require_client_cert=*/true);
  ASSERT_NE(server0, nullptr);
  ASSERT_NE(server1, nullptr);
  Scope s = Scope::NewRootScope();
  auto c =
      ops::Const(s.WithDevice(kTask0Cpu).WithOpName("c"), Tensor::FromVector<float>({3.f, -5.f}));
  auto y = ops::Square(s.WithDevice(kTask1Cpu).WithOpName("y"), c);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  GrpcWorkerCache cache(Client("ca", "client"));
  auto g = test::RegisterDistributed(def, {}, {y.name()}, {server0.get(), server1.get()}, &cache);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<Tensor> outputs;
  absl::Status run = test::RunDistributedStep(*g, 9, {}, &outputs);
  ASSERT_TRUE(run.ok()) << run;
  EXPECT_EQ(outputs[0].data<float>()[0], 9.f);
  EXPECT_EQ(outputs[0].data<float>()[1], 25.f);
}

TEST_F(TlsTest, TokenIsCheckedOverTls) {
  auto server = StartTlsServer(0, /*require_client_cert=*/true, "s3cret");
  ASSERT_NE(server, nullptr);
  GrpcClientOptions wrong = Client("ca", "client");
  wrong.security.token = "wrong";
  absl::Status s = GetStatus(wrong, *server);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "s3cret")) << s;
  GrpcClientOptions none = Client("ca", "client");
  s = GetStatus(none, *server);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  GrpcClientOptions right = Client("ca", "client");
  right.security.token = "s3cret";
  s = GetStatus(right, *server);
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(TlsTest, CertificateForAnotherNameNeedsTheNameOverride) {
  auto server = StartTlsServer(0, false, "", /*cert=*/"worker0");
  ASSERT_NE(server, nullptr);
  absl::Status s = GetStatus(Client("ca"), *server);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  GrpcClientOptions named = Client("ca");
  named.security.tls_server_name_override = "worker0";
  s = GetStatus(named, *server);
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(TlsTest, IncompleteTlsOptionsAreErrors) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.security.tls_cert_file = certs_->Path("server.pem");
  auto server = Server::Create(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << server.status();
  options.security.tls_key_file = certs_->Path("server.key");
  options.security.require_client_cert = true;
  options.security.tls_ca_file.clear();
  server = Server::Create(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << server.status();
  // A client certificate without its key (or the other way round) is a mistake, not "no
  // client certificate".
  GrpcClientOptions client = Client("ca");
  client.security.tls_cert_file = certs_->Path("client.pem");
  GrpcWorkerCache cache(client);
  auto c = cache.GetClient("127.0.0.1:1");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  client = Client("ca");
  client.security.tls_ca_file = certs_->Path("missing.pem");
  GrpcWorkerCache missing(client);
  c = missing.GetClient("127.0.0.1:1");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound) << c.status();
}

}  // namespace
}  // namespace shardflow
