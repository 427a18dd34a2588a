// Saver: saves the variables of a graph to a checkpoint and restores them, through the session
// that runs the graph. It works on any GraphDef — built with the C++ API (ops/), by Python, or
// read from a file — because it finds the variables in the GraphDef itself (its VarHandleOp
// nodes); it needs no graph-building API.
//
//   GraphDef def = ...;                        // scope.ToGraphDef(&def), or ReadGraphDef(path)
//   SF_ASSIGN_OR_RETURN(Saver saver, Saver::AddToGraph(&def));   // before Session::Create
//   SF_RETURN_IF_ERROR(session->Create(def));
//   ... train ...
//   SF_RETURN_IF_ERROR(saver.Save(session.get(), "ckpt/model.ckpt", {{"_meta/step", step}}));
//   SF_ASSIGN_OR_RETURN(NamedTensors extra, saver.Restore(session.get(), "ckpt/model.ckpt"));
//
// For a session already created from `def`, Saver::AddToSession(session, def) adds the same
// nodes with Session::Extend.
//
// A variable is saved under its shared name (the VarHandleOp's `shared_name`, or its node name
// when that is empty); optimizer slots are variables too, so they are saved with the model. The
// caller may add extra tensors whose names start with "_meta/". Restore checks names, dtypes and
// shapes against the graph before assigning anything, so a checkpoint of another model is an
// error naming each difference and never a partial load.
//
// The nodes added (Note [Saver nodes] in saver.cc) live under one fresh name scope, "save" (or
// "save_1", ... when the graph already uses it); nothing else in the graph changes.
//
// Thread safety: Save and Restore may be called from any thread, not concurrently with steps
// that update the variables. A Saver is a value: copies save and restore the same variables.
#ifndef SHARDFLOW_RUNTIME_SAVER_H_
#define SHARDFLOW_RUNTIME_SAVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/protos/graph.pb.h"
#include "runtime/checkpoint.h"
#include "runtime/session.h"

namespace shardflow {

class Saver {
 public:
  // Adds the save and restore nodes for every variable of `graph` to it. Errors: a VarHandleOp
  // without a valid `dtype` or `shape` attr (named), two variables of one shared name with
  // different dtypes or shapes.
  static absl::StatusOr<Saver> AddToGraph(GraphDef* graph);
  // The same for a session created from `graph`: the nodes are added with session->Extend.
  static absl::StatusOr<Saver> AddToSession(Session* session, const GraphDef& graph);

  // Writes every variable and `extra` (names must start with "_meta/") to `path`, atomically
  // (see SaveCheckpoint).
  absl::Status Save(Session* session, const std::string& path,
                    const NamedTensors& extra = {}) const;
  // Assigns every variable from the checkpoint at `path`; returns its "_meta/" tensors.
  absl::StatusOr<NamedTensors> Restore(Session* session, const std::string& path) const;
  // The same from a checkpoint already loaded; `source` names it in errors.
  absl::StatusOr<NamedTensors> Restore(Session* session, const NamedTensors& loaded,
                                       const std::string& source) const;

  // The variables, in the order of their nodes in the graph.
  const std::vector<VariableSpec>& variables() const { return variables_; }
  // The NoOp that Restore runs (after feeding every variable's value).
  const std::string& restore_op() const { return restore_op_; }

 private:
  Saver() = default;
  // Builds the nodes for the variables of `graph` into `added` (nothing is added to `graph`).
  static absl::StatusOr<Saver> Build(const GraphDef& graph, GraphDef* added);

  std::vector<VariableSpec> variables_;
  std::vector<std::string> reads_;   // one ReadVariableOp per variable: what Save fetches
  std::vector<std::string> values_;  // one Placeholder per variable: what Restore feeds
  std::string restore_op_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SAVER_H_
