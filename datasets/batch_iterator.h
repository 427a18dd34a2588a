// BatchIterator: shuffled mini-batches of a Dataset, assembled ahead by a background thread.
//
//   BatchIteratorOptions options;
//   options.batch_size = 64;
//   options.seed = 42;
//   options.layout = ImageLayout::kImage;        // images [64,28,28,1] instead of [64,784]
//   options.one_hot = true;                      // also labels as float [64,10]
//   SF_ASSIGN_OR_RETURN(auto it, BatchIterator::Create(train, options));
//   for (;;) {
//     SF_ASSIGN_OR_RETURN(Batch batch, it->Next());   // the next batch is assembled meanwhile
//     ...
//   }
//
// Order: epoch e visits every example exactly once, in the order of a Fisher-Yates shuffle driven
// by std::mt19937_64 seeded with seed + e (our own shuffle and integer sampling, so the order is
// the same on every platform and standard library). Equal seeds give equal batches; prefetching
// never changes them. Without drop_remainder the last batch of an epoch may be smaller than
// batch_size; with it, the examples that do not fill a whole batch are skipped for that epoch
// (a different set each epoch when shuffling).
//
// Prefetching: with options.prefetch > 0 a background thread assembles up to that many batches
// ahead into a bounded queue. The destructor stops and joins it, also when batches are still
// queued or the thread is waiting for room.
//
// Thread safety: Next() may be called from several threads; calls are serialized and each batch
// goes to exactly one caller. The iterator must not be destroyed while a call to Next() is in
// progress. Batches own their tensors (they share nothing with the dataset or with each other).
#ifndef SHARDFLOW_DATASETS_BATCH_ITERATOR_H_
#define SHARDFLOW_DATASETS_BATCH_ITERATOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/tensor.h"
#include "datasets/dataset.h"

namespace shardflow {

enum class ImageLayout {
  kFlat,   // [B, D], e.g. [B,784]
  kImage,  // [B] + dataset.example_shape, e.g. [B,28,28,1] (NHWC)
};

struct BatchIteratorOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;
  // Skip the last, partial batch of each epoch.
  bool drop_remainder = false;
  ImageLayout layout = ImageLayout::kFlat;
  // Also give the labels as float one-hot rows [B, num_classes].
  bool one_hot = false;
  // Epochs to produce before Next() returns OutOfRange; -1 repeats forever.
  int64_t num_epochs = -1;
  // Batches a background thread assembles ahead; 0 assembles each batch inside Next().
  int prefetch = 2;
};

struct Batch {
  Tensor images;   // float, [B, D] or [B] + example_shape
  Tensor labels;   // int32 [B]
  Tensor one_hot;  // float [B, num_classes] with options.one_hot; otherwise uninitialized
  int64_t epoch = 0;
  int64_t step = 0;  // index of the batch within its epoch, from 0
};

class BatchIterator {
 public:
  // Errors (InvalidArgument) for an invalid dataset (see ValidateDataset) or options: a
  // non-positive batch_size, an empty dataset, drop_remainder with fewer examples than one
  // batch, num_epochs below -1, a negative prefetch.
  static absl::StatusOr<std::unique_ptr<BatchIterator>> Create(Dataset dataset,
                                                               const BatchIteratorOptions& options);
  ~BatchIterator();
  BatchIterator(const BatchIterator&) = delete;
  BatchIterator& operator=(const BatchIterator&) = delete;

  // The next batch; OutOfRange once num_epochs epochs have been produced (and on every later
  // call). Blocks while a prefetched batch is not ready yet.
  absl::StatusOr<Batch> Next();

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t dataset_size() const { return dataset_.size(); }

 private:
  BatchIterator(Dataset dataset, const BatchIteratorOptions& options);

  // The deterministic sequence: the batch after the previous one, or nullopt after the last.
  // Called by exactly one thread at a time (the prefetch thread, or Next() under mu_).
  std::optional<Batch> Produce();
  Batch Assemble(const int64_t* indices, int64_t count) const;
  void PrefetchLoop();

  const Dataset dataset_;
  const BatchIteratorOptions options_;
  const int64_t batches_per_epoch_;

  // Sequence state, owned by whoever calls Produce().
  std::vector<int64_t> order_;  // example indices of epoch_ in visiting order
  int64_t epoch_ = 0;
  int64_t step_ = 0;
  bool order_ready_ = false;

  absl::Mutex mu_;
  std::deque<Batch> queue_ ABSL_GUARDED_BY(mu_);
  bool producer_done_ ABSL_GUARDED_BY(mu_) = false;  // the sequence has ended
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;      // the destructor runs
  std::thread prefetch_thread_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DATASETS_BATCH_ITERATOR_H_
