// Writes the binary seed files of the fuzz corpora (tests/fuzz/corpus/<name>/seed_*), made with
// the engine's own writers so that they are valid inputs for today's formats, plus a few
// near-valid ones (one field wrong) for each. The JSON seeds and the text-format GraphDefs are
// written by hand and not touched here.
//
//   build-sanitize/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus
//
// Files it writes are replaced; files it does not know (minimized crashes, hand-written seeds)
// are left alone.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/framework/tensor.h"
#include "core/graph/graph.h"
#include "distributed/grpc/tensor_coding.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/checkpoint.h"

namespace shardflow {
namespace {

std::string g_root;
int g_failures = 0;

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) {
    std::fprintf(stderr, "make_seeds: %s: %s\n", what.c_str(), s.ToString().c_str());
    ++g_failures;
  }
}

void Write(const std::string& corpus, const std::string& name, const std::string& bytes) {
  const std::string path = g_root + "/" + corpus + "/seed_" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Check(absl::InternalError("cannot write"), path);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- tensors -----------------------------------------------------------------------------------

std::vector<std::pair<std::string, Tensor>> SampleTensors() {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("float_2x3", Tensor::FromVector<float>({1, -2, 3.5f, 0, 1e30f, -0.f}, {2, 3}));
  out.emplace_back("double_3", Tensor::FromVector<double>({1e-300, 2, -3}));
  out.emplace_back("int32_scalar", Tensor::Scalar<int32_t>(-7));
  out.emplace_back("int64_2x1", Tensor::FromVector<int64_t>({int64_t{1} << 40, -1}, {2, 1}));
  out.emplace_back("bool_4", Tensor::FromVector<bool>({true, false, false, true}));
  out.emplace_back("uint8_5", Tensor::FromVector<uint8_t>({0, 1, 2, 254, 255}));
  out.emplace_back("int8_2", Tensor::FromVector<int8_t>({-128, 127}));
  out.emplace_back("half_2", Tensor::FromVector<half>({half(1.5f), half(-2.f)}));
  out.emplace_back("bfloat16_2", Tensor::FromVector<bfloat16>({bfloat16(0.25f), bfloat16(8.f)}));
  out.emplace_back("float_0x5", Tensor(DT_FLOAT, TensorShape({0, 5})));
  out.emplace_back("string_3",
                   Tensor::FromVector<std::string>({"", "abc", std::string("\0\xff", 2)}));
  out.emplace_back("string_scalar", Tensor::Scalar<std::string>("hello"));
  return out;
}

void TensorProtoSeeds() {
  for (const auto& [name, t] : SampleTensors()) {
    TensorProto p;
    t.AsProto(&p);
    Write("tensor_proto", name, p.SerializeAsString());
  }
  // Near-valid: each is one field away from a valid proto.
  TensorProto p;
  Tensor::FromVector<float>({1, 2}).AsProto(&p);
  TensorProto q = p;
  q.mutable_content()->pop_back();
  Write("tensor_proto", "bad_short_content", q.SerializeAsString());
  q = p;
  q.mutable_shape()->set_dim(0, int64_t{1} << 62);
  q.mutable_shape()->add_dim(4);
  q.clear_content();
  Write("tensor_proto", "bad_overflowing_shape", q.SerializeAsString());
  q = p;
  q.mutable_shape()->set_dim(0, -1);
  Write("tensor_proto", "bad_unknown_dim", q.SerializeAsString());
  q = p;
  q.set_dtype(static_cast<DataType>(77));
  Write("tensor_proto", "bad_dtype", q.SerializeAsString());
  q.Clear();
  q.set_dtype(DT_STRING);
  q.mutable_shape()->add_dim(int64_t{1} << 40);
  Write("tensor_proto", "bad_string_count", q.SerializeAsString());
}

// ---- checkpoints -------------------------------------------------------------------------------

void CheckpointSeeds() {
  const std::string path = g_root + "/checkpoint/.make_seeds.tmp";
  auto save = [&](const std::string& name, const NamedTensors& vars) -> std::string {
    Check(SaveCheckpoint(path, vars), "SaveCheckpoint " + name);
    std::string bytes = ReadAll(path);
    std::remove(path.c_str());
    Write("checkpoint", name, bytes);
    return bytes;
  };
  save("empty", {});
  NamedTensors all;
  for (const auto& [name, t] : SampleTensors()) {
    save(name, {{"v/" + name, t}});
    all.emplace_back("all/" + name, t);
  }
  const std::string two = save("two", {{"dense/w", Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})},
                                       {"dense/b", Tensor::FromVector<float>({0.5f, -0.5f})}});
  save("all_dtypes", all);
  // Near-valid: truncated, a flipped data byte (checksum fails), trailing garbage.
  Write("checkpoint", "bad_truncated", two.substr(0, two.size() - 7));
  std::string flipped = two;
  flipped[flipped.size() / 2] ^= 0x40;
  Write("checkpoint", "bad_checksum", flipped);
  Write("checkpoint", "bad_trailing", two + "x");
}

