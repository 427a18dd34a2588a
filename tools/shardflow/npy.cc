#include "tools/shardflow/npy.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shardflow {

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  std::string descr;
  switch (t.dtype()) {
    case DT_FLOAT:
      descr = "<f4";
      break;
    case DT_DOUBLE:
      descr = "<f8";
      break;
    case DT_INT32:
      descr = "<i4";
      break;
    case DT_INT64:
      descr = "<i8";
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", DataTypeString(t.dtype()), " as .npy"));
  }
  std::string shape = absl::StrJoin(t.shape().dims(), ", ");
  if (t.dims() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.TotalBytes()));
  if (!out.flush()) return absl::DataLossError(absl::StrCat("short write to '", path, "'"));
  return absl::OkStatus();
}

}  // namespace shardflow
