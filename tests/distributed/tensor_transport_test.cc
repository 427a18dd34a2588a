// RecvTensor end to end: a tensor a _Send leaves on one server is pulled over gRPC bit-exactly
// (0 bytes, small, strings, 64 MB); the wire format's checks (truncated, mismatched or garbage
// bytes give errors, never a crash); ranged pulls (64 MB + 3 bytes in 4 MB and odd ranges, bad
// ranges, an abort in the middle); the remote rendezvous pulls from another task. And, for each
// transport (grpc, and ucx where built: TransportTest), the same semantics through the
// TensorTransport interface: bit-exact round trips, the destination written in place, an abort or
// a shutdown failing a waiting pull, cancellation aborting the step on the sender, a stale
// incarnation refused, and a UCX receiver falling back to gRPC for a peer without UCX.
#include <algorithm>
#include <atomic>
#include <random>
#include <utility>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/tensor_util.h"
#include "distributed/data_plane.h"
#include "distributed/grpc/grpc_server.h"
#include "distributed/grpc/tensor_coding.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/distributed/distributed_test_util.h"

namespace shardflow {
namespace {

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";

class TensorTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = test::StartServer(0);
    ASSERT_NE(server_, nullptr);
    cache_ = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
    client_ = *cache_->GetClient(server_->address(), server_->task_name());
  }

  // Sends `value` in step `step_id` on the server (it then waits in the step's rendezvous).
  absl::Status SendOnServer(const Tensor& value, int64_t step_id) {
    return test::SendOnTask0(client_.get(), server_->incarnation(), value, step_id);
  }

  std::string Key() const {
    return RendezvousKey(kTask0Cpu, server_->incarnation(), kTask1Cpu, "t:0");
  }

  // Pulls the tensor of step `step_id` over RecvTensor with `client` (null = client_).
  absl::StatusOr<Tensor> Pull(int64_t step_id, GrpcWorkerClient* client = nullptr,
                              Allocator* allocator = nullptr) {
    if (client == nullptr) client = client_.get();
    absl::Notification done;
    absl::StatusOr<Tensor> result;
    client->RecvTensorAsync(step_id, Key(), allocator, nullptr,
                            [&](const absl::Status& s, Tensor t) {
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

  // Sends `value` in step `step_id` on the server and pulls it back over RecvTensor.
  absl::StatusOr<Tensor> RoundTrip(const Tensor& value, int64_t step_id,
                                   GrpcWorkerClient* client = nullptr) {
    SF_RETURN_IF_ERROR(SendOnServer(value, step_id));
    return Pull(step_id, client);
  }

  // A client of its own, pulling tensors as ranges of `chunk_bytes`, `in_flight` at a time.
  std::shared_ptr<GrpcWorkerClient> RangedClient(int64_t chunk_bytes, int in_flight) {
    GrpcClientOptions options;
    options.recv_chunk_bytes = chunk_bytes;
    options.recv_ranges_in_flight = in_flight;
    ranged_caches_.push_back(std::make_shared<GrpcWorkerCache>(options));
    return *ranged_caches_.back()->GetClient(server_->address(), server_->task_name());
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::shared_ptr<GrpcWorkerClient> client_;
  std::vector<std::shared_ptr<GrpcWorkerCache>> ranged_caches_;
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

Tensor RandomBytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DT_UINT8, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
  return t;
}

TEST_F(TensorTransportTest, RangedRoundTripsAreBitExact) {
  std::mt19937 rng(11);
  Tensor floats(DT_FLOAT, TensorShape({16, 1024, 1024}));  // 64 MB
  uint32_t* words = reinterpret_cast<uint32_t*>(floats.raw_data());
  for (int64_t i = 0; i < floats.NumElements(); ++i) words[i] = rng();
  Tensor strings(DT_STRING, TensorShape({2, 2}));  // never split: one call
  for (int i = 0; i < 4; ++i) strings.data<std::string>()[i] = std::string(3 << 20, 'a' + i);
  auto odd_chunks = RangedClient((3 << 20) + 5, 2);
  auto tiny_chunks = RangedClient(1000, 4);
  struct Case {
    Tensor value;
    GrpcWorkerClient* client;
  };
  std::vector<Case> cases = {
      {RandomBytes((int64_t{64} << 20) + 3, 1), nullptr},  // 4 MB ranges, the last 3 bytes
      {floats, nullptr},
      {RandomBytes((int64_t{64} << 20) + 3, 2), odd_chunks.get()},
      {RandomBytes(100003, 3), tiny_chunks.get()},  // 101 ranges, 4 in flight
      {RandomBytes(1000, 4), tiny_chunks.get()},    // exactly one range: a whole reply
      {strings, tiny_chunks.get()},
      {Tensor::Scalar<float>(2.5f), tiny_chunks.get()},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto got = RoundTrip(cases[i].value, 300 + i, cases[i].client);
    ASSERT_TRUE(got.ok()) << "case " << i << ": " << got.status();
    EXPECT_TRUE(TensorsEqual(cases[i].value, *got)) << "case " << i;
    if (got->dtype() != DT_STRING) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got->raw_data()) % Allocator::kAlignment, 0u);
    }
  }
  // Every range was served, so the server let go of every tensor and retired every step.
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0);
}

