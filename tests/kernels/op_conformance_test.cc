// Op conformance: every op in the OpRegistry, run through every CPU kernel registered for it and
// every dtype that kernel takes, against a reference computed in double by plain C++.
//
// ConformanceTable() (tests/kernels/conformance_table.h) holds one small case per op: its inputs
// (data inputs in double, cast to the dtype under test; index inputs such as shapes and axes as
// given) and a reference function of the inputs as the kernel sees them. The test fails for an op
// without an entry, so a new op is not done until it has one here. Internal ops (names starting
// with "_") are skipped, except the fused kernels of the graph optimizer (_FusedMatMul,
// _FusedConv2D); Placeholder and NoOp, which compute nothing, are checked by hand.
//
// The dtypes come from the KernelRegistry: the TypeConstraint on the op's type attr ("T", or the
// attr a case names) of each CPU KernelDef. A kernel without a constraint accepts any type; for
// those float and int32 are checked (those the op allows). One summary line per op is printed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/op_runner.h"
#include "runtime/session.h"
#include "tests/kernels/conformance_table.h"

namespace shardflow {
namespace {

using conformance::Attrs;
using conformance::ConformanceCase;
using conformance::ConformanceTable;
using conformance::DtypesToCheck;
using conformance::Values;

// ---- the generic run ------------------------------------------------------------------------

// Relative tolerance for a floating output dtype.
double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_DOUBLE:
      return 1e-10;
    case DT_FLOAT:
      return 1e-5;
    case DT_HALF:
      return 2e-3;
    default:
      return 1e-2;  // bfloat16
  }
}

// The dtype the op's first output must have.
DataType ExpectedOutputType(const OpDef& def, const Attrs& attrs) {
  const ArgDef& out = def.outputs[0];
  if (out.type != DT_INVALID) return out.type;
  auto it = attrs.find(out.type_attr);
  if (it != attrs.end()) return it->second.type();
  const AttrDef* attr = def.FindAttr(out.type_attr);
  return attr != nullptr && attr->has_default ? attr->default_value.type() : DT_INVALID;
}

