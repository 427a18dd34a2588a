#include "core/framework/attr_value.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardflow {

AttrValue MakeAttr(int64_t v) {
  AttrValue a;
  a.set_i(v);
  return a;
}
AttrValue MakeAttr(float v) {
  AttrValue a;
  a.set_f(v);
  return a;
}
AttrValue MakeAttr(bool v) {
  AttrValue a;
  a.set_b(v);
  return a;
}
AttrValue MakeAttr(DataType v) {
  AttrValue a;
  a.set_type(v);
  return a;
}
AttrValue MakeAttr(const std::string& v) {
  AttrValue a;
  a.set_s(v);
  return a;
}
AttrValue MakeAttr(const TensorShape& v) {
  AttrValue a;
  v.AsProto(a.mutable_shape());
  return a;
}
AttrValue MakeAttr(const Tensor& v) {
  AttrValue a;
  v.AsProto(a.mutable_tensor());
  return a;
}
AttrValue MakeAttr(const GraphFunction& v) {
  AttrValue a;
  *a.mutable_func() = v;
  return a;
}
AttrValue MakeAttr(const std::vector<TensorShape>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (const TensorShape& x : v) x.AsProto(list->add_shape());
  return a;
}
AttrValue MakeAttr(const std::vector<int64_t>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (int64_t x : v) list->add_i(x);
  return a;
}
AttrValue MakeAttr(const std::vector<DataType>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (DataType x : v) list->add_type(x);
  return a;
}

std::string AttrValueTypeName(const AttrValue& v) {
  switch (v.value_case()) {
    case AttrValue::kS:
      return "string";
    case AttrValue::kI:
      return "int";
    case AttrValue::kF:
      return "float";
    case AttrValue::kB:
      return "bool";
    case AttrValue::kType:
      return "type";
    case AttrValue::kShape:
      return "shape";
    case AttrValue::kTensor:
      return "tensor";
    case AttrValue::kFunc:
      return "func";
    case AttrValue::kList: {
      const auto& l = v.list();
      if (l.type_size() > 0) return "list(type)";
      if (l.s_size() > 0) return "list(string)";
      if (l.f_size() > 0) return "list(float)";
      if (l.b_size() > 0) return "list(bool)";
      if (l.shape_size() > 0) return "list(shape)";
      return "list(int)";  // also the empty list
    }
    default:
      return "";
  }
}

std::string SummarizeAttrValue(const AttrValue& v) {
  switch (v.value_case()) {
    case AttrValue::kS:
      return absl::StrCat("\"", v.s(), "\"");
    case AttrValue::kI:
      return absl::StrCat(v.i());
    case AttrValue::kF:
      return absl::StrCat(v.f());
    case AttrValue::kB:
      return v.b() ? "true" : "false";
    case AttrValue::kType:
      return DataTypeString(v.type());
    case AttrValue::kShape: {
      auto s = TensorShape::FromProto(v.shape());
      return s.ok() ? s->DebugString() : "<bad shape>";
    }
    case AttrValue::kTensor: {
      auto t = Tensor::FromProto(v.tensor());
      return t.ok() ? t->DebugString(4) : "<bad tensor>";
    }
    case AttrValue::kFunc:
      return absl::StrCat("<function of ", v.func().graph().node_size(), " nodes, ",
                          v.func().arg_size(), " args, ", v.func().ret_size(), " results>");
    case AttrValue::kList: {
      const auto& l = v.list();
      if (l.shape_size() > 0) {
        std::vector<std::string> shapes;
        for (const auto& p : l.shape()) {
          auto s = TensorShape::FromProto(p);
          shapes.push_back(s.ok() ? s->DebugString() : "<bad shape>");
        }
        return absl::StrCat("[", absl::StrJoin(shapes, ", "), "]");
      }
      if (l.type_size() > 0) {
        std::vector<std::string> names;
        for (int t : l.type()) names.push_back(DataTypeString(static_cast<DataType>(t)));
        return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
      }
      return absl::StrCat("[", absl::StrJoin(l.i(), ", "), "]");
    }
    default:
      return "<unset>";
  }
}

namespace {

absl::Status Lookup(const AttrMap& attrs, const std::string& name, AttrValue::ValueCase want,
                    const char* want_name, const AttrValue** out) {
  auto it = attrs.find(name);
  if (it == attrs.end()) {
    return absl::NotFoundError(absl::StrCat("attr '", name, "' is not set"));
  }
  if (it->second.value_case() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr '", name, "' has type ", AttrValueTypeName(it->second), "; expected ", want_name));
  }
  *out = &it->second;
  return absl::OkStatus();
}

}  // namespace

#define SF_GET_ATTR(CPP, CASE, NAME, EXPR)                                      \
  absl::Status GetAttr(const AttrMap& attrs, const std::string& name, CPP* v) { \
    const AttrValue* a;                                                         \
    absl::Status s = Lookup(attrs, name, AttrValue::CASE, NAME, &a);            \
    if (!s.ok()) return s;                                                      \
    EXPR;                                                                       \
    return absl::OkStatus();                                                    \
  }
SF_GET_ATTR(int64_t, kI, "int", *v = a->i())
SF_GET_ATTR(int, kI, "int", *v = static_cast<int>(a->i()))
SF_GET_ATTR(float, kF, "float", *v = a->f())
SF_GET_ATTR(bool, kB, "bool", *v = a->b())
SF_GET_ATTR(DataType, kType, "type", *v = a->type())
SF_GET_ATTR(std::string, kS, "string", *v = a->s())
SF_GET_ATTR(std::vector<int64_t>, kList, "list(int)",
            v->assign(a->list().i().begin(), a->list().i().end()))
SF_GET_ATTR(std::vector<DataType>, kList, "list(type)", {
  v->clear();
  for (int t : a->list().type()) v->push_back(static_cast<DataType>(t));
})
SF_GET_ATTR(GraphFunction, kFunc, "func", *v = a->func())
#undef SF_GET_ATTR

absl::Status GetAttr(const AttrMap& attrs, const std::string& name, TensorShape* v) {
  const AttrValue* a;
  absl::Status s = Lookup(attrs, name, AttrValue::kShape, "shape", &a);
  if (!s.ok()) return s;
  auto shape = TensorShape::FromProto(a->shape());
  if (!shape.ok()) return shape.status();
  *v = *shape;
  return absl::OkStatus();
}

absl::Status GetAttr(const AttrMap& attrs, const std::string& name, std::vector<TensorShape>* v) {
  const AttrValue* a;
  absl::Status s = Lookup(attrs, name, AttrValue::kList, "list(shape)", &a);
  if (!s.ok()) return s;
  v->clear();
  for (const auto& p : a->list().shape()) {
    auto shape = TensorShape::FromProto(p);
    if (!shape.ok()) return shape.status();
    v->push_back(*shape);
  }
  return absl::OkStatus();
}

absl::Status GetAttr(const AttrMap& attrs, const std::string& name, Tensor* v) {
  const AttrValue* a;
  absl::Status s = Lookup(attrs, name, AttrValue::kTensor, "tensor", &a);
  if (!s.ok()) return s;
  auto t = Tensor::FromProto(a->tensor());
  if (!t.ok()) return t.status();
  *v = *t;
  return absl::OkStatus();
}

}  // namespace shardflow
