#include "core/framework/node_def_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/attr_value.h"
#include "core/framework/types.h"
#include "core/platform/status.h"

namespace shardflow {

std::string NodeErrorPrefix(const NodeDef& node) {
  return absl::StrCat("node '", node.name(), "' (", node.op(), "): ");
}

absl::Status AddDefaultsAndValidate(const OpDef& op, NodeDef* node) {
  auto error = [&](const std::string& msg) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeErrorPrefix(*node), msg, "; signature: ", op.Signature()));
  };
  auto* attrs = node->mutable_attr();
  for (const AttrDef& def : op.attrs) {
    auto it = attrs->find(def.name);
    if (it == attrs->end()) {
      if (!def.has_default) return error(absl::StrCat("attr '", def.name, "' is missing"));
      (*attrs)[def.name] = def.default_value;
      continue;
    }
    const AttrValue& v = it->second;
    std::string type = AttrValueTypeName(v);
    bool list_ok = def.type.rfind("list(", 0) == 0 && v.value_case() == AttrValue::kList &&
                   (v.list().ByteSizeLong() == 0 || type == def.type);
    if (type != def.type && !list_ok) {
      return error(absl::StrCat("attr '", def.name, "' has type ", type.empty() ? "<unset>" : type,
                                "; expected ", def.type));
    }
    // A dtype that names no type (a hand-made graph's 8 or 999) would pass until a kernel or
    // the Python layer trips over it; refused here, naming the node and attr.
    auto known = [](DataType t) {
      const auto& all = AllDataTypes();
      return std::find(all.begin(), all.end(), t) != all.end();
    };
    if (def.type == "type" && !known(v.type())) {
      return error(absl::StrCat("attr '", def.name, "' is DataType ", static_cast<int>(v.type()),
                                ", which is not a type shardflow has"));
    }
    if (def.type == "list(type)" && v.value_case() == AttrValue::kList) {
      for (int i = 0; i < v.list().type_size(); ++i) {
        if (!known(v.list().type(i))) {
          return error(absl::StrCat("attr '", def.name, "'[", i, "] is DataType ",
                                    static_cast<int>(v.list().type(i)),
                                    ", which is not a type shardflow has"));
        }
      }
    }
    if (!def.allowed_types.empty()) {
      bool allowed = false;
      for (DataType t : def.allowed_types) allowed |= t == v.type();
      if (!allowed) {
        std::vector<std::string> names;
        for (DataType t : def.allowed_types) names.push_back(DataTypeString(t));
        return error(absl::StrCat("attr '", def.name, "' is ", DataTypeString(v.type()),
                                  "; allowed: ", absl::StrJoin(names, ", ")));
      }
    }
    if (def.has_minimum && def.type == "int" && v.i() < def.minimum) {
      return error(absl::StrCat("attr '", def.name, "' is ", v.i(), "; must be >= ", def.minimum));
    }
  }
  for (const auto& [name, _] : *attrs) {
    if (!name.empty() && name[0] == '_') continue;
    if (op.FindAttr(name) == nullptr) return error(absl::StrCat("unknown attr '", name, "'"));
  }
  return absl::OkStatus();
}

namespace {
// The most inputs or outputs one node may declare (Concat's N, Split's num_split, Unpack's
// num, ...): a number attribute comes from the graph, which may come from the network, and is
// expanded into a list here before anything compares it with the node's inputs.
constexpr int64_t kMaxNodeArgs = int64_t{1} << 20;

// `args` expanded to one dtype per tensor; a count above kMaxNodeArgs fails before anything
// is allocated for it.
absl::Status ExpandArgs(const OpDef& op, const NodeDef& node, const std::vector<ArgDef>& args,
                        const char* what, DataTypeVector* out) {
  out->clear();
  auto too_many = [&](const std::string& attr, int64_t n) {
    return absl::InvalidArgumentError(absl::StrCat(NodeErrorPrefix(node), "attr '", attr, "' = ", n,
                                                   " makes more ", what, " than a node may have (",
                                                   kMaxNodeArgs, ")"));
  };
  for (const ArgDef& a : args) {
    if (!a.type_list_attr.empty()) {
      auto it = node.attr().find(a.type_list_attr);
      if (it == node.attr().end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeErrorPrefix(node), "attr '", a.type_list_attr, "' is missing"));
      }
      const int64_t count = it->second.list().type_size();
      if (count > kMaxNodeArgs - static_cast<int64_t>(out->size())) {
        return too_many(a.type_list_attr, count);
      }
      for (int t : it->second.list().type()) out->push_back(static_cast<DataType>(t));
      continue;
    }
    DataType t = a.type;
    if (!a.type_attr.empty()) {
      absl::Status s = GetAttr(node.attr(), a.type_attr, &t);
      if (!s.ok()) return WithContext(s, NodeErrorPrefix(node));
    }
    int64_t n = 1;
    if (!a.number_attr.empty()) {
      absl::Status s = GetAttr(node.attr(), a.number_attr, &n);
      if (!s.ok()) return WithContext(s, NodeErrorPrefix(node));
    }
    if (n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeErrorPrefix(node), "attr '", a.number_attr, "' = ", n, " is negative"));
    }
    if (n > kMaxNodeArgs - static_cast<int64_t>(out->size())) return too_many(a.number_attr, n);
    out->insert(out->end(), static_cast<size_t>(n), t);
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status ComputeArgTypes(const OpDef& op, const NodeDef& node, DataTypeVector* inputs,
                             DataTypeVector* outputs) {
  absl::Status s = ExpandArgs(op, node, op.inputs, "inputs", inputs);
  if (!s.ok()) return s;
  return ExpandArgs(op, node, op.outputs, "outputs", outputs);
}

}  // namespace shardflow
