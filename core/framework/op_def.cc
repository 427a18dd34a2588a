#include "core/framework/op_def.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/framework/attr_value.h"

namespace shardflow {

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const auto& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

namespace {

std::string ArgString(const ArgDef& a) {
  std::string type = !a.type_list_attr.empty() ? a.type_list_attr
                     : a.type_attr.empty()     ? DataTypeString(a.type)
                                               : a.type_attr;
  if (!a.number_attr.empty()) return absl::StrCat(a.name, ": ", a.number_attr, " * ", type);
  return absl::StrCat(a.name, ": ", type);
}

absl::Status BadSpec(const std::string& op, const std::string& spec, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("op '", op, "': bad spec '", spec, "': ", why));
}

absl::Status ParseArg(const std::string& op, const std::string& spec, const OpDef& def,
                      ArgDef* arg) {
  std::pair<std::string, std::string> kv = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  arg->name = std::string(absl::StripAsciiWhitespace(kv.first));
  std::string type = std::string(absl::StripAsciiWhitespace(kv.second));
  if (arg->name.empty() || type.empty()) return BadSpec(op, spec, "expected 'name: type'");
  std::vector<std::string> parts = absl::StrSplit(type, '*');
  if (parts.size() == 2) {
    arg->number_attr = std::string(absl::StripAsciiWhitespace(parts[0]));
    type = std::string(absl::StripAsciiWhitespace(parts[1]));
  } else if (parts.size() > 2) {
    return BadSpec(op, spec, "expected 'name: N * T'");
  }
  auto fixed = ParseDataType(type);
  const AttrDef* named = def.FindAttr(type);
  if (fixed.ok() && named == nullptr) {
    arg->type = *fixed;
  } else if (named != nullptr && named->type == "list(type)") {
    if (!arg->number_attr.empty()) return BadSpec(op, spec, "a list(type) takes no 'N *'");
    arg->type_list_attr = type;
  } else {
    arg->type_attr = type;
  }
  return absl::OkStatus();
}

absl::Status ParseDefault(const std::string& op, const std::string& spec, const std::string& type,
                          const std::string& text, AttrValue* out) {
  if (type == "int") {
    int64_t v;
    if (!absl::SimpleAtoi(text, &v)) return BadSpec(op, spec, "default is not an int");
    *out = MakeAttr(v);
  } else if (type == "float") {
    float v;
    if (!absl::SimpleAtof(text, &v)) return BadSpec(op, spec, "default is not a float");
    *out = MakeAttr(v);
  } else if (type == "bool") {
    if (text != "true" && text != "false") return BadSpec(op, spec, "default is not a bool");
    *out = MakeAttr(text == "true");
  } else if (type == "string") {
    std::string s = text;
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'')) s = s.substr(1, s.size() - 2);
    *out = MakeAttr(s);
  } else if (type == "type") {
    auto t = ParseDataType(text);
    if (!t.ok()) return BadSpec(op, spec, t.status().message());
    *out = MakeAttr(*t);
  } else if (type.rfind("list(", 0) == 0 && text == "[]") {
    out->mutable_list();  // the empty list, of any element type
  } else if (type == "list(int)") {
    std::string inner(absl::StripSuffix(absl::StripPrefix(text, "["), "]"));
    std::vector<int64_t> values;
    for (absl::string_view p : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
      int64_t v;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(p), &v)) {
        return BadSpec(op, spec, "default is not a list of ints");
      }
      values.push_back(v);
    }
    *out = MakeAttr(values);
  } else if (type == "shape") {
    if (text != "<unknown>") return BadSpec(op, spec, "shape defaults must be <unknown>");
    *out = MakeAttr(TensorShape::Unknown());
  } else {
    return BadSpec(op, spec, "this attr type takes no default");
  }
  return absl::OkStatus();
}

absl::Status ParseAttr(const std::string& op, const std::string& spec, AttrDef* attr) {
  std::pair<std::string, std::string> kv = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  attr->name = std::string(absl::StripAsciiWhitespace(kv.first));
  std::string rest = std::string(absl::StripAsciiWhitespace(kv.second));
  if (attr->name.empty() || rest.empty()) return BadSpec(op, spec, "expected 'name: type'");
  std::string default_text;
  size_t eq = rest.find('=');
  if (eq != std::string::npos && (eq == 0 || rest[eq - 1] != '>')) {
    default_text = std::string(absl::StripAsciiWhitespace(rest.substr(eq + 1)));
    rest = std::string(absl::StripAsciiWhitespace(rest.substr(0, eq)));
    attr->has_default = true;
  }
  size_t ge = rest.find(">=");
  if (ge != std::string::npos) {
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest.substr(ge + 2)), &attr->minimum)) {
      return BadSpec(op, spec, "bad minimum");
    }
    attr->has_minimum = true;
    rest = std::string(absl::StripAsciiWhitespace(rest.substr(0, ge)));
  }
  if (!rest.empty() && rest.front() == '{') {
    if (rest.back() != '}') return BadSpec(op, spec, "unterminated type set");
    attr->type = "type";
    for (absl::string_view t :
         absl::StrSplit(rest.substr(1, rest.size() - 2), ',', absl::SkipWhitespace())) {
      auto dt = ParseDataType(absl::StripAsciiWhitespace(t));
      if (!dt.ok()) return BadSpec(op, spec, dt.status().message());
      attr->allowed_types.push_back(*dt);
    }
  } else {
    static const char* kTypes[] = {"type",       "int",         "float",       "bool",
                                   "string",     "shape",       "tensor",      "list(int)",
                                   "list(type)", "list(shape)", "list(float)", "func"};
    bool known = false;
    for (const char* t : kTypes) known |= rest == t;
    if (!known) return BadSpec(op, spec, absl::StrCat("unknown attr type '", rest, "'"));
    attr->type = rest;
  }
  if (attr->has_default) {
    return ParseDefault(op, spec, attr->type, default_text, &attr->default_value);
  }
  return absl::OkStatus();
}

}  // namespace