// One raw RecvTensor call with `request`.
grpc::Status RawRecvTensor(grpc::GenericStub* stub, const RecvTensorRequest& request,
                           grpc::ByteBuffer* response) {
  grpc::Slice slice(request.SerializeAsString());
  grpc::ByteBuffer buffer(&slice, 1);
  grpc::ClientContext context;
  absl::Notification done;
  grpc::Status status;
  stub->UnaryCall(&context, "/shardflow.WorkerService/RecvTensor", grpc::StubOptions(), &buffer,
                  response, [&](grpc::Status s) {
                    status = s;
                    done.Notify();
                  });
  done.WaitForNotification();
  return status;
}

TEST_F(TensorTransportTest, BadRangeIsInvalidArgumentAndServerKeepsServing) {
  const Tensor value = RandomBytes(1000, 5);
  ASSERT_TRUE(SendOnServer(value, 60).ok());
  grpc::GenericStub stub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  auto request = [&](int64_t offset, int64_t length) {
    RecvTensorRequest r;
    r.set_step_id(60);
    r.set_rendezvous_key(Key());
    r.set_offset(offset);
    r.set_length(length);
    return r;
  };
  Tensor assembled(DT_UINT8, TensorShape({1000}));
  grpc::ByteBuffer response;
  ASSERT_TRUE(RawRecvTensor(&stub, request(0, 100), &response).ok());
  auto first = RecvTensorReply::Parse(response);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->whole());
  EXPECT_EQ(first->range_offset(), 0);
  EXPECT_EQ(first->range_length(), 100);
  ASSERT_TRUE(first->CopyInto(&assembled).ok());
  // Overlapping what was served, outside the tensor, negative, empty: errors, nothing served.
  for (auto [offset, length] : std::vector<std::pair<int64_t, int64_t>>{
           {50, 100}, {0, 1}, {1000, 1}, {5000, 10}, {-1, 5}, {5, 0}, {200, -3}}) {
    grpc::Status status = RawRecvTensor(&stub, request(offset, length), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << offset << "+" << length << ": " << status.error_message();
  }
  // The rest, asked past the end: cut at the end of the tensor.
  ASSERT_TRUE(RawRecvTensor(&stub, request(100, 1 << 20), &response).ok());
  auto rest = RecvTensorReply::Parse(response);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->range_offset(), 100);
  EXPECT_EQ(rest->range_length(), 900);
  ASSERT_TRUE(rest->CopyInto(&assembled).ok());
  EXPECT_TRUE(TensorsEqual(value, assembled));
  // All served: the tensor is gone; a further range finds the step finished.
  grpc::Status late = RawRecvTensor(&stub, request(0, 10), &response);
  EXPECT_FALSE(late.ok());
  auto got = RoundTrip(Tensor::Scalar<int32_t>(7), 61);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 7);
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0);
}

