// Mutation test: thousands of randomly corrupted GraphDefs go through validation and, when they
// validate, through Session::Run. Each must end in OK or an error status — never a crash, abort
// or hang. A seed that fails is printed so it can be replayed.
#include <random>

#include "core/framework/op_def.h"
#include "core/graph/graph.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

GraphDef BaseGraph() {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
  auto w = ops::Const(s.WithOpName("w"), {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  auto y = ops::MatMul(s.WithOpName("y"), x, w);
  auto r = ops::Relu(s.WithOpName("r"), ops::Add(s, y, {0.5f, -0.5f}));
  auto t = ops::Transpose(s.WithOpName("t"), r, {1, 0});
  auto c = ops::Concat(s.WithOpName("c"), {t, t}, 1);
  auto sl = ops::Slice(s.WithOpName("sl"), c, {0, 0}, {1, -1});
  auto m = ops::Mean(s.WithOpName("m"), sl, {1}, true);
  ops::Reshape(s.WithOpName("out"), ops::Cast(s, m, DT_INT32), {-1});
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  return def;
}

void Mutate(GraphDef* def, std::mt19937* rng) {
  auto pick = [&](int n) { return static_cast<int>((*rng)() % n); };
  static const std::vector<std::string> ops = OpRegistry::Global()->ListOpNames();
  static const DataType types[] = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64,
                                   DT_BOOL,  DT_STRING, DT_HALF,  DT_INVALID};
  NodeDef* n = def->mutable_node(pick(def->node_size()));
  switch (pick(9)) {
    case 0:
      n->set_op(ops[pick(ops.size())]);
      break;
    case 1:
      if (n->input_size() > 0) n->mutable_input()->RemoveLast();
      break;
    case 2:
      n->add_input(def->node(pick(def->node_size())).name() + ":" + std::to_string(pick(3)));
      break;
    case 3:
      (*n->mutable_attr())["T"].set_type(types[pick(8)]);
      break;
    case 4:
      if (!n->attr().empty()) {
        std::string key = n->attr().begin()->first;
        n->mutable_attr()->erase(key);
      }
      break;
    case 5:
      (*n->mutable_attr())[pick(2) ? "T" : "value"].set_i(pick(5) - 2);
      break;
    case 6:
      n->set_name(def->node(pick(def->node_size())).name());
      break;
    case 7: {
      auto& attrs = *n->mutable_attr();
      if (attrs.contains("value") && attrs["value"].has_tensor()) {
        auto* shape = attrs["value"].mutable_tensor()->mutable_shape();
        if (shape->dim_size() > 0) shape->set_dim(pick(shape->dim_size()), pick(6) - 1);
        if (pick(2)) attrs["value"].mutable_tensor()->mutable_content()->resize(pick(40));
      }
      break;
    }
    case 8:
      if (n->input_size() > 0)
        n->set_input(pick(n->input_size()), "^" + def->node(pick(def->node_size())).name());
      break;
  }
}

TEST(GraphFuzzTest, CorruptGraphsGiveErrorsNotCrashes) {
  const GraphDef base = BaseGraph();
  int validated = 0, ran_ok = 0, run_errors = 0;
  for (uint32_t seed = 0; seed < 1500; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    GraphDef def = base;
    int mutations = 1 + seed % 3;
    for (int i = 0; i < mutations; ++i) Mutate(&def, &rng);
    auto g = Graph::FromGraphDef(def);
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
      continue;
    }
    ++validated;
    auto session = NewSession(SessionOptions());
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->Create(def).ok());
    std::vector<int64_t> dims = {static_cast<int64_t>(rng() % 4), 3};
    Tensor x(DT_FLOAT, TensorShape(absl::MakeConstSpan(dims)));
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = i * 0.25f;
    for (const NodeDef& n : def.node()) {
      std::vector<Tensor> out;
      RunOptions opts;
      opts.set_timeout_in_ms(5000);
      std::vector<std::pair<std::string, Tensor>> feeds;
      if (n.name() != "x") feeds.push_back({"x", x});
      absl::Status st = (*session)->Run(opts, feeds, {}, {n.name()}, &out, nullptr);
      ASSERT_NE(st.code(), absl::StatusCode::kDeadlineExceeded) << n.name();
      st.ok() ? ++ran_ok : ++run_errors;
    }
  }
  std::printf("mutated graphs: %d validated, %d runs ok, %d runs with an error status\n", validated,
              ran_ok, run_errors);
  EXPECT_GT(validated, 0);
}

}  // namespace
}  // namespace shardflow