std::string OpDef::Signature() const {
  std::vector<std::string> ins, outs, attr_strs;
  for (const auto& a : inputs) ins.push_back(ArgString(a));
  for (const auto& a : outputs) outs.push_back(ArgString(a));
  for (const auto& a : attrs) {
    std::string s = absl::StrCat(a.name, ": ", a.type);
    if (!a.allowed_types.empty()) {
      std::vector<std::string> names;
      for (DataType t : a.allowed_types) names.push_back(DataTypeString(t));
      s = absl::StrCat(a.name, " in {", absl::StrJoin(names, ", "), "}");
    }
    if (a.has_default) absl::StrAppend(&s, " = ", SummarizeAttrValue(a.default_value));
    attr_strs.push_back(s);
  }
  std::string sig =
      absl::StrCat(name, "(", absl::StrJoin(ins, ", "), ") -> (", absl::StrJoin(outs, ", "), ")");
  if (!attr_strs.empty()) absl::StrAppend(&sig, "; ", absl::StrJoin(attr_strs, "; "));
  return sig;
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }
OpDefBuilder& OpDefBuilder::Input(std::string spec) {
  inputs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string spec) {
  outputs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string spec) {
  attrs_.push_back(std::move(spec));
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetFlopsFn(FlopsFn fn) {
  def_.flops_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsStateful() {
  def_.is_stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string doc) {
  def_.doc = std::move(doc);
  return *this;
}

absl::StatusOr<OpDef> OpDefBuilder::Finalize() const {
  OpDef def = def_;
  for (const auto& spec : attrs_) {
    AttrDef attr;
    absl::Status s = ParseAttr(def.name, spec, &attr);
    if (!s.ok()) return s;
    def.attrs.push_back(std::move(attr));
  }
  for (const auto& spec : inputs_) {
    ArgDef arg;
    absl::Status s = ParseArg(def.name, spec, def, &arg);
    if (!s.ok()) return s;
    def.inputs.push_back(std::move(arg));
  }
  for (const auto& spec : outputs_) {
    ArgDef arg;
    absl::Status s = ParseArg(def.name, spec, def, &arg);
    if (!s.ok()) return s;
    def.outputs.push_back(std::move(arg));
  }
  for (const auto* args : {&def.inputs, &def.outputs}) {
    for (const ArgDef& a : *args) {
      if (!a.type_attr.empty() && def.FindAttr(a.type_attr) == nullptr) {
        return BadSpec(def.name, a.name, absl::StrCat("no attr named '", a.type_attr, "'"));
      }
      if (!a.number_attr.empty() && def.FindAttr(a.number_attr) == nullptr) {
        return BadSpec(def.name, a.name, absl::StrCat("no attr named '", a.number_attr, "'"));
      }
    }
  }
  return def;
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();
  return registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  if (ops_.count(def.name)) {
    return absl::AlreadyExistsError(absl::StrCat("op '", def.name, "' is registered twice"));
  }
  std::string name = def.name;
  ops_[name] = std::make_unique<OpDef>(std::move(def));
  return absl::OkStatus();
}

const OpDef* OpRegistry::LookUp(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

absl::StatusOr<const OpDef*> OpRegistry::Find(const std::string& name) const {
  const OpDef* def = LookUp(name);
  if (def != nullptr) return def;
  std::vector<std::string> similar;
  std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [n, _] : ops_) {
    std::string ln = absl::AsciiStrToLower(n);
    if (!lower.empty() &&
        (ln.find(lower) != std::string::npos || lower.find(ln) != std::string::npos)) {
      similar.push_back(n);
    }
  }
  // Closest first: the name in other case, then by how much longer or shorter.
  std::stable_sort(similar.begin(), similar.end(), [&](const std::string& a, const std::string& b) {
    auto gap = [&](const std::string& n) {
      return std::abs(static_cast<int64_t>(n.size()) - static_cast<int64_t>(name.size()));
    };
    return gap(a) < gap(b);
  });
  std::string hint = similar.empty()
                         ? std::string("; see OpRegistry::ListOpNames() for the registered ops")
                         : absl::StrCat("; did you mean ", absl::StrJoin(similar, ", "), "?");
  if (name == "PyFunc") {
    // Registered by the Python extension only (python_bindings/src/py_func.cc): the graph
    // reached a process without it, e.g. a `shardflow server` master.
    hint =
        ": it calls a Python function (tf.py_func, and the Python-built ops such as "
        "tf.strings.*, tf.string_split, lookup tables), which only runs in a process that "
        "imported shardflow; open the session on a master in such a process (a Python "
        "tf.train.Server) and pin these ops to a task it serves with tf.device, as TF1 asks "
        "for py_func";
  }
  return absl::NotFoundError(absl::StrCat("op '", name, "' is not registered", hint));
}

std::vector<std::string> OpRegistry::ListOpNames() const {
  std::vector<std::string> names;
  for (const auto& [n, _] : ops_) names.push_back(n);
  return names;
}

OpRegistration::OpRegistration(const OpDefBuilder& builder) {
  auto def = builder.Finalize();
  absl::Status s = def.ok() ? OpRegistry::Global()->Register(*std::move(def)) : def.status();
  if (!s.ok()) {
    std::fprintf(stderr, "shardflow: bad op registration: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
}

}  // namespace shardflow
