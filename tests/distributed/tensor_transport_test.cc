// RecvTensor end to end: a tensor a _Send leaves on one server is pulled over gRPC bit-exactly
// (0 bytes, small, strings, 64 MB); the wire format's checks (truncated, mismatched or garbage
// bytes give errors, never a crash); the remote rendezvous pulls from another task.
#include <random>

#include "core/framework/attr_value.h"
#include "core/framework/tensor_util.h"
#include "distributed/grpc/tensor_coding.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/distributed/distributed_test_util.h"

namespace shardflow {
namespace {

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";

// _Arg(0) -> _Send to task:1 under `key`'s edge "t:0".
GraphDef SendGraph(DataType dtype, uint64_t incarnation) {
  GraphDef def;
  NodeDef* arg = def.add_node();
  arg->set_name("arg");
  arg->set_op("_Arg");
  (*arg->mutable_attr())["T"] = MakeAttr(dtype);
  (*arg->mutable_attr())["index"] = MakeAttr(0);
  NodeDef* send = def.add_node();
  send->set_name("send");
  send->set_op("_Send");
  send->add_input("arg");
  auto& attr = *send->mutable_attr();
  attr["T"] = MakeAttr(dtype);
  attr["tensor_name"] = MakeAttr(std::string("t:0"));
  attr["send_device"] = MakeAttr(std::string(kTask0Cpu));
  attr["recv_device"] = MakeAttr(std::string(kTask1Cpu));
  attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(incarnation));
  return def;
}

class TensorTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = test::StartServer(0);
    ASSERT_NE(server_, nullptr);
    cache_ = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
    client_ = *cache_->GetClient(server_->address(), server_->task_name());
  }

  // Sends `value` in step `step_id` on the server and pulls it back over RecvTensor.
  absl::StatusOr<Tensor> RoundTrip(const Tensor& value, int64_t step_id) {
    RegisterGraphRequest reg;
    (*reg.mutable_partitions())[kTask0Cpu] = SendGraph(value.dtype(), server_->incarnation());
    RegisterGraphResponse reg_response;
    SF_RETURN_IF_ERROR(client_->RegisterGraph(reg, &reg_response));
    RunGraphRequest run;
    run.set_graph_handle(reg_response.graph_handle());
    run.set_step_id(step_id);
    IndexedTensor* arg = run.add_args();
    arg->set_index(0);
    value.AsProto(arg->mutable_tensor());
    RunGraphResponse run_response;
    SF_RETURN_IF_ERROR(client_->RunGraph(run, &run_response));
    absl::Notification done;
    absl::StatusOr<Tensor> result;
    client_->RecvTensorAsync(step_id,
                             RendezvousKey(kTask0Cpu, server_->incarnation(), kTask1Cpu, "t:0"),
                             nullptr, nullptr, [&](const absl::Status& s, Tensor t) {
                               if (s.ok()) {
                                 result = std::move(t);
                               } else {
                                 result = s;
                               }
                               done.Notify();
                             });
    done.WaitForNotification();
    return result;
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::shared_ptr<GrpcWorkerClient> client_;
};

TEST_F(TensorTransportTest, RoundTripsAreBitExact) {
  std::mt19937 rng(7);
  std::vector<Tensor> values;
  values.push_back(Tensor(DT_FLOAT, TensorShape({0, 3})));               // 0 bytes
  values.push_back(Tensor::Scalar<float>(3.5f));                         // 4 bytes
  values.push_back(Tensor::FromVector<int64_t>({1, -2, 3, 1LL << 40}));  // small
  Tensor mid(DT_DOUBLE, TensorShape({128, 1024}));                       // 1 MB: 2 slices
  for (int64_t i = 0; i < mid.NumElements(); ++i) mid.data<double>()[i] = rng() * 1e-3;
  values.push_back(mid);
  Tensor big(DT_FLOAT, TensorShape({16, 1024, 1024}));  // 64 MB
  uint32_t* words = reinterpret_cast<uint32_t*>(big.raw_data());
  for (int64_t i = 0; i < big.NumElements(); ++i) words[i] = rng();  // NaNs included
  values.push_back(big);
  Tensor strings(DT_STRING, TensorShape({3}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = "hello";
  strings.data<std::string>()[2] = std::string(1000, '\0');
  values.push_back(strings);
  for (size_t i = 0; i < values.size(); ++i) {
    auto got = RoundTrip(values[i], 100 + i);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(TensorsEqual(values[i], *got)) << "value " << i << ": " << got->DebugString();
    EXPECT_FALSE(got->SharesBufferWith(values[i]));
    if (got->dtype() != DT_STRING && got->TotalBytes() > 0) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got->raw_data()) % Allocator::kAlignment, 0u);
    }
  }
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0) << "pulled steps are retired";
}

