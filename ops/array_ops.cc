// Array ops: constants, placeholders, identity, shape manipulation, casts.
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

// Normalises a possibly negative axis against `rank`; error when out of range.
absl::Status CanonicalAxis(int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank ",
                                                   rank, "; valid: [", -rank, ", ", rank, ")"));
  }
  *out = axis < 0 ? axis + rank : axis;
  return absl::OkStatus();
}

absl::Status ConstShape(InferenceContext* c) {
  const auto& attr = c->node().attr();
  auto it = attr.find("value");
  if (it == attr.end() || it->second.value_case() != AttrValue::kTensor) {
    return c->InvalidArgument("attr 'value' must hold a tensor");
  }
  const TensorProto& proto = it->second.tensor();
  DataType dtype;
  SF_RETURN_IF_ERROR(c->GetAttr("dtype", &dtype));
  if (proto.dtype() != dtype) {
    return c->InvalidArgument(absl::StrCat("value has type ", DataTypeString(proto.dtype()),
                                           " but attr dtype is ", DataTypeString(dtype)));
  }
  SF_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(proto.shape()));
  if (!shape.IsFullyDefined())
    return c->InvalidArgument("a constant's shape must be fully defined");
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status ReshapeShape(InferenceContext* c) {
  SF_ASSIGN_OR_RETURN(TensorShape target, c->ConstantInputAsShape(1));
  const TensorShape& in = c->input(0);
  if (target.unknown_rank()) {
    c->set_output(0, target);
    return absl::OkStatus();
  }
  int unknown_index = -1;
  int64_t known_product = 1;
  std::vector<int64_t> values;
  bool constant = c->GetConstantInts(1, &values);
  for (int i = 0; i < target.rank(); ++i) {
    if (target.dim(i) < 0) {
      if (constant) {
        if (unknown_index >= 0) return c->InvalidArgument("shape may contain at most one -1");
        unknown_index = i;
      }
    } else if (!CheckedMul(known_product, target.dim(i), &known_product)) {
      return c->InvalidArgument(
          absl::StrCat("shape ", target.DebugString(), " has more elements than fit in 64 bits"));
    }
  }
  int64_t n = in.num_elements();
  if (constant && n >= 0) {
    if (unknown_index >= 0) {
      if (known_product == 0 || n % known_product != 0) {
        return c->InvalidArgument(absl::StrCat("cannot reshape ", in.DebugString(), " (", n,
                                               " elements) to ", target.DebugString()));
      }
      target.set_dim(unknown_index, n / known_product);
    } else if (known_product != n) {
      return c->InvalidArgument(absl::StrCat("cannot reshape ", in.DebugString(), " (", n,
                                             " elements) to ", target.DebugString(), " (",
                                             known_product, " elements)"));
    }
  }
  c->set_output(0, target);
  return absl::OkStatus();
}

