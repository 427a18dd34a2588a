// CheckpointSeries: the numbered checkpoints one `shardflow train` run keeps in a directory, and
// the index that names them.
//
//   CheckpointSeries series("checkpoints", /*keep=*/5);
//   SF_RETURN_IF_ERROR(saver.Save(session, series.PathFor(step), meta));  // atomic
//   SF_RETURN_IF_ERROR(series.Commit(step));  // the index names it; checkpoints past 5 go
//
// Layout of the directory (docs/training.md):
//   model.ckpt-<step>  one checkpoint per save, named by global step; runtime/checkpoint.h writes
//                      each through a temporary file and a rename, so it is whole or absent
//   checkpoint         the index: the kept checkpoints' file names, oldest first, one a line
//                      ('#' lines are comments); the last is the latest. Replaced whole (temporary
//                      file, fsync, rename, fsync of the directory) only after the checkpoint it
//                      adds is durable, so it never names a half-written file.
//   model.ckpt         the single checkpoint of earlier versions: resumed from, never written
//
// A crash at any moment therefore leaves an index whose last entry is loadable (barring damage
// after the fact, which ResumeCandidates' callers handle by trying the next one). Files named
// model.ckpt-<step> that the index does not name (a crash between the two renames, checkpoints
// past `keep`, an earlier run's series) and temporary files of processes that no longer run are
// deleted by the next Commit.
//
// Thread safety: not thread-safe. One process writes a directory at a time (two runs sharing a
// --checkpoint-dir delete each other's checkpoints).
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_CHECKPOINT_SERIES_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_CHECKPOINT_SERIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardflow {

class CheckpointSeries {
 public:
  static constexpr const char* kIndexName = "checkpoint";
  static constexpr const char* kLegacyName = "model.ckpt";

  // A new series in `dir` (which need not exist yet) keeping the latest `keep` >= 1 checkpoints.
  // Until ContinueAfter, the first Commit replaces whatever series the directory holds.
  CheckpointSeries(std::string dir, int64_t keep);

  // Where the checkpoint of global step `step` is written.
  std::string PathFor(int64_t step) const;

  // The checkpoints to try when resuming, newest first: those the index names, or without an
  // index every model.ckpt-<step> in the directory (by step); then model.ckpt when present.
  // An index that exists but cannot be read is described in *note (empty otherwise).
  std::vector<std::string> ResumeCandidates(std::string* note) const;

  // Continues the series after `path`, one of ResumeCandidates(): the index entries up to it are
  // kept, newer ones are dropped (and deleted) at the next Commit. After model.ckpt the series
  // starts afresh. latest() becomes `path`.
  void ContinueAfter(const std::string& path);

  // Records that PathFor(step) has been written: rewrites the index to name it last and at most
  // `keep` checkpoints in all, then deletes the unnamed files described above. Errors name the
  // index file; deleting is best effort (what stays is retried by the next Commit).
  absl::Status Commit(int64_t step);

  // Path of the latest checkpoint committed or continued from; empty before either.
  const std::string& latest() const { return latest_; }

  // The names this directory's index lists, oldest first, or an error naming the index and
  // the line that is not a checkpoint name. NotFound when there is no index.
  static absl::Status ReadIndex(const std::string& dir, std::vector<std::string>* names);

 private:
  // Index entries, or the model.ckpt-<step> files found (ascending step) without an index.
  std::vector<std::string> Listed(std::string* note) const;
  void DeleteUnlisted() const;

  const std::string dir_;
  const int64_t keep_;
  std::vector<std::string> kept_;  // file names in the index, oldest first
  std::string latest_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_CHECKPOINT_SERIES_H_