// Regression (issue 10, finding 5): a receiver that pulled one range of a tensor and went away
// left the tensor kept on the serving worker forever. Now it is freed once no range has been
// pulled for the transfer idle timeout.
TEST_F(TensorTransportTest, AnAbandonedRangedPullIsFreedByTheCollector) {
  const Tensor value = RandomBytes(int64_t{4} << 20, 9);
  ASSERT_TRUE(SendOnServer(value, 80).ok());
  grpc::GenericStub stub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  RecvTensorRequest r;
  r.set_step_id(80);
  r.set_rendezvous_key(Key());
  r.set_offset(0);
  r.set_length(1 << 20);
  grpc::ByteBuffer response;
  ASSERT_TRUE(RawRecvTensor(&stub, r, &response).ok());
  RangedRecvTensorServer* ranged =
      static_cast<GrpcServer*>(server_.get())->worker_service()->ranged();
  EXPECT_EQ(ranged->num_kept(), 1);
  // Not yet idle long enough: kept.
  ranged->CollectGarbage(absl::Now() + absl::Seconds(1));
  EXPECT_EQ(ranged->num_kept(), 1);
  ranged->CollectGarbage(absl::Now() + ServerOptions().transfer_idle_timeout + absl::Seconds(1));
  EXPECT_EQ(ranged->num_kept(), 0);
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0);
  // The receiver, if it comes back, learns why.
  r.set_offset(1 << 20);
  grpc::Status late = RawRecvTensor(&stub, r, &response);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::ABORTED) << late.error_message();
  EXPECT_TRUE(absl::StrContains(late.error_message(), "abandoned")) << late.error_message();
}

// The CPU allocator, but the first large allocation (the destination of a ranged pull: the
// first range has been served, the rest not yet) tells the test and waits for its go-ahead.
class PausingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "pausing"; }
  void* AllocateRaw(size_t alignment, size_t num_bytes) override {
    if (num_bytes >= (1 << 20) && !paused_.exchange(true)) {
      reached.Notify();
      resume.WaitForNotification();
    }
    return CpuAllocator()->AllocateRaw(alignment, num_bytes);
  }
  void DeallocateRaw(void* ptr, size_t num_bytes) override {
    CpuAllocator()->DeallocateRaw(ptr, num_bytes);
  }
  AllocatorStats GetStats() const override { return CpuAllocator()->GetStats(); }
  absl::Notification reached;
  absl::Notification resume;

 private:
  std::atomic<bool> paused_{false};
};

TEST_F(TensorTransportTest, AbortDuringRangedPullFailsItWithTheAbortAndNeverHangs) {
  const Tensor value = RandomBytes(int64_t{16} << 20, 6);
  auto client = RangedClient(64 << 10, 4);  // 256 ranges
  for (bool wait_for_first_range : {true, false}) {
    const int64_t step_id = wait_for_first_range ? 70 : 71;
    ASSERT_TRUE(SendOnServer(value, step_id).ok());
    PausingAllocator allocator;
    absl::Notification done;
    absl::Status status;
    client->RecvTensorAsync(step_id, Key(), &allocator, nullptr,
                            [&](const absl::Status& s, Tensor) {
                              status = s;
                              done.Notify();
                            });
    if (wait_for_first_range) {
      // The first range has been served; the server keeps the tensor for the others.
      allocator.reached.WaitForNotification();
      server_->worker()->AbortStep(step_id, absl::AbortedError("test abort"));
      allocator.resume.Notify();
    } else {
      // Aborted while ranges are on the wire (or before: either way it must fail, not hang).
      allocator.reached.WaitForNotificationWithTimeout(absl::Seconds(10));
      allocator.resume.Notify();
      server_->worker()->AbortStep(step_id, absl::AbortedError("test abort"));
    }
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30))) << "the pull hangs";
    if (wait_for_first_range || !status.ok()) {
      EXPECT_FALSE(status.ok());
      EXPECT_TRUE(absl::StrContains(status.message(), "test abort")) << status;
    }
  }
  auto got = RoundTrip(Tensor::Scalar<int32_t>(9), 72, client.get());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 9);
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0) << "aborted tensors released";
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
  // A bool is 0 or 1: a peer's other byte is refused, not read (undefined behaviour).
  RecvTensorHeader bools;
  bools.set_dtype(DT_BOOL);
  bools.mutable_shape()->add_dim(3);
  bools.set_num_bytes(3);
  EXPECT_TRUE(DecodeTensor(RawReply(bools, std::string("\1\0\1", 3)), nullptr).ok());
  auto bad_bool = DecodeTensor(RawReply(bools, std::string("\1\x5d\1", 3)), nullptr);
  EXPECT_EQ(bad_bool.status().code(), absl::StatusCode::kInvalidArgument) << bad_bool.status();
  EXPECT_TRUE(absl::StrContains(bad_bool.status().message(), "byte 93")) << bad_bool.status();
}