absl::Status TransposeShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  std::vector<int64_t> perm;
  if (!c->GetConstantInts(1, &perm)) {
    const TensorShape& p = c->input(1);
    c->set_output(0, p.rank() == 1 && p.dim(0) >= 0 ? TensorShape::UnknownOfRank(p.dim(0))
                     : in.unknown_rank()            ? TensorShape::Unknown()
                                                    : TensorShape::UnknownOfRank(in.rank()));
    return absl::OkStatus();
  }
  int rank = static_cast<int>(perm.size());
  if (!in.unknown_rank() && in.rank() != rank) {
    return c->InvalidArgument(
        absl::StrCat("perm has ", rank, " entries but the input has rank ", in.rank()));
  }
  std::vector<bool> seen(rank, false);
  TensorShape out = TensorShape::UnknownOfRank(rank);
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) {
      return c->InvalidArgument("perm must be a permutation of 0..rank-1");
    }
    seen[perm[i]] = true;
    if (!in.unknown_rank()) out.set_dim(i, in.dim(perm[i]));
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status ConcatShape(InferenceContext* c) {
  int n = c->num_inputs() - 1;
  std::vector<int64_t> axis_values;
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    if (!c->input(i).unknown_rank()) {
      if (rank >= 0 && c->input(i).rank() != rank) {
        return c->InvalidArgument(
            absl::StrCat("all values must have the same rank; value 0 has rank ", rank,
                         " and value ", i, " has rank ", c->input(i).rank()));
      }
      rank = c->input(i).rank();
    }
  }
  if (rank == 0) return c->InvalidArgument("cannot concatenate scalars; use ExpandDims first");
  if (!c->GetConstantInts(n, &axis_values) || rank < 0) {
    c->set_output(0, rank < 0 ? TensorShape::Unknown() : TensorShape::UnknownOfRank(rank));
    return absl::OkStatus();
  }
  if (axis_values.size() != 1) return c->InvalidArgument("axis must be a scalar");
  int64_t axis;
  SF_RETURN_IF_ERROR(CanonicalAxis(axis_values[0], rank, &axis));
  TensorShape out = TensorShape::UnknownOfRank(rank);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const TensorShape& s = c->input(i);
    if (s.unknown_rank()) {
      total = -1;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (s.dim(d) >= 0 && out.dim(d) >= 0 && s.dim(d) != out.dim(d)) {
        return c->InvalidArgument(absl::StrCat("dimension ", d, " of value ", i, " is ", s.dim(d),
                                               " but an earlier value has ", out.dim(d),
                                               "; only the concat axis ", axis, " may differ"));
      }
      if (s.dim(d) >= 0) out.set_dim(d, s.dim(d));
    }
    if (total >= 0 && s.dim(axis) >= 0) {
      total += s.dim(axis);
    } else {
      total = -1;
    }
  }
  out.set_dim(axis, total);
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status SliceShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  std::vector<int64_t> begin, size;
  bool have_begin = c->GetConstantInts(1, &begin);
  bool have_size = c->GetConstantInts(2, &size);
  if (!have_size) {
    c->set_output(
        0, in.unknown_rank() ? TensorShape::Unknown() : TensorShape::UnknownOfRank(in.rank()));
    return absl::OkStatus();
  }
  if (!in.unknown_rank() && static_cast<int>(size.size()) != in.rank()) {
    return c->InvalidArgument(
        absl::StrCat("size has ", size.size(), " entries for an input of rank ", in.rank()));
  }
  if (have_begin && begin.size() != size.size()) {
    return c->InvalidArgument("begin and size must have the same length");
  }
  TensorShape out;
  for (size_t i = 0; i < size.size(); ++i) {
    int64_t dim = in.unknown_rank() ? -1 : in.dim(i);
    int64_t b = have_begin ? begin[i] : -1;
    if (have_begin && (b < 0 || (dim >= 0 && b > dim))) {
      return c->InvalidArgument(absl::StrCat("begin[", i, "] = ", b, " is outside [0, ", dim, "]"));
    }
    int64_t s = size[i];
    if (s == -1) {
      s = (dim >= 0 && b >= 0) ? dim - b : -1;
    } else if (s < -1 || (dim >= 0 && b >= 0 && s > dim - b)) {
      return c->InvalidArgument(absl::StrCat(
          "slice [", b, ", ", b, "+", s, ") is out of bounds for dimension ", i, " of size ", dim));
    }
    out.AddDim(s);
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status FillShape(InferenceContext* c) {
  if (c->input(1).rank() > 0) return c->InvalidArgument("value must be a scalar");
  SF_ASSIGN_OR_RETURN(TensorShape out, c->ConstantInputAsShape(0));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status ShapeShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  c->set_output(0, TensorShape({in.unknown_rank() ? -1 : in.rank()}));
  return absl::OkStatus();
}

absl::Status ExpandDimsShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  std::vector<int64_t> axis;
  if (in.unknown_rank() || !c->GetConstantInts(1, &axis)) {
    c->set_output(
        0, in.unknown_rank() ? TensorShape::Unknown() : TensorShape::UnknownOfRank(in.rank() + 1));
    return absl::OkStatus();
  }
  if (axis.size() != 1) return c->InvalidArgument("axis must hold one value");
  int64_t a;
  SF_RETURN_IF_ERROR(CanonicalAxis(axis[0], in.rank() + 1, &a));
  TensorShape out = in;
  out.InsertDim(static_cast<int>(a), 1);
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status SqueezeShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  std::vector<int64_t> dims;
  SF_RETURN_IF_ERROR(c->GetAttr("squeeze_dims", &dims));
  if (in.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  std::vector<bool> drop(in.rank(), false);
  for (int64_t d : dims) {
    int64_t a;
    SF_RETURN_IF_ERROR(CanonicalAxis(d, in.rank(), &a));
    if (in.dim(a) >= 0 && in.dim(a) != 1) {
      return c->InvalidArgument(
          absl::StrCat("cannot squeeze dimension ", a, " of size ", in.dim(a)));
    }
    drop[a] = true;
  }
  TensorShape out;
  for (int i = 0; i < in.rank(); ++i) {
    bool squeeze = dims.empty() ? in.dim(i) == 1 : drop[i];
    if (dims.empty() && in.dim(i) < 0) {
      c->set_output(0, TensorShape::Unknown());  // cannot tell which dims are 1
      return absl::OkStatus();
    }
    if (!squeeze) out.AddDim(in.dim(i));
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

// Where: [number of true elements (unknown), rank of the input].
absl::Status WhereShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  c->set_output(0, in.unknown_rank()
                       ? TensorShape({TensorShape::kUnknownDim, TensorShape::kUnknownDim})
                       : TensorShape({TensorShape::kUnknownDim, in.rank()}));
  return absl::OkStatus();
}

// Unique: x is a vector; y has as many elements as x has distinct values, idx as many as x.
absl::Status UniqueShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  if (!in.unknown_rank() && in.rank() != 1) {
    return c->InvalidArgument(absl::StrCat("x must be a vector, got rank ", in.rank()));
  }
  c->set_output(0, TensorShape({TensorShape::kUnknownDim}));
  c->set_output(1, in.unknown_rank() ? TensorShape({TensorShape::kUnknownDim}) : in);
  return absl::OkStatus();
}

absl::Status PlaceholderShape(InferenceContext* c) {
  TensorShape shape;
  SF_RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  c->set_output(0, shape);
  return absl::OkStatus();
}

// EnsureShape: the input's shape merged with the attr's (an error when they disagree).
absl::Status EnsureShapeShape(InferenceContext* c) {
  TensorShape want;
  SF_RETURN_IF_ERROR(c->GetAttr("shape", &want));
  auto merged = c->input(0).Merge(want);
  if (!merged.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("EnsureShape: the input has shape ",
                                                   c->input(0).DebugString(), ", not ",
                                                   want.DebugString()));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("EnsureShape")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("shape: shape")
    .SetShapeFn(EnsureShapeShape)
    .Doc(
        "Passes `input` through, failing the step when its shape does not fit `shape` (a "
        "partial shape: Tensor.set_shape tells the graph what it knows, as TF's "
        "tf.ensure_shape).");

REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape)
    .Doc("A constant tensor.");

REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = <unknown>")
    .SetShapeFn(PlaceholderShape)
    .Doc("A value that must be fed at Run time; its shape may be partial.");

REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(UnchangedShape)
    .Doc("Returns its input.");

REGISTER_OP("IdentityN")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type)")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc(
        "Returns its inputs, a list of tensors of any types. Python's custom_gradient puts one "
        "over a function's results and arguments to give them a gradient of its own.");

