#include "core/graph/graph_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace shardflow {

absl::Status WriteGraphDef(const std::string& path, const GraphDef& def, GraphFormat format) {
  std::string data;
  if (format == GraphFormat::kText) {
    if (!google::protobuf::TextFormat::PrintToString(def, &data)) {
      return absl::InternalError("could not print the GraphDef as text");
    }
  } else if (!def.SerializeToString(&data)) {
    return absl::InternalError("could not serialize the GraphDef");
  }
  std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write '", tmp, "': ", std::strerror(errno)));
    }
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out.flush()) {
      return absl::DataLossError(absl::StrCat("short write to '", tmp, "'"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphDef> ReadGraphDef(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // An ifstream opens a directory and reads nothing: an empty graph, silently.
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a directory, not a GraphDef file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open GraphDef file '", path, "': ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string data = buffer.str();
  GraphDef def;
  if (def.ParseFromString(data) && (data.empty() || def.node_size() > 0)) return def;
  def.Clear();
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(false);
  if (parser.ParseFromString(data, &def)) return def;
  return absl::InvalidArgumentError(
      absl::StrCat("'", path, "' is not a GraphDef in binary or text protobuf format"));
}

}  // namespace shardflow
