// Gradient functions of the array ops (see ops/gradients.h for the contract).
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

using Grads = std::vector<Output>;

// Each x[k] is in the sums of out[k..] (out[k+1..] when exclusive): the gradient is the
// running sum of dy from the other end, with the same exclusivity.
absl::Status CumsumGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  bool exclusive = false;
  bool reverse = false;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "exclusive", &exclusive));
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "reverse", &reverse));
  dx->push_back(Output(OpBuilder(s, "Cumsum")
                           .Input(dy[0])
                           .Input(GradInput(op, 1))
                           .Attr("exclusive", exclusive)
                           .Attr("reverse", !reverse)
                           .Finalize()
                           .node(),
                       0));
  dx->push_back(Output());
  return absl::OkStatus();
}

// Cumprod: with p = cumprod(x) (same exclusivity and direction), dx = cumsum(p * dy) from the
// other end / x (as TF; not defined where x is 0).
absl::Status CumprodGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  bool exclusive = false;
  bool reverse = false;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "exclusive", &exclusive));
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "reverse", &reverse));
  auto cumulative = [&](const char* type, const Output& v, bool rev) {
    return Output(OpBuilder(s, type)
                      .Input(v)
                      .Input(GradInput(op, 1))
                      .Attr("exclusive", exclusive)
                      .Attr("reverse", rev)
                      .Finalize()
                      .node(),
                  0);
  };
  Output x = GradInput(op, 0);
  Output prod = cumulative("Cumprod", x, reverse);
  Output summed = cumulative("Cumsum", ops::Mul(s, prod, dy[0]), !reverse);
  dx->push_back(ops::Div(s, summed, x));
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status IdentityGrad(const Scope&, const Operation&, const Grads& dy, Grads* dx) {
  dx->push_back(dy[0]);
  return absl::OkStatus();
}

// Reshape, ExpandDims, Squeeze: the gradient takes the input's shape back.
absl::Status ReshapeLikeInputGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output x = GradInput(op, 0);
  dx->push_back(ops::Reshape(s, dy[0], ops::Shape(s, x)));
  for (int i = 1; i < op.node()->num_inputs(); ++i) dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status TransposeGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Tensor* perm = GradInput(op, 1).node()->constant_value();
  if (perm == nullptr) {
    return absl::UnimplementedError("the gradient of Transpose needs a constant perm");
  }
  std::vector<int32_t> inverse(perm->NumElements());
  for (int64_t i = 0; i < perm->NumElements(); ++i) {
    int64_t p = perm->dtype() == DT_INT32 ? perm->data<int32_t>()[i] : perm->data<int64_t>()[i];
    inverse[p] = static_cast<int32_t>(i);
  }
  dx->push_back(ops::Transpose(s, dy[0], Tensor::FromVector(inverse)));
  dx->push_back(Output());
  return absl::OkStatus();
}