REGISTER_OP("Print")
    .Input("input: T")
    .Input("data: U")
    .Output("output: T")
    .Attr("T: type")
    .Attr("U: list(type) = []")
    .Attr("message: string = ''")
    .Attr("first_n: int = -1")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .SetShapeFn(UnchangedShape)
    .Doc(
        "Returns its input and, when it runs, writes `message` and the first `summarize` values "
        "of each `data` tensor to standard error (TF1's tf.Print); only the first `first_n` "
        "runs print when first_n >= 0.");

REGISTER_OP("Assert")
    .Input("condition: bool")
    .Input("data: T")
    .Attr("T: list(type) = []")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .Doc(
        "Fails the step (InvalidArgumentError \"assertion failed: [..] [..]\", each `data` "
        "tensor's "
        "first `summarize` values) unless the scalar `condition` is true (TF1's tf.Assert); no "
        "outputs: run it as a target or a control input.");

REGISTER_OP("Where")
    .Input("input: T")
    .Output("index: int64")
    .Attr("T: {bool, float, double, int8, uint8, int32, int64} = bool")
    .SetShapeFn(WhereShape)
    .Doc(
        "The coordinates of the true (non-zero) elements of `input`, one row each in row-major "
        "order: [count, rank] int64 (TF1's one-argument tf.where).");

REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: {float, double, int8, uint8, int32, int64, bool, string}")
    .Attr("out_idx: {int32, int64} = int32")
    .SetShapeFn(UniqueShape)
    .Doc(
        "The distinct values of the vector `x` in the order they first appear (y), and for each "
        "element of x the position of its value in y (idx), so x = gather(y, idx) (TF1's "
        "tf.unique). Not differentiable.");

REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(UnchangedShape)
    .Doc("Identity that gradients do not flow through.");

REGISTER_OP("NoOp").Doc("Does nothing; useful as a target that groups control inputs.");

REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = int32")
    .SetShapeFn(ReshapeShape)
    .Doc("Same elements in another shape; one entry of `shape` may be -1 (inferred).");

REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr("T: type")
    .Attr("Tperm: {int32, int64} = int32")
    .SetShapeFn(TransposeShape)
    .Doc("Permutes dimensions: y.shape[i] = x.shape[perm[i]].");

REGISTER_OP("Concat")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = int32")
    .SetShapeFn(ConcatShape)
    .Doc("Joins tensors along `axis` (negative counts from the end).");

REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64} = int32")
    .SetShapeFn(SliceShape)
    .Doc("input[begin[i] : begin[i] + size[i]] per dimension; size -1 means to the end.");

REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: type")
    .Attr("DstT: type")
    .SetShapeFn(UnchangedShape)
    .Doc("Converts element type.");

REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = int32")
    .SetShapeFn(FillShape)
    .Doc("A tensor of shape `dims` with every element `value`.");

REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = int32")
    .SetShapeFn(ShapeShape)
    .Doc("The shape of a tensor as a vector.");

REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(UnchangedShape)
    .Doc("Zeros of x's shape and type.");
REGISTER_OP("OnesLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(UnchangedShape)
    .Doc("Ones of x's shape and type.");

REGISTER_OP("ReverseV2")
    .Input("tensor: T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16, int8, uint8, int32, int64, bool}")
    .Attr("Tidx: {int32, int64} = int32")
    .SetShapeFn(UnchangedShape)
    .Doc("`tensor` with the order of elements reversed along each dimension in `axis`.");

#define SF_CUMULATIVE_OP(NAME, DOC)                                          \
  REGISTER_OP(NAME)                                                          \
      .Input("x: T")                                                         \
      .Input("axis: Tidx")                                                   \
      .Output("out: T")                                                      \
      .Attr("T: {float, double, half, bfloat16, int32, int64, int8, uint8}") \
      .Attr("Tidx: {int32, int64} = int32")                                  \
      .Attr("exclusive: bool = false")                                       \
      .Attr("reverse: bool = false")                                         \
      .SetShapeFn(UnchangedShape)                                            \
      .Doc(DOC)
SF_CUMULATIVE_OP("Cumsum",
                 "Running sums along `axis`: out[i] = x[0] + ... + x[i] (exclusive: up to "
                 "x[i-1]; reverse: from the end).");
SF_CUMULATIVE_OP("Cumprod",
                 "Running products along `axis`: out[i] = x[0] * ... * x[i] (exclusive: up to "
                 "x[i-1], starting from 1; reverse: from the end).");
#undef SF_CUMULATIVE_OP

REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("axis: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = int32")
    .SetShapeFn(ExpandDimsShape)
    .Doc("Inserts a dimension of size 1 at `axis`.");

REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) = []")
    .SetShapeFn(SqueezeShape)
    .Doc("Removes dimensions of size 1 (all of them, or those listed).");

REGISTER_OP("_Arg")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index: int >= 0")
    .Attr("shape: shape = <unknown>")
    .SetShapeFn(PlaceholderShape)
    .Doc(
        "Internal: the index-th fed value of a step; `shape` is what the feed was checked "
        "against (the fed Placeholder's, possibly partial).");

REGISTER_OP("_Retval")
    .Input("input: T")
    .Attr("T: type")
    .Attr("index: int >= 0")
    .Doc("Internal: stores the index-th fetched value of a step.");

}  // namespace shardflow
