// Random DAGs with known costs, for the placement tests and benchmarks: node i is a Neg or AddN
// of 1-3 earlier nodes (a Neg of a constant while there are few), with a compute time of
// 20-220 µs and an output of 40 KB-2.5 MB set as measurements in `costs`, so a policy, the
// simulator and an exhaustive search all see the same numbers.
#ifndef SHARDFLOW_TESTS_UTIL_RANDOM_GRAPH_H_
#define SHARDFLOW_TESTS_UTIL_RANDOM_GRAPH_H_

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "partitioner/cost_model.h"

namespace shardflow {
namespace test {

inline void BuildRandomGraph(uint32_t seed, int nodes, const Scope& scope, CostModel* costs) {
  std::mt19937 rng(seed);
  std::vector<Output> outs;
  for (int i = 0; i < nodes; ++i) {
    std::string name = absl::StrCat("n", i);
    Output o;
    if (outs.empty() || (outs.size() < 3 && rng() % 2 == 0)) {
      o = ops::Neg(scope.WithOpName(name), ops::Const(scope.WithOpName(name + "_c"), 1.0f));
      costs->SetMeasured(name + "_c", 0.1, 100, 10, {4});
    } else {
      int fan_in = 1 + rng() % std::min<int>(3, outs.size());
      std::set<int> picked;
      for (int k = 0; k < fan_in; ++k) picked.insert(rng() % outs.size());
      std::vector<Input> in;
      for (int p : picked) in.push_back(outs[p]);
      o = in.size() == 1 ? ops::Neg(scope.WithOpName(name), in[0])
                         : ops::AddN(scope.WithOpName(name), in);
    }
    double micros = 20 + rng() % 200;
    int64_t bytes = (1 + rng() % 64) * 40000;
    costs->SetMeasured(name, micros, 100, 10, {bytes});
    outs.push_back(o);
  }
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_RANDOM_GRAPH_H_