TEST_F(TensorTransportTest, GarbageRequestIsInvalidArgumentAndServerKeepsServing) {
  grpc::GenericStub stub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  for (std::string garbage : {std::string("\xff\xff\xff\xff garbage", 13), std::string()}) {
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext context;
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, "/shardflow.WorkerService/RecvTensor", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) {
                     status = s;
                     done.Notify();
                   });
    done.WaitForNotification();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  }
  auto got = RoundTrip(Tensor::Scalar<int32_t>(42), 5);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 42);
}

// Encodes a header and `payload` bytes the way a (possibly lying) sender would.
grpc::ByteBuffer RawReply(const RecvTensorHeader& header, const std::string& payload) {
  std::string header_bytes = header.SerializeAsString();
  std::string out;
  uint64_t n = header_bytes.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>(n | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  out += header_bytes + payload;
  grpc::Slice slice(out);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(TensorCodingTest, EncodeDecodeAcrossSliceSizes) {
  for (int64_t n : {0, 1, 4095, 4096, 8192, 100000}) {
    Tensor t(DT_INT32, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i * 2654435761u);
    grpc::ByteBuffer buffer = EncodeTensor(t);
    auto back = DecodeTensor(buffer, nullptr);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(TensorsEqual(t, *back)) << n;
  }
}

TEST(TensorCodingTest, HeaderThatDoesNotMatchItsBytesIsAnError) {
  RecvTensorHeader header;
  header.set_dtype(DT_FLOAT);
  header.mutable_shape()->add_dim(4);
  header.set_num_bytes(16);
  EXPECT_TRUE(DecodeTensor(RawReply(header, std::string(16, 'x')), nullptr).ok());
  auto short_payload = DecodeTensor(RawReply(header, std::string(12, 'x')), nullptr);
  EXPECT_EQ(short_payload.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(short_payload.status().message(), "12 bytes follow"))
      << short_payload.status();
  EXPECT_FALSE(DecodeTensor(RawReply(header, std::string(20, 'x')), nullptr).ok());
  header.set_num_bytes(8);  // disagrees with float[4]
  EXPECT_FALSE(DecodeTensor(RawReply(header, std::string(8, 'x')), nullptr).ok());
  // A huge shape with few bytes is refused before anything is allocated.
  header.mutable_shape()->set_dim(0, int64_t{1} << 40);
  header.set_num_bytes(int64_t{4} << 40);
  EXPECT_FALSE(DecodeTensor(RawReply(header, "abcd"), nullptr).ok());
  header.set_dtype(static_cast<DataType>(999));
  EXPECT_FALSE(DecodeTensor(RawReply(header, ""), nullptr).ok());
  // Not even a header.
  grpc::Slice junk(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11));
  EXPECT_FALSE(DecodeTensor(grpc::ByteBuffer(&junk, 1), nullptr).ok());
  grpc::Slice truncated(std::string("\x10\x08", 2));
  EXPECT_FALSE(DecodeTensor(grpc::ByteBuffer(&truncated, 1), nullptr).ok());
  EXPECT_FALSE(DecodeTensor(grpc::ByteBuffer(), nullptr).ok());
}

}  // namespace
}  // namespace shardflow