TEST(TensorCodingTest, RangeRepliesCarryTheirPlaceAndAreChecked) {
  const Tensor t = RandomBytes(100000, 8);
  Tensor assembled(DT_UINT8, TensorShape({100000}));
  for (auto [offset, length] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {10, 40000}, {40010, 59989}, {99999, 1}}) {
    auto reply = RecvTensorReply::Parse(EncodeTensorRange(t, offset, length));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_FALSE(reply->whole());
    EXPECT_EQ(reply->total_bytes(), 100000);
    ASSERT_TRUE(reply->CopyInto(&assembled).ok());
    EXPECT_FALSE(DecodeTensor(EncodeTensorRange(t, offset, length), nullptr).ok())
        << "a range is not a whole tensor";
  }
  EXPECT_TRUE(TensorsEqual(t, assembled));
  Tensor wrong(DT_INT8, TensorShape({100000}));
  auto reply = RecvTensorReply::Parse(EncodeTensorRange(t, 0, 10));
  EXPECT_FALSE(reply->CopyInto(&wrong).ok());
  // A lying sender: a range outside the tensor, bytes that do not match the range, a range of
  // a string tensor.
  RecvTensorHeader header;
  header.set_dtype(DT_UINT8);
  header.mutable_shape()->add_dim(16);
  header.set_num_bytes(16);
  header.set_range_offset(8);
  header.set_range_length(8);
  EXPECT_TRUE(RecvTensorReply::Parse(RawReply(header, std::string(8, 'x'))).ok());
  EXPECT_FALSE(RecvTensorReply::Parse(RawReply(header, std::string(7, 'x'))).ok());
  header.set_range_length(9);
  EXPECT_FALSE(RecvTensorReply::Parse(RawReply(header, std::string(9, 'x'))).ok());
  header.set_range_offset(-8);
  header.set_range_length(8);
  EXPECT_FALSE(RecvTensorReply::Parse(RawReply(header, std::string(8, 'x'))).ok());
  header.set_dtype(DT_STRING);
  header.set_num_bytes(0);
  header.set_range_offset(0);
  header.set_range_length(8);
  EXPECT_FALSE(RecvTensorReply::Parse(RawReply(header, std::string(8, 'x'))).ok());
}

