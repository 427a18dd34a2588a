// Saver: saves and restores the variables of a graph through a session.
//
//   Scope s = Scope::NewRootScope();
//   ... build the model and optimizer ...
//   Saver saver(s);                        // adds restore ops: create it before ToGraphDef
//   GraphDef def; SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
//   ... session->Create(def), train ...
//   SF_RETURN_IF_ERROR(saver.Save(session.get(), "ckpt/model.ckpt", {{"_meta/step", step}}));
//   SF_ASSIGN_OR_RETURN(NamedTensors extra, saver.Restore(session.get(), "ckpt/model.ckpt"));
//
// Every variable of the scope is saved (optimizer slots included) under its name, plus any
// extra tensors the caller adds (names starting with "_meta/"). Restore checks names, dtypes and
// shapes against the graph before assigning anything, so a checkpoint of another model is an
// error naming each difference and never a partial load.
//
// Thread safety: Save and Restore may be called from any thread, not concurrently with steps
// that update the variables.
#ifndef SHARDFLOW_RUNTIME_SAVER_H_
#define SHARDFLOW_RUNTIME_SAVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/training.h"
#include "runtime/checkpoint.h"
#include "runtime/session.h"

namespace shardflow {

class Saver {
 public:
  // Records the scope's variables and adds one placeholder and assignment per variable.
  explicit Saver(const Scope& scope);

  // `extra` names must start with "_meta/".
  absl::Status Save(Session* session, const std::string& path,
                    const NamedTensors& extra = {}) const;
  // Assigns every variable from the checkpoint; returns the "_meta/" tensors.
  absl::StatusOr<NamedTensors> Restore(Session* session, const std::string& path) const;
  // The same from a checkpoint already loaded; `source` names it in errors.
  absl::StatusOr<NamedTensors> Restore(Session* session, const NamedTensors& loaded,
                                       const std::string& source) const;
  const std::vector<Var>& variables() const { return variables_; }

 private:
  std::vector<Var> variables_;
  std::vector<Output> values_;  // restore placeholders, one per variable
  std::string restore_op_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SAVER_H_
