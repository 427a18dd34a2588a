// CPU kernels for RegexReplace and RegexFullMatch with RE2 (libre2, Debian's libre2-dev), the
// library and syntax TensorFlow's kernels use: matching takes time linear in the string, so a
// pattern such as (a+)+$ cannot hold a step for hours on a hostile string, as a backtracking
// engine (Python's re) does. The pattern is compiled once per step and shared by the strings.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "re2/re2.h"

namespace shardflow {
namespace {

// The scalar pattern input compiled; an error naming the pattern and RE2's complaint.
absl::StatusOr<std::unique_ptr<RE2>> CompilePattern(const Tensor& pattern) {
  if (pattern.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the pattern must be a scalar string, got shape ", pattern.shape().DebugString()));
  }
  const std::string& text = pattern.data<std::string>()[0];
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(text, options);
  if (!re->ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid pattern: ", text, ", error: ", re->error()));
  }
  return re;
}

class RegexReplaceOp : public OpKernel {
 public:
  explicit RegexReplaceOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("replace_global", &global_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    auto re = CompilePattern(ctx->input(1));
    OP_REQUIRES_OK(ctx, re.status());
    const Tensor& rewrite_t = ctx->input(2);
    OP_REQUIRES(
        ctx, rewrite_t.NumElements() == 1,
        absl::InvalidArgumentError(absl::StrCat("the rewrite must be a scalar string, got shape ",
                                                rewrite_t.shape().DebugString())));
    const std::string& rewrite = rewrite_t.data<std::string>()[0];
    std::string why;
    OP_REQUIRES(
        ctx, (*re)->CheckRewriteString(rewrite, &why),
        absl::InvalidArgumentError(absl::StrCat("Invalid rewrite pattern: ", rewrite,
                                                " for pattern ", (*re)->pattern(), ": ", why)));
    const Tensor& input = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const std::string* in = input.data<std::string>();
    std::string* o = out->data<std::string>();
    for (int64_t i = 0; i < input.NumElements(); ++i) {
      o[i] = in[i];
      if (global_) {
        RE2::GlobalReplace(&o[i], **re, rewrite);
      } else {
        RE2::Replace(&o[i], **re, rewrite);
      }
    }
  }

 private:
  bool global_ = true;
};

class RegexFullMatchOp : public OpKernel {
 public:
  explicit RegexFullMatchOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    auto re = CompilePattern(ctx->input(1));
    OP_REQUIRES_OK(ctx, re.status());
    const Tensor& input = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const std::string* in = input.data<std::string>();
    bool* o = out->data<bool>();
    for (int64_t i = 0; i < input.NumElements(); ++i) o[i] = RE2::FullMatch(in[i], **re);
  }
};

REGISTER_KERNEL(KernelDef("RegexReplace").Device(kDeviceCpu), RegexReplaceOp);
REGISTER_KERNEL(KernelDef("RegexFullMatch").Device(kDeviceCpu), RegexFullMatchOp);

}  // namespace
}  // namespace shardflow
