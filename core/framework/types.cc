#include "core/framework/types.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shardflow {

std::string DataTypeString(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return "float";
    case DT_DOUBLE:
      return "double";
    case DT_INT32:
      return "int32";
    case DT_UINT8:
      return "uint8";
    case DT_INT8:
      return "int8";
    case DT_STRING:
      return "string";
    case DT_INT64:
      return "int64";
    case DT_BOOL:
      return "bool";
    case DT_BFLOAT16:
      return "bfloat16";
    case DT_HALF:
      return "half";
    default:
      return absl::StrCat("invalid(", static_cast<int>(dtype), ")");
  }
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(name);
  if (n == "float" || n == "float32" || n == "f32") return DT_FLOAT;
  if (n == "double" || n == "float64" || n == "f64") return DT_DOUBLE;
  if (n == "int32") return DT_INT32;
  if (n == "uint8") return DT_UINT8;
  if (n == "int8") return DT_INT8;
  if (n == "string") return DT_STRING;
  if (n == "int64") return DT_INT64;
  if (n == "bool") return DT_BOOL;
  if (n == "bfloat16" || n == "bf16") return DT_BFLOAT16;
  if (n == "half" || n == "float16" || n == "f16") return DT_HALF;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data type '", name,
      "'; valid: float, double, half, bfloat16, int8, uint8, int32, int64, bool, string"));
}

int DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
    case DT_INT32:
      return 4;
    case DT_DOUBLE:
    case DT_INT64:
      return 8;
    case DT_UINT8:
    case DT_INT8:
    case DT_BOOL:
      return 1;
    case DT_BFLOAT16:
    case DT_HALF:
      return 2;
    default:
      return 0;
  }
}

bool DataTypeIsFloating(DataType dtype) {
  return dtype == DT_FLOAT || dtype == DT_DOUBLE || dtype == DT_HALF || dtype == DT_BFLOAT16;
}

bool DataTypeIsInteger(DataType dtype) {
  return dtype == DT_INT8 || dtype == DT_UINT8 || dtype == DT_INT32 || dtype == DT_INT64;
}

const std::vector<DataType>& AllDataTypes() {
  static const auto* all =
      new std::vector<DataType>{DT_FLOAT,  DT_DOUBLE, DT_INT32, DT_UINT8,    DT_INT8,
                                DT_STRING, DT_INT64,  DT_BOOL,  DT_BFLOAT16, DT_HALF};
  return *all;
}

}  // namespace shardflow
