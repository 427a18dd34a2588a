// The seams a device with memory of its own (a GPU) plugs into, exercised with a fake one whose
// allocator says its memory is not host memory: kernels' host-memory outputs come from the host
// allocator, host-memory inputs in device memory are copied to the host by the device before
// the kernel runs, and a receive copies a tensor into the memory its receiver asks for.
#include <atomic>

#include "absl/strings/match.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/rendezvous.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/call_frame.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/rendezvous.h"
#include "runtime/subgraph.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

// Host memory that claims to be device memory.
class FakeDeviceMemory final : public Allocator {
 public:
  std::string Name() const override { return "fake-device"; }
  void* AllocateRaw(size_t alignment, size_t n) override {
    return CpuAllocator()->AllocateRaw(alignment, n);
  }
  void DeallocateRaw(void* p, size_t n) override { CpuAllocator()->DeallocateRaw(p, n); }
  AllocatorStats GetStats() const override { return AllocatorStats(); }
  bool IsHostMemory() const override { return false; }
};

// A CPU-typed device (so CPU kernels run on it) whose own memory is FakeDeviceMemory and which
// counts the copies it is asked to make.
class FakeMemoryDevice final : public Device {
 public:
  FakeMemoryDevice()
      : Device(DeviceAttributes{"/job:localhost/replica:0/task:0/device:CPU:9", kDeviceCpu, 0}),
        pool_("fake", 1) {}
  Allocator* GetAllocator() override { return &memory_; }
  void Schedule(std::function<void()> fn) override { pool_.Schedule(std::move(fn)); }
  absl::Status CopyTensor(const Tensor& src, Tensor* dst) override {
    ++copies;
    std::memcpy(dst->raw_data(), src.raw_data(), src.TotalBytes());
    return absl::OkStatus();
  }
  std::atomic<int> copies{0};

 private:
  FakeDeviceMemory memory_;
  ThreadPool pool_;
};

// A device that copies only between host memories (DeviceBase's default).
class NoCopyDevice final : public Device {
 public:
  NoCopyDevice()
      : Device(DeviceAttributes{"/job:localhost/replica:0/task:0/device:CPU:8", kDeviceCpu, 0}) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  void Schedule(std::function<void()> fn) override { fn(); }
};

Tensor InDeviceMemory(FakeMemoryDevice* device, const Tensor& host) {
  Tensor t(device->GetAllocator(), host.dtype(), host.shape());
  std::memcpy(t.raw_data(), host.raw_data(), host.TotalBytes());
  return t;
}

TEST(MemoryTypesTest, KernelsKnowTheirHostMemoryArguments) {
  FakeMemoryDevice device;
  NodeDef shape;
  shape.set_name("shape");
  shape.set_op("Shape");
  (*shape.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*shape.mutable_attr())["out_type"] = MakeAttr(DT_INT32);
  auto kernel = KernelRegistry::Global()->CreateKernel(&device, shape, {DT_FLOAT}, {DT_INT32});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE((*kernel)->output_on_host(0));
  EXPECT_FALSE((*kernel)->input_on_host(0));

  NodeDef reshape;
  reshape.set_name("reshape");
  reshape.set_op("Reshape");
  (*reshape.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*reshape.mutable_attr())["Tshape"] = MakeAttr(DT_INT32);
  kernel =
      KernelRegistry::Global()->CreateKernel(&device, reshape, {DT_FLOAT, DT_INT32}, {DT_FLOAT});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_FALSE((*kernel)->input_on_host(0));
  EXPECT_TRUE((*kernel)->input_on_host(1));
  EXPECT_TRUE((*kernel)->has_host_inputs());
}

// shape = Shape(x) (a host-memory output), y = Reshape(x, new_shape) with new_shape fed in
// device memory (a host-memory input).
TEST(MemoryTypesTest, TheExecutorHonoursHostMemoryInputsAndOutputs) {
  FakeMemoryDevice device;
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 3}));
  auto new_shape = ops::Placeholder(s.WithOpName("new_shape"), DT_INT32, TensorShape({2}));
  auto y = ops::Reshape(s.WithOpName("y"), x, new_shape);
  auto shape = ops::Shape(s.WithOpName("shape"), x);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  // Feeds as _Arg nodes, fetches through _Retval: the way a session runs it.
  auto graph = Graph::FromGraphDef(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<FeedSpec> specs;
  ASSERT_TRUE(RewriteForRun(graph->get(), {"x", "new_shape"}, {"y", "shape"}, {}, &specs).ok());
  for (Node* n : (*graph)->nodes()) n->set_assigned_device(device.name());
  auto executor = Executor::Create(std::move(*graph), &device);
  ASSERT_TRUE(executor.ok()) << executor.status();

  StepCallFrame frame({{0, InDeviceMemory(&device, Tensor::FromVector<float>({0, 1, 2, 3, 4, 5},
                                                                             TensorShape({2, 3})))},
                       {1, InDeviceMemory(&device, Tensor::FromVector<int32_t>({3, 2}))}},
                      2);
  LocalRendezvous rendezvous;
  Executor::Args args;
  args.call_frame = &frame;
  args.rendezvous = &rendezvous;
  ASSERT_TRUE((*executor)->Run(args).ok());
  std::vector<Tensor> out = frame.TakeRetvals();
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
  // Two copies: the fed shape to the host for Reshape, and Shape's host-memory output into the
  // device's memory for the _Retval that fetches it (this CPU-typed device's _Retval kernel
  // takes its input in device memory; a GPU's takes it in host memory).
  EXPECT_EQ(device.copies.load(), 2);
  test::ExpectValues<int32_t>(out[1], {2, 3});
  EXPECT_FALSE(IsHostTensor(out[1]));
}

TEST(MemoryTypesTest, AReceiveDeliversIntoTheMemoryItAsksFor) {
  FakeMemoryDevice device;
  LocalRendezvous rendezvous;
  const Tensor sent = Tensor::FromVector<float>({1, 2, 3});
  ASSERT_TRUE(rendezvous.Send("to-host", sent).ok());
  ASSERT_TRUE(rendezvous.Send("to-device", sent).ok());
  Tensor got_host, got_device;
  rendezvous.RecvAsync("to-host", [&](const absl::Status& s, const Tensor& t) {
    EXPECT_TRUE(s.ok()) << s;
    got_host = t;
  });
  RecvArgs to_device;
  to_device.device = &device;
  to_device.allocator = device.GetAllocator();
  rendezvous.RecvAsync("to-device", to_device, [&](const absl::Status& s, const Tensor& t) {
    EXPECT_TRUE(s.ok()) << s;
    got_device = t;
  });
  EXPECT_TRUE(got_host.SharesBufferWith(sent)) << "host to host: no copy";
  EXPECT_FALSE(IsHostTensor(got_device));
  EXPECT_EQ(device.copies.load(), 1);
  test::ExpectValues<float>(got_device, {1, 2, 3});

  // A device that cannot copy between the memories says so.
  RecvArgs impossible;
  NoCopyDevice plain;
  impossible.device = &plain;
  impossible.allocator = device.GetAllocator();
  auto copied = ToReceiverMemory(sent, impossible);
  EXPECT_EQ(copied.status().code(), absl::StatusCode::kUnimplemented) << copied.status();
}

}  // namespace
}  // namespace shardflow
