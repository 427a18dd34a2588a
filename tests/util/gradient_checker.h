// Gradient checking against central finite differences.
//
//   Scope s = Scope::NewRootScope();
//   auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
//   auto y = ops::Tanh(s, x);
//   auto err = test::MaxGradientError(s, {x}, {x_value}, y);   // max relative error
//   EXPECT_LT(*err, 1e-6);
//
// Checks d/dx of L = sum(y * r) for a fixed random r, which exercises the whole Jacobian-vector
// product: the symbolic gradient from AddGradients against (L(x + d e_i) - L(x - d e_i)) / 2d
// for every element i of every x. Float inputs need a larger delta (1e-2) and tolerance (~1e-2).
#ifndef SHARDFLOW_TESTS_UTIL_GRADIENT_CHECKER_H_
#define SHARDFLOW_TESTS_UTIL_GRADIENT_CHECKER_H_

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/framework/tensor_util.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace test {

// `xs` must be Placeholders of a floating dtype; x_values their values.
inline absl::StatusOr<double> MaxGradientError(const Scope& scope, const std::vector<Output>& xs,
                                               const std::vector<Tensor>& x_values, const Output& y,
                                               double delta = 1e-3, uint32_t seed = 7,
                                               const SessionOptions& options = SessionOptions()) {
  if (!scope.ok()) return scope.status();
  const TensorShape& ys = y.shape();
  // The projection r has y's run-time shape: compute y once to learn it.
  auto session = NewSession(options);
  if (!session.ok()) return session.status();
  GraphDef def0;
  absl::Status st = scope.ToGraphDef(&def0);
  if (!st.ok()) return st;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.push_back({xs[i].name(), x_values[i]});
  st = (*session)->Create(def0);
  if (!st.ok()) return st;
  std::vector<Tensor> y_out;
  st = (*session)->Run(feeds, {y.name()}, {}, &y_out);
  if (!st.ok()) return st;
  (void)ys;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor r(DT_DOUBLE, y_out[0].shape());
  for (int64_t i = 0; i < r.NumElements(); ++i) r.data<double>()[i] = dist(gen);
  auto r_cast = CastTensor(r, y.dtype());
  if (!r_cast.ok()) return r_cast.status();
  Scope gs = scope.NewSubScope("gradient_check");
  Output loss = ops::Sum(gs, ops::Mul(gs, y, ops::Const(gs, *r_cast)),
                         ops::Const(gs, Tensor::FromVector<int32_t>([&] {
                                      std::vector<int32_t> axes(y_out[0].dims());
                                      for (int i = 0; i < y_out[0].dims(); ++i) axes[i] = i;
                                      return axes;
                                    }())));
  std::vector<Output> grads;
  st = AddGradients(gs, {loss}, xs, &grads);
  if (!st.ok()) return st;
  if (!gs.ok()) return gs.status();
  GraphDef def;
  st = scope.ToGraphDef(&def);
  if (!st.ok()) return st;
  auto s2 = NewSession(options);
  if (!s2.ok()) return s2.status();
  st = (*s2)->Create(def);
  if (!st.ok()) return st;
  std::vector<std::string> grad_names;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].valid()) {
      return absl::InvalidArgumentError("no gradient for input " + std::to_string(i));
    }
    grad_names.push_back(grads[i].name());
  }
  std::vector<Tensor> symbolic;
  st = (*s2)->Run(feeds, grad_names, {}, &symbolic);
  if (!st.ok()) return st;
  auto loss_at = [&](std::vector<std::pair<std::string, Tensor>>& f) -> absl::StatusOr<double> {
    std::vector<Tensor> out;
    absl::Status s = (*s2)->Run(f, {loss.name()}, {}, &out);
    if (!s.ok()) return s;
    auto d = CastTensor(out[0], DT_DOUBLE);
    if (!d.ok()) return d.status();
    return d->data<double>()[0];
  };
  double max_err = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    auto sym = CastTensor(symbolic[k], DT_DOUBLE);
    if (!sym.ok()) return sym.status();
    auto base = CastTensor(x_values[k], DT_DOUBLE);
    if (!base.ok()) return base.status();
    for (int64_t i = 0; i < base->NumElements(); ++i) {
      double lv[2];
      for (int side = 0; side < 2; ++side) {
        Tensor moved = base->DeepCopy();
        moved.data<double>()[i] += side == 0 ? delta : -delta;
        auto cast = CastTensor(moved, x_values[k].dtype());
        if (!cast.ok()) return cast.status();
        auto f = feeds;
        f[k].second = *cast;
        auto l = loss_at(f);
        if (!l.ok()) return l.status();
        lv[side] = *l;
      }
      double numeric = (lv[0] - lv[1]) / (2 * delta);
      double err = std::abs(numeric - sym->data<double>()[i]) / std::max(1.0, std::abs(numeric));
      max_err = std::max(max_err, err);
    }
  }
  return max_err;
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_GRADIENT_CHECKER_H_
