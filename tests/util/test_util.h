// Helpers shared by tests: tensor comparison and one-call session runs.
#ifndef SHARDFLOW_TESTS_UTIL_TEST_UTIL_H_
#define SHARDFLOW_TESTS_UTIL_TEST_UTIL_H_

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/framework/tensor.h"
#include "gtest/gtest.h"
#include "ops/scope.h"
#include "runtime/session.h"

namespace shardflow {
namespace test {

template <typename T>
void ExpectValues(const Tensor& t, const std::vector<T>& expected, double tol = 1e-5) {
  ASSERT_EQ(t.dtype(), DataTypeToEnum<T>::value) << t.DebugString();
  ASSERT_EQ(t.NumElements(), static_cast<int64_t>(expected.size())) << t.DebugString();
  for (size_t i = 0; i < expected.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_NEAR(t.data<T>()[i], expected[i], tol) << "element " << i << " of " << t.DebugString();
    } else {
      EXPECT_EQ(t.data<T>()[i], expected[i]) << "element " << i << " of " << t.DebugString();
    }
  }
}

// Runs the scope's graph in a new local session.
inline absl::StatusOr<std::vector<Tensor>> RunScope(
    const Scope& scope, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<Output>& fetches, const SessionOptions& options = SessionOptions()) {
  GraphDef def;
  absl::Status s = scope.ToGraphDef(&def);
  if (!s.ok()) return s;
  auto session = NewSession(options);
  if (!session.ok()) return session.status();
  s = (*session)->Create(def);
  if (!s.ok()) return s;
  std::vector<std::string> names;
  for (const Output& o : fetches) names.push_back(o.name());
  std::vector<Tensor> out;
  s = (*session)->Run(feeds, names, {}, &out);
  if (!s.ok()) return s;
  return out;
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_TEST_UTIL_H_
