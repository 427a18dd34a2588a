// String ops with C++ kernels: regular expressions in RE2's syntax, as TensorFlow's (RE2 runs
// in time linear in the input, so a pattern cannot make a step backtrack for hours), and the
// hash buckets with TensorFlow's hash functions. The other string ops are Python composites
// (python_bindings/shardflow/string_ops.py).
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"

namespace shardflow {
namespace {

// `input` any shape; the pattern (and rewrite) scalars; the output has input's shape.
absl::Status RegexShape(InferenceContext* c) {
  for (int i = 1; i < c->num_inputs(); ++i) {
    if (c->input(i).rank() > 0) {
      return c->InvalidArgument(absl::StrCat("input ", i, " (the ", i == 1 ? "pattern" : "rewrite",
                                             ") must be a scalar, "
                                             "got shape ",
                                             c->input(i).DebugString()));
    }
  }
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("RegexReplace")
    .Input("input: string")
    .Input("pattern: string")
    .Input("rewrite: string")
    .Output("output: string")
    .Attr("replace_global: bool = true")
    .SetShapeFn(RegexShape)
    .Doc(
        "Each string with the matches of `pattern` (RE2 syntax) replaced by `rewrite` (\\\\1 .. "
        "\\\\9 name groups, \\\\0 the match); only the first match unless replace_global");

REGISTER_OP("RegexFullMatch")
    .Input("input: string")
    .Input("pattern: string")
    .Output("output: bool")
    .SetShapeFn(RegexShape)
    .Doc("Whether each whole string matches `pattern` (RE2 syntax)");

// `input` any shape; the int64 buckets have its shape.
absl::Status SameShape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

REGISTER_OP("StringToHashBucketFast")
    .Input("input: string")
    .Output("output: int64")
    .Attr("num_buckets: int >= 1")
    .SetShapeFn(SameShape)
    .Doc("FarmHash Fingerprint64 of each string modulo num_buckets (TensorFlow's buckets)");

REGISTER_OP("StringToHashBucketStrong")
    .Input("input: string")
    .Output("output: int64")
    .Attr("num_buckets: int >= 1")
    .Attr("key: list(int)")
    .SetShapeFn(SameShape)
    .Doc("SipHash-2-4 of each string keyed by the two words of `key`, modulo num_buckets");

REGISTER_OP("StringToHashBucket")
    .Input("string_tensor: string")
    .Output("output: int64")
    .Attr("num_buckets: int >= 1")
    .SetShapeFn(SameShape)
    .Doc("TensorFlow's legacy Hash64 of each string modulo num_buckets");

}  // namespace shardflow
