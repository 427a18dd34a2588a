// Helpers for AttrValue: building them from C++ values and reading them back with type checks.
//
//   NodeDef n; n.mutable_attr()->insert({"T", MakeAttr(DT_FLOAT)});
//   DataType t; SF_RETURN_IF_ERROR(GetAttr(n.attr(), "T", &t));
#ifndef SHARDFLOW_CORE_FRAMEWORK_ATTR_VALUE_H_
#define SHARDFLOW_CORE_FRAMEWORK_ATTR_VALUE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

using AttrMap = google::protobuf::Map<std::string, AttrValue>;

AttrValue MakeAttr(int64_t v);
inline AttrValue MakeAttr(int v) { return MakeAttr(static_cast<int64_t>(v)); }
AttrValue MakeAttr(float v);
AttrValue MakeAttr(bool v);
AttrValue MakeAttr(DataType v);
AttrValue MakeAttr(const std::string& v);
inline AttrValue MakeAttr(const char* v) { return MakeAttr(std::string(v)); }
AttrValue MakeAttr(const TensorShape& v);
AttrValue MakeAttr(const Tensor& v);
AttrValue MakeAttr(const GraphFunction& v);
AttrValue MakeAttr(const std::vector<TensorShape>& v);
AttrValue MakeAttr(const std::vector<int64_t>& v);
AttrValue MakeAttr(const std::vector<DataType>& v);

// Each returns NotFound when the attr is missing and InvalidArgument when it has another type.
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, int64_t* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, int* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, float* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, bool* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, DataType* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, std::string* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, TensorShape* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, Tensor* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, std::vector<int64_t>* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, std::vector<DataType>* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, GraphFunction* v);
absl::Status GetAttr(const AttrMap& attrs, const std::string& name, std::vector<TensorShape>* v);

// The attr type name as used in op signatures: "int", "float", "bool", "type", "string",
// "shape", "tensor", "list(int)", ...; "" when unset.
std::string AttrValueTypeName(const AttrValue& v);
// A short human-readable value: "DT_FLOAT" -> "float", lists as "[1, 2]".
std::string SummarizeAttrValue(const AttrValue& v);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_ATTR_VALUE_H_