// The same pulls through the TensorTransport interface, once per transport: "grpc" (the
// server's RecvTensor) and "ucx" (both tasks' UCX data planes; skipped when UCX is not built).
class TransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& transport = GetParam();
    if (transport == "ucx") {
      std::vector<std::string> have = RegisteredDataPlanes();
      if (std::find(have.begin(), have.end(), "ucx") == have.end()) {
        GTEST_SKIP() << "this build has no UCX (apt-get install libucx-dev)";
      }
    }
    server_ = StartServerWith(transport);
    ASSERT_NE(server_, nullptr);
    cache_ = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
    client_ = *cache_->GetClient(server_->address(), server_->task_name());
    transport_ = MakeTransport(transport);
    ASSERT_NE(transport_, nullptr);
  }

  static std::unique_ptr<Server> StartServerWith(const std::string& transport) {
    ServerOptions options;
    options.job = "worker";
    options.task = 0;
    options.address = "127.0.0.1:0";
    options.config.set_inter_op_threads(2);
    options.config.set_intra_op_threads(1);
    options.transport = transport;
    auto server = Server::Create(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  // The receiving side: task 1's transport.
  std::unique_ptr<TensorTransport> MakeTransport(const std::string& transport) {
    if (transport == "grpc") return cache_->NewTransport();
    auto plane =
        NewDataPlane(transport, {"/job:worker/replica:0/task:1"}, cache_, cache_->NewTransport());
    EXPECT_TRUE(plane.ok()) << plane.status();
    if (!plane.ok()) return nullptr;
    return std::unique_ptr<TensorTransport>(std::move(*plane));
  }

  absl::Status SendOnServer(const Tensor& value, int64_t step_id) {
    return test::SendOnTask0(client_.get(), server_->incarnation(), value, step_id);
  }

  RecvTensorCall Call(int64_t step_id, uint64_t incarnation = 0) const {
    RecvTensorCall call;
    call.task = server_->task_name();
    call.address = server_->address();
    call.step_id = step_id;
    call.key = RendezvousKey(kTask0Cpu, incarnation != 0 ? incarnation : server_->incarnation(),
                             kTask1Cpu, "t:0");
    return call;
  }

  // Starts a pull; Wait() gives its result.
  struct PendingPull {
    absl::Notification done;
    absl::StatusOr<Tensor> result;
    CallCancellation cancel;
    bool Wait(absl::Duration timeout = absl::Seconds(30)) {
      return done.WaitForNotificationWithTimeout(timeout);
    }
  };
  std::unique_ptr<PendingPull> Start(const RecvTensorCall& call, TensorTransport* t = nullptr) {
    auto pull = std::make_unique<PendingPull>();
    PendingPull* p = pull.get();
    (t != nullptr ? t : transport_.get())
        ->RecvTensorAsync(call, &p->cancel, [p](const absl::Status& s, Tensor tensor) {
          if (s.ok()) {
            p->result = std::move(tensor);
          } else {
            p->result = s;
          }
          p->done.Notify();
        });
    return pull;
  }

  absl::StatusOr<Tensor> RoundTrip(const Tensor& value, int64_t step_id) {
    SF_RETURN_IF_ERROR(SendOnServer(value, step_id));
    auto pull = Start(Call(step_id));
    if (!pull->Wait()) return absl::DeadlineExceededError("the pull hangs");
    return pull->result;
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::shared_ptr<GrpcWorkerClient> client_;
  std::unique_ptr<TensorTransport> transport_;
};

TEST_P(TransportTest, RoundTripsAreBitExact) {
  std::mt19937 rng(17);
  std::vector<Tensor> values;
  values.push_back(Tensor(DT_FLOAT, TensorShape({0, 3})));
  values.push_back(Tensor::Scalar<float>(3.5f));
  values.push_back(Tensor::FromVector<int64_t>({1, -2, 3, 1LL << 40}));
  Tensor bools(DT_BOOL, TensorShape({5}));
  for (int i = 0; i < 5; ++i) bools.data<bool>()[i] = (i % 2) == 0;
  values.push_back(bools);
  Tensor mid(DT_DOUBLE, TensorShape({128, 1024}));  // 1 MB: past UCX's eager threshold
  for (int64_t i = 0; i < mid.NumElements(); ++i) mid.data<double>()[i] = rng() * 1e-3;
  values.push_back(mid);
  Tensor big(DT_FLOAT, TensorShape({16, 1024, 1024}));  // 64 MB, NaNs included
  uint32_t* words = reinterpret_cast<uint32_t*>(big.raw_data());
  for (int64_t i = 0; i < big.NumElements(); ++i) words[i] = rng();
  values.push_back(big);
  Tensor strings(DT_STRING, TensorShape({4}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = "hello";
  strings.data<std::string>()[2] = std::string(1000, '\0');
  strings.data<std::string>()[3] = std::string(300000, 'x');  // a large string reply
  values.push_back(strings);
  for (size_t i = 0; i < values.size(); ++i) {
    auto got = RoundTrip(values[i], 100 + i);
    ASSERT_TRUE(got.ok()) << "value " << i << ": " << got.status();
    EXPECT_TRUE(TensorsEqual(values[i], *got)) << "value " << i << ": " << got->DebugString();
    EXPECT_FALSE(got->SharesBufferWith(values[i]));
  }
  EXPECT_EQ(test::ActiveStepsAfterSettling(server_->worker()), 0) << "pulled steps are retired";
}

TEST_P(TransportTest, TheReceiverWritesStraightIntoAFittingDestination) {
  Tensor value = RandomBytes(int64_t{8} << 20, 21);
  ASSERT_TRUE(SendOnServer(value, 200).ok());
  RecvTensorCall call = Call(200);
  call.destination = Tensor(DT_UINT8, TensorShape({int64_t{8} << 20}));
  auto pull = Start(call);
  ASSERT_TRUE(pull->Wait()) << "the pull hangs";
  ASSERT_TRUE(pull->result.ok()) << pull->result.status();
  EXPECT_TRUE(TensorsEqual(value, *pull->result));
  EXPECT_TRUE(pull->result->SharesBufferWith(call.destination)) << "copied, not written in place";
  // A destination of another shape is not used.
  ASSERT_TRUE(SendOnServer(value, 201).ok());
  call = Call(201);
  call.destination = Tensor(DT_UINT8, TensorShape({16}));
  pull = Start(call);
  ASSERT_TRUE(pull->Wait());
  ASSERT_TRUE(pull->result.ok()) << pull->result.status();
  EXPECT_TRUE(TensorsEqual(value, *pull->result));
  EXPECT_FALSE(pull->result->SharesBufferWith(call.destination));
}

TEST_P(TransportTest, AnAbortOnTheSenderFailsAWaitingPullWithTheAbort) {
  auto pull = Start(Call(300));  // nothing sent yet: the pull waits on the sender
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(pull->done.HasBeenNotified());
  server_->worker()->AbortStep(300, absl::AbortedError("test abort"));
  ASSERT_TRUE(pull->Wait()) << "the pull hangs";
  EXPECT_EQ(pull->result.status().code(), absl::StatusCode::kAborted) << pull->result.status();
  EXPECT_TRUE(absl::StrContains(pull->result.status().message(), "test abort"));
  auto got = RoundTrip(Tensor::Scalar<int32_t>(5), 301);  // and the task serves on
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 5);
}

TEST_P(TransportTest, CancellingAPullEndsItAndAbortsTheStepOnTheSender) {
  auto pull = Start(Call(400));
  absl::SleepFor(absl::Milliseconds(200));
  pull->cancel.Cancel();
  ASSERT_TRUE(pull->Wait(absl::Seconds(10))) << "a cancelled pull hangs";
  EXPECT_EQ(pull->result.status().code(), absl::StatusCode::kCancelled) << pull->result.status();
  // The sender learns of it: the step is aborted there.
  absl::Status step;
  for (int i = 0; i < 200 && step.ok(); ++i) {
    step = server_->worker()->StepStatus(400);
    if (step.ok()) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(step.ok()) << "the step still runs on the sender";
  // A later pull of another step is unaffected.
  auto got = RoundTrip(Tensor::Scalar<int32_t>(6), 401);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 6);
}

TEST_P(TransportTest, AKeyForAnotherIncarnationIsRefused) {
  ASSERT_TRUE(SendOnServer(Tensor::Scalar<int32_t>(1), 500).ok());
  auto pull = Start(Call(500, server_->incarnation() + 1));
  ASSERT_TRUE(pull->Wait());
  EXPECT_FALSE(pull->result.ok());
  EXPECT_TRUE(absl::StrContains(pull->result.status().message(), "incarnation"))
      << pull->result.status();
}

TEST_P(TransportTest, AServerShuttingDownFailsAWaitingPull) {
  auto pull = Start(Call(600));
  absl::SleepFor(absl::Milliseconds(200));
  server_->Shutdown();
  ASSERT_TRUE(pull->Wait()) << "the pull hangs";
  EXPECT_FALSE(pull->result.ok());
}

TEST_P(TransportTest, GetStatusPublishesTheDataPlane) {
  GetStatusResponse status;
  ASSERT_TRUE(client_->GetStatus(&status).ok());
  if (GetParam() == "ucx") {
    EXPECT_EQ(status.data_plane(), "ucx");
    EXPECT_FALSE(status.data_plane_address().empty());
  } else {
    EXPECT_EQ(status.data_plane(), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values("grpc", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(UcxTransportTest, APeerWithoutUcxIsPulledFromOverGrpc) {
  std::vector<std::string> have = RegisteredDataPlanes();
  if (std::find(have.begin(), have.end(), "ucx") == have.end()) {
    GTEST_SKIP() << "this build has no UCX";
  }
  std::unique_ptr<Server> grpc_only = test::StartServer(0);
  ASSERT_NE(grpc_only, nullptr);
  auto cache = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
  auto client = *cache->GetClient(grpc_only->address(), grpc_only->task_name());
  auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1"}, cache, cache->NewTransport());
  ASSERT_TRUE(plane.ok()) << plane.status();
  for (int64_t step = 1; step <= 2; ++step) {  // the second asks no GetStatus again
    ASSERT_TRUE(test::SendOnTask0(client.get(), grpc_only->incarnation(),
                                  Tensor::Scalar<int32_t>(static_cast<int32_t>(40 + step)), step)
                    .ok());
    RecvTensorCall call;
    call.task = grpc_only->task_name();
    call.address = grpc_only->address();
    call.step_id = step;
    call.key = RendezvousKey(kTask0Cpu, grpc_only->incarnation(), kTask1Cpu, "t:0");
    absl::Notification done;
    absl::StatusOr<Tensor> result;
    (*plane)->RecvTensorAsync(call, nullptr, [&](const absl::Status& s, Tensor t) {
      result = s.ok() ? absl::StatusOr<Tensor>(std::move(t)) : absl::StatusOr<Tensor>(s);
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->scalar<int32_t>(), 40 + step);
  }
}

TEST(UcxTransportTest, AnUnknownTransportIsRefusedByName) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.transport = "verbs";
  auto server = Server::Create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(server.status().message(), "grpc or ucx")) << server.status();
}

}  // namespace
}  // namespace shardflow
