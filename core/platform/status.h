// Status helpers used at every module boundary.
//
// shardflow returns absl::Status / absl::StatusOr<T> everywhere; exceptions never cross a module.
//
//   SF_RETURN_IF_ERROR(graph.AddEdge(a, 0, b, 1));
//   SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::FromGraphDef(def));
//
// Errors for bad user input name the node and say what would be valid (see STYLE.md).
#ifndef SHARDFLOW_CORE_PLATFORM_STATUS_H_
#define SHARDFLOW_CORE_PLATFORM_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define SF_STATUS_CONCAT_INNER(a, b) a##b
#define SF_STATUS_CONCAT(a, b) SF_STATUS_CONCAT_INNER(a, b)

#define SF_RETURN_IF_ERROR(expr)                                 \
  do {                                                           \
    ::absl::Status sf_status_ = (expr);                          \
    if (ABSL_PREDICT_FALSE(!sf_status_.ok())) return sf_status_; \
  } while (0)

#define SF_ASSIGN_OR_RETURN(lhs, expr) \
  SF_ASSIGN_OR_RETURN_IMPL(SF_STATUS_CONCAT(sf_statusor_, __LINE__), lhs, expr)
#define SF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)          \
  auto tmp = (expr);                                      \
  if (ABSL_PREDICT_FALSE(!tmp.ok())) return tmp.status(); \
  lhs = std::move(tmp).value()

namespace shardflow {

// Returns `status` with `prefix` prepended to its message, keeping its code.
inline absl::Status WithContext(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_PLATFORM_STATUS_H_