// Concat: each input gets its slice of dy along the axis. Offsets are constants while every
// size before them is known when the graph is built; from the first unknown size on (a
// padding known only when the step runs) they are summed from the inputs' run-time shapes.
absl::Status ConcatGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  int n = op.node()->num_inputs() - 1;
  const Tensor* axis_t = GradInput(op, n).node()->constant_value();
  int rank = GradInput(op, 0).shape().rank();
  if (axis_t == nullptr || rank < 0) {
    return absl::UnimplementedError("the gradient of Concat needs a constant axis and known rank");
  }
  int64_t axis =
      axis_t->dtype() == DT_INT32 ? axis_t->data<int32_t>()[0] : axis_t->data<int64_t>()[0];
  if (axis < 0) axis += rank;
  std::vector<int32_t> one_hot(rank, 0), rest(rank, -1);
  one_hot[axis] = 1;
  rest[axis] = 0;
  int32_t offset = 0;
  std::optional<Output> run_offset;  // int32 [1], once an earlier size is unknown
  for (int i = 0; i < n; ++i) {
    Output x = GradInput(op, i);
    int64_t size = x.shape().dim(static_cast<int>(axis));
    if (!run_offset && (size >= 0 || i == n - 1)) {
      // Constant begin; the last piece takes the rest of dy, whatever its size.
      std::vector<int32_t> begin(rank, 0), sizes(rank, -1);
      begin[axis] = offset;
      if (i < n - 1) sizes[axis] = static_cast<int32_t>(size);
      dx->push_back(ops::Slice(s, dy[0], Tensor::FromVector(begin), Tensor::FromVector(sizes)));
      offset += static_cast<int32_t>(size);
      continue;
    }
    Output start = run_offset ? *run_offset : ops::Const(s, Tensor::FromVector<int32_t>({offset}));
    Output length =
        size >= 0 ? ops::Const(s, Tensor::FromVector<int32_t>({static_cast<int32_t>(size)}))
                  : ops::Slice(s, ops::Shape(s, x), Tensor::FromVector<int32_t>({int32_t(axis)}),
                               Tensor::FromVector<int32_t>({1}));
    Output begin = ops::Mul(s, Tensor::FromVector(one_hot), start);
    Output sizes =
        ops::Add(s, ops::Mul(s, Tensor::FromVector(one_hot), length), Tensor::FromVector(rest));
    dx->push_back(ops::Slice(s, dy[0], begin, sizes));
    run_offset = ops::Add(s, start, length);
  }
  dx->push_back(Output());
  return absl::OkStatus();
}

// Slice with a begin or size known only when the step runs: dy padded with zeros back to x's
// run-time shape, one dimension at a time, the amounts computed by the step.
absl::Status RunTimeSliceGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output x = GradInput(op, 0);
  const int rank = x.shape().rank();
  Tensor zero(dy[0].dtype(), TensorShape({}));
  std::memset(zero.raw_data(), 0, zero.TotalBytes());
  Output begin = ops::Cast(s, GradInput(op, 1), DT_INT32);
  Output after = ops::Sub(s, ops::Sub(s, ops::Shape(s, x), begin), ops::Shape(s, dy[0]));
  Output cur = dy[0];
  for (int d = 0; d < rank; ++d) {
    std::vector<int32_t> keep(rank, 1), one_hot(rank, 0);
    keep[d] = 0;
    one_hot[d] = 1;
    auto zeros = [&](const Output& amounts) {
      Output n = ops::Slice(s, amounts, Tensor::FromVector<int32_t>({d}),
                            Tensor::FromVector<int32_t>({1}));
      Output dims = ops::Add(s, ops::Mul(s, ops::Shape(s, cur), Tensor::FromVector(keep)),
                             ops::Mul(s, Tensor::FromVector(one_hot), n));
      return ops::Fill(s, dims, ops::Const(s, zero));
    };
    cur = ops::Concat(s, {zeros(begin), cur, zeros(after)}, d);
  }
  dx->push_back(cur);
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