// ---- RecvTensor replies ------------------------------------------------------------------------

// The fuzzer's input: a slicing selector byte, then the reply's bytes.
std::string Flatten(uint8_t selector, const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  Check(absl::Status(buffer.Dump(&slices).ok() ? absl::OkStatus()
                                               : absl::InternalError("Dump failed")),
        "ByteBuffer::Dump");
  std::string out(1, static_cast<char>(selector));
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

void RecvTensorSeeds() {
  uint8_t selector = 0;
  for (const auto& [name, t] : SampleTensors()) {
    Write("recv_tensor_reply", name, Flatten(selector++, EncodeTensor(t)));
  }
  Tensor big(DT_FLOAT, TensorShape({4, 8}));
  for (int i = 0; i < 32; ++i) big.data<float>()[i] = static_cast<float>(i);
  Write("recv_tensor_reply", "range_middle", Flatten(3, EncodeTensorRange(big, 16, 64)));
  Write("recv_tensor_reply", "range_end", Flatten(5, EncodeTensorRange(big, 120, 8)));
  std::string whole = Flatten(0, EncodeTensor(big));
  Write("recv_tensor_reply", "bad_short_data", whole.substr(0, whole.size() - 1));
  Write("recv_tensor_reply", "bad_long_data", whole + "z");
}

// ---- GraphDefs ---------------------------------------------------------------------------------

void WriteGraph(const std::string& name, const Scope& s) {
  GraphDef def;
  Check(s.ToGraphDef(&def), "graph " + name);
  Write("graph_def", name, def.SerializeAsString());
}

// Dense layers, Adam, initializers, sparse cross-entropy, and their gradients.
void MlpGraph() {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 6}));
  auto labels = ops::Placeholder(s.WithOpName("labels"), DT_INT32, TensorShape({-1}));
  Var w1 = Var::Create(s.WithOpName("w1"), init::GlorotUniform(s, {6, 4}, 1));
  Var b1 = Var::Create(s.WithOpName("b1"), init::Zeros(s, {4}));
  Var w2 = Var::Create(s.WithOpName("w2"), init::TruncatedNormal(s, {4, 3}, 0.1f, 2));
  auto h = ops::Relu(s, ops::Add(s, ops::MatMul(s, x, w1.value()), b1.value()));
  auto logits = ops::MatMul(s, h, w2.value());
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels);
  auto loss = ops::Mean(s.WithOpName("loss"), xent.loss, {0});
  ops::ArgMax(s.WithOpName("prediction"), logits, 1);
  AdamOptimizer adam(1e-3);
  Check(adam.Minimize(s.WithOpName("train"), loss).status(), "Adam");
  InitializeAllVariables(s.WithOpName("init"));
  WriteGraph("mlp_adam", s);
}

// Convolution, pooling, batch norm, dense cross-entropy, momentum, and their gradients.
void CnnGraph() {
  Scope s = Scope::NewRootScope();
  auto images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT, TensorShape({-1, 6, 6, 1}));
  auto onehot = ops::Placeholder(s.WithOpName("onehot"), DT_FLOAT, TensorShape({-1, 2}));
  Var k = Var::Create(s.WithOpName("k"), init::HeNormal(s, {3, 3, 1, 2}, 3));
  Var b = Var::Create(s.WithOpName("b"), init::Zeros(s, {2}));
  Var scale = Var::Create(s.WithOpName("scale"), init::Constant(s, {2}, 1.f));
  Var offset = Var::Create(s.WithOpName("offset"), init::Zeros(s, {2}));
  auto conv = ops::BiasAdd(s, ops::Conv2D(s, images, k.value(), {1, 1, 1, 1}, "SAME"), b.value());
  auto bn = ops::FusedBatchNorm(s, conv, scale.value(), offset.value(),
                                Tensor::FromVector<float>({}), Tensor::FromVector<float>({}));
  auto h = ops::Relu(s, bn.y);
  auto p = ops::MaxPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  auto a = ops::AvgPool(s, p, {1, 3, 3, 1}, {1, 1, 1, 1}, "VALID");
  auto flat = ops::Reshape(s, a, {-1, 2});
  auto d = ops::Dropout(s, flat, 0.25f, 7);
  auto xent = ops::SoftmaxCrossEntropyWithLogits(s, d, onehot);
  auto loss = ops::Mean(s.WithOpName("loss"), xent.loss, {0});
  MomentumOptimizer momentum(0.01, 0.9, true);
  Check(momentum.Minimize(s.WithOpName("train"), loss).status(), "Momentum");
  InitializeAllVariables(s.WithOpName("init"));
  WriteGraph("cnn_momentum", s);
}

