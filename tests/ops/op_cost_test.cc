// Ops carry their FLOP estimate beside their definition (OpDefBuilder::SetFlopsFn); the cost
// model asks the op. Checked on concrete shapes, transposes and unknown dimensions.
#include "core/framework/op_cost.h"

#include "core/framework/attr_value.h"
#include "core/framework/op_def.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

double Flops(const std::string& op, const std::vector<TensorShape>& inputs,
             const std::vector<TensorShape>& outputs,
             const std::map<std::string, AttrValue>& attrs = {}, int64_t unknown_dim = 7) {
  const OpDef* def = OpRegistry::Global()->LookUp(op);
  EXPECT_NE(def, nullptr) << op;
  if (def == nullptr || !def->flops_fn) return -1;
  NodeDef node;
  node.set_op(op);
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  return def->flops_fn(OpCostContext(node, &inputs, &outputs, unknown_dim));
}

TEST(OpCostTest, MatMulCountsAMultiplyAndAnAddPerTerm) {
  EXPECT_DOUBLE_EQ(Flops("MatMul", {TensorShape({3, 4}), TensorShape({4, 5})}, {}), 2 * 3 * 4 * 5);
  EXPECT_DOUBLE_EQ(Flops("MatMul", {TensorShape({4, 3}), TensorShape({5, 4})}, {},
                         {{"transpose_a", MakeAttr(true)}, {"transpose_b", MakeAttr(true)}}),
                   2 * 3 * 4 * 5);
  // An unknown batch dimension counts as unknown_dim.
  EXPECT_DOUBLE_EQ(Flops("MatMul", {TensorShape({-1, 4}), TensorShape({4, 5})}, {}), 2 * 7 * 4 * 5);
}

TEST(OpCostTest, ConvolutionsAndPoolingFollowTheirWindows) {
  const TensorShape out({1, 8, 8, 16}), filter({3, 3, 4, 16});
  const double conv = 2.0 * (8 * 8 * 16) * 3 * 3 * 4;
  EXPECT_DOUBLE_EQ(Flops("Conv2D", {TensorShape({1, 8, 8, 4}), filter}, {out}), conv);
  EXPECT_DOUBLE_EQ(
      Flops("Conv2DBackpropInput", {TensorShape({4}), filter, out}, {TensorShape({1, 8, 8, 4})}),
      conv);
  EXPECT_DOUBLE_EQ(
      Flops("Conv2DBackpropFilter", {TensorShape({1, 8, 8, 4}), TensorShape({4}), out}, {filter}),
      conv);
  EXPECT_DOUBLE_EQ(Flops("MaxPool", {TensorShape({1, 8, 8, 4})}, {TensorShape({1, 4, 4, 4})},
                         {{"ksize", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})}}),
                   8.0 * 8 * 4 * 4);
}

TEST(OpCostTest, ElementWiseOpsHaveNoEstimateOfTheirOwn) {
  const OpDef* add = OpRegistry::Global()->LookUp("Add");
  ASSERT_NE(add, nullptr);
  EXPECT_FALSE(add->flops_fn) << "the cost model's per-element default covers it";
}

}  // namespace
}  // namespace shardflow