// Slice: dy goes back into zeros of the input's shape at `begin` (begin and size must be
// constant; padded with zero blocks along each dimension, as the engine has no Pad kernel yet).
absl::Status SliceGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output x = GradInput(op, 0);
  const Tensor* begin_t = GradInput(op, 1).node()->constant_value();
  const Tensor* size_t_ = GradInput(op, 2).node()->constant_value();
  const TensorShape& shape = x.shape();
  auto at = [](const Tensor* t, int i) -> int64_t {
    return t->dtype() == DT_INT32 ? t->data<int32_t>()[i] : t->data<int64_t>()[i];
  };
  // dy is padded with zeros back to x's shape, one dimension at a time. A dimension needs its
  // size known at build time only when the slice stops short of its end.
  bool ok = begin_t != nullptr && size_t_ != nullptr && !shape.unknown_rank();
  for (int d = 0; ok && d < shape.rank(); ++d) {
    ok = at(size_t_, d) < 0 || shape.dim(d) >= 0 || at(begin_t, d) + at(size_t_, d) == 0;
  }
  if (!ok) {
    if (shape.unknown_rank()) {
      return absl::UnimplementedError("the gradient of Slice needs the input's rank");
    }
    return RunTimeSliceGrad(s, op, dy, dx);
  }
  Tensor zero(dy[0].dtype(), TensorShape({}));
  std::memset(zero.raw_data(), 0, zero.TotalBytes());
  Output cur = dy[0];
  const int rank = shape.rank();
  for (int d = 0; d < rank; ++d) {
    const int64_t before = at(begin_t, d);
    const int64_t after = at(size_t_, d) < 0 ? 0 : shape.dim(d) - before - at(size_t_, d);
    if (before == 0 && after == 0) continue;
    // Zeros of cur's shape but n long along d: cur's run-time shape with dimension d set to n.
    auto zeros = [&](int64_t n) {
      std::vector<int32_t> keep(rank, 1), set(rank, 0);
      keep[d] = 0;
      set[d] = static_cast<int32_t>(n);
      Output dims = ops::Add(s, ops::Mul(s, ops::Shape(s, cur), Tensor::FromVector(keep)),
                             Tensor::FromVector(set));
      return ops::Fill(s, dims, ops::Const(s, zero));
    };
    std::vector<Input> parts;
    if (before > 0) parts.push_back(zeros(before));
    parts.push_back(cur);
    if (after > 0) parts.push_back(zeros(after));
    cur = ops::Concat(s, parts, d);
  }
  dx->push_back(cur);
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("CheckNumerics", IdentityGrad);
REGISTER_GRADIENT("EnsureShape", IdentityGrad);
REGISTER_GRADIENT("IdentityN", [](const Scope&, const Operation&, const Grads& dy, Grads* dx) {
  dx->insert(dx->end(), dy.begin(), dy.end());
  return absl::OkStatus();
});
REGISTER_NO_GRADIENT("Where");   // integer coordinates
REGISTER_NO_GRADIENT("Assert");  // no outputs
REGISTER_NO_GRADIENT("Unique");  // picks values; TF1 has no gradient either
REGISTER_GRADIENT("ReverseV2", [](const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  dx->push_back(
      Output(OpBuilder(s, "ReverseV2").Input(dy[0]).Input(GradInput(op, 1)).Finalize().node(), 0));
  dx->push_back(Output());
  return absl::OkStatus();
});
REGISTER_GRADIENT("Cumsum", CumsumGrad);
REGISTER_GRADIENT("Cumprod", CumprodGrad);
REGISTER_GRADIENT("Print", [](const Scope&, const Operation& op, const Grads& dy, Grads* dx) {
  dx->push_back(dy[0]);  // the printed tensors get none
  for (int i = 1; i < op.node()->num_inputs(); ++i) dx->push_back(Output());
  return absl::OkStatus();
});
REGISTER_GRADIENT("Reshape", ReshapeLikeInputGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeLikeInputGrad);
REGISTER_GRADIENT("Squeeze", ReshapeLikeInputGrad);
REGISTER_GRADIENT("Transpose", TransposeGrad);
REGISTER_GRADIENT("Concat", ConcatGrad);
REGISTER_GRADIENT("Slice", SliceGrad);
REGISTER_NO_GRADIENT("ReadVariableOp");  // gradients stop at the read (the x of AddGradients)

// Ops whose outputs do not depend differentiably on their inputs.
REGISTER_NO_GRADIENT("Shape");
REGISTER_NO_GRADIENT("ZerosLike");
REGISTER_NO_GRADIENT("OnesLike");
REGISTER_NO_GRADIENT("Fill");
REGISTER_NO_GRADIENT("StopGradient");
REGISTER_NO_GRADIENT("RandomUniform");
REGISTER_NO_GRADIENT("RandomStandardNormal");
REGISTER_NO_GRADIENT("RandomGamma");  // no implicit reparameterization here
REGISTER_NO_GRADIENT("RandomPoissonV2");
REGISTER_NO_GRADIENT("TruncatedNormal");
REGISTER_NO_GRADIENT("StatelessRandomUniform");
REGISTER_NO_GRADIENT("StatelessRandomNormal");
REGISTER_NO_GRADIENT("StatelessTruncatedNormal");
REGISTER_NO_GRADIENT("VarHandleOp");
REGISTER_NO_GRADIENT("VarIsInitializedOp");
REGISTER_NO_GRADIENT("ResourceCountUpTo");

}  // namespace
}  // namespace shardflow