// Array, element-wise, comparison, logical and reduction ops; Consts of several dtypes.
void ArrayMathGraph() {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
  auto w = ops::Const(s.WithOpName("w"), {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  auto y = ops::MatMul(s.WithOpName("y"), x, w);
  auto t = ops::Transpose(s.WithOpName("t"), ops::Sigmoid(s, y), {1, 0});
  auto c = ops::Concat(s.WithOpName("c"), {t, ops::Tanh(s, t)}, 1);
  auto sl = ops::Slice(s.WithOpName("sl"), c, {0, 0}, {1, -1});
  auto e = ops::ExpandDims(s, ops::Squeeze(s, sl), 0);
  auto f = ops::Fill(s, ops::Shape(s, e), 2.f);
  auto u =
      ops::AddN(s, {ops::Exp(s, e), ops::Log(s, ops::Abs(s, f)), ops::Sqrt(s, ops::Square(s, e)),
                    ops::Rsqrt(s, ops::OnesLike(s, e)), ops::Reciprocal(s, f),
                    ops::Neg(s, ops::Sign(s, e)), ops::ZerosLike(s, e)});
  auto v = ops::SquaredDifference(s, ops::Pow(s, u, 2.f),
                                  ops::Div(s, ops::Maximum(s, u, f), ops::Minimum(s, u, f)));
  auto cmp = ops::LogicalOr(s, ops::LogicalAnd(s, ops::Less(s, u, v), ops::GreaterEqual(s, u, v)),
                            ops::LogicalNot(s, ops::Equal(s, u, v)));
  auto cmp2 = ops::LogicalAnd(s, ops::NotEqual(s, u, v),
                              ops::LogicalOr(s, ops::LessEqual(s, u, v), ops::Greater(s, u, v)));
  auto ints = ops::Cast(s, ops::LogicalAnd(s, cmp, cmp2), DT_INT32);
  ops::Sum(s.WithOpName("sum"), ints, {0, 1}, true);
  ops::Prod(s.WithOpName("prod"), ops::Max(s, v, {1}), {0});
  ops::Min(s.WithOpName("min"), ops::Softmax(s, v), {0});
  ops::Mean(s.WithOpName("mean"), ops::LogSoftmax(s, v), {1});
  ops::Identity(s.WithOpName("id"), ops::StopGradient(s, ops::Cast(s, v, DT_DOUBLE)));
  ops::Const(s.WithOpName("s"), Tensor::FromVector<std::string>({"a", "bc"}));
  ops::Const(s.WithOpName("b"), Tensor::FromVector<bool>({true, false}));
  ops::Const(s.WithOpName("i64"), Tensor::FromVector<int64_t>({3, 4}));
  ops::Const(s.WithOpName("h"), Tensor::FromVector<half>({half(1.f)}));
  ops::NoOp(s.WithOpName("done").WithControlDependencies({u.op(), v.op()}));
  WriteGraph("array_math", s);
}

void GraphSeeds() {
  MlpGraph();
  CnnGraph();
  ArrayMathGraph();
}

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s tests/fuzz/corpus\n", argv[0]);
    return 2;
  }
  shardflow::g_root = argv[1];
  shardflow::TensorProtoSeeds();
  shardflow::CheckpointSeeds();
  shardflow::RecvTensorSeeds();
  shardflow::GraphSeeds();
  if (shardflow::g_failures > 0) return 1;
  std::printf("make_seeds: wrote the seeds under %s\n", argv[1]);
  return 0;
}
