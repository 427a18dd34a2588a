// basic_graph: builds a small graph with the C++ API, runs it in a local session, saves it as a
// GraphDef and runs the reloaded copy.
//
//   build/bin/basic_graph [--out DIR]
//
// The graph: a one-layer network y = relu(x · W + b), row-wise softmax-like normalisation
// (exp, sum with keep_dims, div), and a few array ops (transpose, concat, slice, reshape).
#include <cstdio>
#include <string>

#include "core/graph/graph_io.h"
#include "core/platform/status.h"
#include "ops/ops.h"
#include "runtime/session.h"

using namespace shardflow;  // NOLINT: an example

namespace {

absl::Status Main(const std::string& out_dir) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
  Scope layer = root.NewSubScope("dense");
  Output w = ops::Const(layer.WithOpName("W"), {{0.5f, -1.0f}, {1.5f, 0.25f}, {-0.5f, 2.0f}});
  Output b = ops::Const(layer.WithOpName("b"), {0.1f, -0.2f});
  Output y = ops::Relu(layer.WithOpName("y"), ops::Add(layer, ops::MatMul(layer, x, w), b));
  Output e = ops::Exp(root, y);
  Output probs = ops::Div(root.WithOpName("probs"), e, ops::Sum(root, e, {1}, true));
  Output both = ops::Concat(root.WithOpName("both"), {y, ops::Transpose(root, probs, {1, 0})}, 0);
  Output corner = ops::Slice(root.WithOpName("corner"), both, {0, 0}, {2, 1});
  Output flat = ops::Reshape(root.WithOpName("flat"), corner, {-1});
  std::printf("x: %s, y: %s (shapes inferred at build time)\n", x.shape().DebugString().c_str(),
              y.shape().DebugString().c_str());
  if (!root.ok()) return root.status();

  GraphDef def;
  SF_RETURN_IF_ERROR(root.ToGraphDef(&def));
  SF_ASSIGN_OR_RETURN(auto session, NewSession(SessionOptions()));
  SF_RETURN_IF_ERROR(session->Create(def));
  Tensor xv = Tensor::FromVector<float>({1, 2, 3, -1, 0.5f, 2}, TensorShape({2, 3}));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({{"x", xv}}, {y.name(), probs.name(), flat.name()}, {}, &out));
  std::printf("y     = %s\nprobs = %s\nflat  = %s\n", out[0].DebugString().c_str(),
              out[1].DebugString().c_str(), out[2].DebugString().c_str());

  // Save, reload, run again: same numbers.
  std::string path = out_dir + "/basic_graph.pbtxt";
  SF_RETURN_IF_ERROR(WriteGraphDef(path, def, GraphFormat::kText));
  SF_ASSIGN_OR_RETURN(GraphDef loaded, ReadGraphDef(path));
  SF_ASSIGN_OR_RETURN(auto session2, NewSession(SessionOptions()));
  SF_RETURN_IF_ERROR(session2->Create(loaded));
  std::vector<Tensor> out2;
  SF_RETURN_IF_ERROR(session2->Run({{"x", xv}}, {probs.name()}, {}, &out2));
  std::printf("reloaded from %s: probs = %s\n", path.c_str(), out2[0].DebugString().c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: basic_graph [--out DIR]\n");
      return 2;
    }
  }
  absl::Status s = Main(out_dir);
  if (!s.ok()) {
    std::fprintf(stderr, "basic_graph: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
