// install_app: built against an installed shardflow only (tests/install/CMakeLists.txt). Builds a
// graph with the C++ API, runs it in a local session and checks the numbers; trains a variable
// one step and checks that a checkpoint restores it. Prints "install_app: OK" and exits 0, or
// says what differs and exits 1.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/platform/status.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/saver.h"
#include "runtime/session.h"

using namespace shardflow;  // NOLINT: a small program

namespace {

absl::Status Expect(const Tensor& t, const std::vector<float>& want, const std::string& what) {
  if (t.dtype() != DT_FLOAT || t.NumElements() != static_cast<int64_t>(want.size())) {
    return absl::InternalError(what + ": got " + t.DebugString());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(t.data<float>()[i] - want[i]) > 1e-5f) {
      return absl::InternalError(what + ": got " + t.DebugString() + ", element " +
                                 std::to_string(i) + " should be " + std::to_string(want[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status Main(const std::string& dir) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
  Output w = ops::Const(root.WithOpName("W"), {{0.5f, -1.0f}, {1.5f, 0.25f}, {-0.5f, 2.0f}});
  Output b = ops::Const(root.WithOpName("b"), {0.1f, -0.2f});
  Output y = ops::Relu(root.WithOpName("y"), ops::Add(root, ops::MatMul(root, x, w), b));
  // One variable trained towards t by gradient descent.
  Var v = Var::Create(root.WithOpName("v"), init::Zeros(root, {3, 1}));
  Output t =
      ops::Const(root.WithOpName("t"), Tensor::FromVector<float>({2.1f, 0}, TensorShape({2, 1})));
  Output err = ops::Sub(root, ops::MatMul(root, x, v.value()), t);
  Output loss = ops::Mean(root, ops::Square(root, err), {0, 1});
  GradientDescentOptimizer sgd(0.1);
  SF_ASSIGN_OR_RETURN(Operation train, sgd.Minimize(root, loss));
  Operation init = InitializeAllVariables(root);
  SF_RETURN_IF_ERROR(root.status());

  GraphDef def;
  SF_RETURN_IF_ERROR(root.ToGraphDef(&def));
  SF_ASSIGN_OR_RETURN(Saver saver, Saver::AddToGraph(&def));
  SF_ASSIGN_OR_RETURN(auto session, NewSession(SessionOptions()));
  SF_RETURN_IF_ERROR(session->Create(def));
  Tensor xv = Tensor::FromVector<float>({1, 2, 3, -1, 0.5f, 2}, TensorShape({2, 3}));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({{"x", xv}}, {"y"}, {}, &out));
  // x·W + b = [[2.1, 5.3], [-0.65, 4.925]]; relu clears the negative one.
  SF_RETURN_IF_ERROR(Expect(out[0], {2.1f, 5.3f, 0.0f, 4.925f}, "y"));

  SF_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &out));
  SF_RETURN_IF_ERROR(session->Run({{"x", xv}}, {}, {train.name()}, &out));
  // From v = 0: grad = 2/2 · xᵀ(0 - t) with t = [2.1, 0], so v = -0.1 · grad = 0.1 · 2.1 · x_0.
  SF_RETURN_IF_ERROR(session->Run({}, {v.value().name()}, {}, &out));
  SF_RETURN_IF_ERROR(Expect(out[0], {0.21f, 0.42f, 0.63f}, "v after one step"));
  std::string path = dir + "/install_app.ckpt";
  SF_RETURN_IF_ERROR(saver.Save(session.get(), path));
  SF_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &out));  // back to zeros
  SF_RETURN_IF_ERROR(saver.Restore(session.get(), path).status());
  SF_RETURN_IF_ERROR(session->Run({}, {v.value().name()}, {}, &out));
  return Expect(out[0], {0.21f, 0.42f, 0.63f}, "v restored");
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status s = Main(argc > 1 ? argv[1] : ".");
  if (!s.ok()) {
    std::fprintf(stderr, "install_app: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("install_app: OK\n");
  return 0;
}