// Runs `c` for one dtype (DT_INVALID: the op's fixed types) and compares with the reference.
void CheckCase(const OpDef& def, const ConformanceCase& c, DataType dt) {
  const std::string what = def.name + " " + (dt == DT_INVALID ? "fixed types" : DataTypeString(dt));
  Attrs attrs = c.attrs ? c.attrs(dt) : Attrs();
  if (dt != DT_INVALID) attrs[c.type_attr] = MakeAttr(dt);

  // Cast the inputs of fixed-type and swept-type arguments; keep the rest.
  std::vector<Tensor> inputs, seen;
  size_t next = 0;
  for (size_t a = 0; a < def.inputs.size(); ++a) {
    const ArgDef& arg = def.inputs[a];
    size_t n = 1;
    if (!arg.number_attr.empty()) n = c.inputs.size() - next - (def.inputs.size() - a - 1);
    for (size_t i = 0; i < n && next < c.inputs.size(); ++i, ++next) {
      const Tensor& given = c.inputs[next];
      DataType to = arg.type;
      if (to == DT_INVALID && dt != DT_INVALID && arg.type_attr == c.type_attr) to = dt;
      if (to == DT_INVALID || to == given.dtype()) {
        inputs.push_back(given);
        seen.push_back(given);
        continue;
      }
      auto cast = CastTensor(given, to);
      ASSERT_TRUE(cast.ok()) << what << ": input " << next << ": " << cast.status();
      auto back = CastTensor(*cast, DT_DOUBLE);
      ASSERT_TRUE(back.ok()) << what << ": input " << next << ": " << back.status();
      inputs.push_back(*cast);
      seen.push_back(*back);
    }
  }
  ASSERT_EQ(next, c.inputs.size()) << what << ": the case has more inputs than the op takes";

  auto out = RunOp(def.name, inputs, attrs);
  ASSERT_TRUE(out.ok()) << what << ": " << out.status();
  ASSERT_FALSE(out->empty()) << what << ": no outputs";
  const Tensor& got = (*out)[0];
  const DataType want_type = ExpectedOutputType(def, attrs);
  EXPECT_EQ(got.dtype(), want_type) << what << ": output dtype " << DataTypeString(got.dtype());
  const Tensor want = c.reference(seen);
  ASSERT_EQ(got.shape(), want.shape()) << what << ": got " << got.DebugString();
  const std::vector<double> g = Values(got), w = Values(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  const bool exact = !DataTypeIsFloating(got.dtype());
  int failures = 0;
  for (size_t i = 0; i < w.size() && failures < 3; ++i) {
    if (exact) {
      if (w[i] != std::trunc(w[i])) {
        ADD_FAILURE() << what << ": reference element " << i << " is " << w[i]
                      << ", not a whole number, for an integer output: choose inputs in the "
                         "conformance table that give whole numbers";
        ++failures;
      } else if (g[i] != w[i]) {
        ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i] << " ("
                      << got.DebugString() << ")";
        ++failures;
      }
    } else if (!(std::abs(g[i] - w[i]) <= Tolerance(got.dtype()) * std::max(1.0, std::abs(w[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i] << " ("
                    << got.DebugString() << ")";
      ++failures;
    }
  }
}

std::string FixedInputTypes(const OpDef& def) {
  std::string s;
  for (const ArgDef& arg : def.inputs) {
    if (arg.type != DT_INVALID) s += (s.empty() ? "" : ",") + DataTypeString(arg.type);
  }
  return s.empty() ? "fixed types" : s + " (fixed by the op)";
}

TEST(OpConformanceTest, EveryOpEveryCpuKernelEveryDtype) {
  const auto& table = ConformanceTable();
  int ops_checked = 0, runs = 0;
  for (const std::string& name : OpRegistry::Global()->ListOpNames()) {
    // Internal ops (_Arg, _Retval, ...) are skipped, but not the fused kernels the graph
    // optimizer makes: they compute what users asked for.
    if (name.empty() || (name[0] == '_' && name.rfind("_Fused", 0) != 0)) continue;
    auto it = table.find(name);
    if (it == table.end()) {
      ADD_FAILURE() << "op " << name << " has no conformance entry: add one to ConformanceTable() "
                    << "in tests/kernels/conformance_table.h";
      continue;
    }
    const OpDef* def = OpRegistry::Global()->LookUp(name);
    ASSERT_NE(def, nullptr) << name;
    const ConformanceCase& c = it->second;
    SCOPED_TRACE("op " + name);
    ++ops_checked;
    if (c.custom) {
      std::cout << "[conformance] " << name << ": " << c.custom() << "\n";
      ++runs;
      continue;
    }
    bool any_unconstrained = false;
    const std::vector<DataType> dtypes = DtypesToCheck(*def, c.type_attr, &any_unconstrained);
    if (dtypes.empty()) {
      ADD_FAILURE() << "op " << name << " has no CPU kernel";
      continue;
    }
    std::string summary;
    std::set<DataType> checked;
    for (DataType dt : dtypes) {
      CheckCase(*def, c, dt);
      ++runs;
      checked.insert(dt);
      summary += (summary.empty() ? "" : " ") +
                 (dt == DT_INVALID ? FixedInputTypes(*def) : DataTypeString(dt));
    }
    if (any_unconstrained) summary += " (kernel takes any type)";
    // Types the op's signature allows that no CPU kernel computes: an error at run time.
    const AttrDef* attr = def->FindAttr(c.type_attr);
    if (attr != nullptr && !any_unconstrained) {
      std::string missing;
      for (DataType dt : attr->allowed_types) {
        if (checked.count(dt) == 0) missing += " " + DataTypeString(dt);
      }
      if (!missing.empty()) summary += "; allowed but no CPU kernel:" + missing;
    }
    std::cout << "[conformance] " << name << ": " << summary << "\n";
  }
  // An entry for an op that no longer exists is dead weight.
  for (const auto& [name, c] : table) {
    EXPECT_NE(OpRegistry::Global()->LookUp(name), nullptr)
        << "the conformance table has an entry for " << name << ", which is not a registered op";
  }
  std::cout << "[conformance] " << ops_checked << " ops, " << runs << " (op, dtype) runs\n";
  EXPECT_GT(ops_checked, 0);
}

}  // namespace
}  // namespace shardflow
