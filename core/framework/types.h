// DataType: the element types a Tensor can hold, their C++ types, names and sizes.
//
//   DataType dt = DataTypeToEnum<float>::value;   // DT_FLOAT
//   DataTypeString(DT_BFLOAT16)                    // "bfloat16"
//   SF_SWITCH_NUMERIC(dt, T, { fill<T>(...); })    // dispatch on a runtime dtype
#ifndef SHARDFLOW_CORE_FRAMEWORK_TYPES_H_
#define SHARDFLOW_CORE_FRAMEWORK_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/protos/types.pb.h"

namespace shardflow {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// "float", "int32", ... as written in op signatures and error messages.
std::string DataTypeString(DataType dtype);
// Parses the names DataTypeString returns ("float", "float32", "int64", "bf16", ...).
absl::StatusOr<DataType> ParseDataType(absl::string_view name);
// Bytes per element; 0 for DT_STRING and DT_INVALID (strings are not fixed-size).
int DataTypeSize(DataType dtype);
bool DataTypeIsFloating(DataType dtype);
bool DataTypeIsInteger(DataType dtype);
// All valid types, in enum order.
const std::vector<DataType>& AllDataTypes();

template <typename T>
struct DataTypeToEnum;
template <DataType D>
struct EnumToDataType;

#define SF_MATCH_TYPE_AND_ENUM(TYPE, ENUM)  \
  template <>                               \
  struct DataTypeToEnum<TYPE> {             \
    static constexpr DataType value = ENUM; \
  };                                        \
  template <>                               \
  struct EnumToDataType<ENUM> {             \
    using Type = TYPE;                      \
  }
SF_MATCH_TYPE_AND_ENUM(float, DT_FLOAT);
SF_MATCH_TYPE_AND_ENUM(double, DT_DOUBLE);
SF_MATCH_TYPE_AND_ENUM(int32_t, DT_INT32);
SF_MATCH_TYPE_AND_ENUM(uint8_t, DT_UINT8);
SF_MATCH_TYPE_AND_ENUM(int8_t, DT_INT8);
SF_MATCH_TYPE_AND_ENUM(std::string, DT_STRING);
SF_MATCH_TYPE_AND_ENUM(int64_t, DT_INT64);
SF_MATCH_TYPE_AND_ENUM(bool, DT_BOOL);
SF_MATCH_TYPE_AND_ENUM(bfloat16, DT_BFLOAT16);
SF_MATCH_TYPE_AND_ENUM(half, DT_HALF);
#undef SF_MATCH_TYPE_AND_ENUM

// Runtime dispatch: binds the C++ type of `dtype` to TYPE_ALIAS and runs BODY. The default
// branch runs DEFAULT (a statement) for types outside the list.
#define SF_TYPE_CASE(ENUM, TYPE_ALIAS, BODY)       \
  case ENUM: {                                     \
    using TYPE_ALIAS = EnumToDataType<ENUM>::Type; \
    BODY;                                          \
    break;                                         \
  }
#define SF_SWITCH_FLOAT(dtype, TYPE_ALIAS, BODY, DEFAULT) \
  switch (dtype) {                                        \
    SF_TYPE_CASE(DT_FLOAT, TYPE_ALIAS, BODY)              \
    SF_TYPE_CASE(DT_DOUBLE, TYPE_ALIAS, BODY)             \
    SF_TYPE_CASE(DT_HALF, TYPE_ALIAS, BODY)               \
    SF_TYPE_CASE(DT_BFLOAT16, TYPE_ALIAS, BODY)           \
    default:                                              \
      DEFAULT;                                            \
  }
#define SF_SWITCH_NUMERIC(dtype, TYPE_ALIAS, BODY, DEFAULT) \
  switch (dtype) {                                          \
    SF_TYPE_CASE(DT_FLOAT, TYPE_ALIAS, BODY)                \
    SF_TYPE_CASE(DT_DOUBLE, TYPE_ALIAS, BODY)               \
    SF_TYPE_CASE(DT_HALF, TYPE_ALIAS, BODY)                 \
    SF_TYPE_CASE(DT_BFLOAT16, TYPE_ALIAS, BODY)             \
    SF_TYPE_CASE(DT_INT8, TYPE_ALIAS, BODY)                 \
    SF_TYPE_CASE(DT_UINT8, TYPE_ALIAS, BODY)                \
    SF_TYPE_CASE(DT_INT32, TYPE_ALIAS, BODY)                \
    SF_TYPE_CASE(DT_INT64, TYPE_ALIAS, BODY)                \
    SF_TYPE_CASE(DT_BOOL, TYPE_ALIAS, BODY)                 \
    default:                                                \
      DEFAULT;                                              \
  }
#define SF_SWITCH_ALL(dtype, TYPE_ALIAS, BODY, DEFAULT) \
  switch (dtype) {                                      \
    SF_TYPE_CASE(DT_FLOAT, TYPE_ALIAS, BODY)            \
    SF_TYPE_CASE(DT_DOUBLE, TYPE_ALIAS, BODY)           \
    SF_TYPE_CASE(DT_HALF, TYPE_ALIAS, BODY)             \
    SF_TYPE_CASE(DT_BFLOAT16, TYPE_ALIAS, BODY)         \
    SF_TYPE_CASE(DT_INT8, TYPE_ALIAS, BODY)             \
    SF_TYPE_CASE(DT_UINT8, TYPE_ALIAS, BODY)            \
    SF_TYPE_CASE(DT_INT32, TYPE_ALIAS, BODY)            \
    SF_TYPE_CASE(DT_INT64, TYPE_ALIAS, BODY)            \
    SF_TYPE_CASE(DT_BOOL, TYPE_ALIAS, BODY)             \
    SF_TYPE_CASE(DT_STRING, TYPE_ALIAS, BODY)           \
    default:                                            \
      DEFAULT;                                          \
  }

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_TYPES_H_
