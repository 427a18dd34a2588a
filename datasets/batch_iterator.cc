#include "datasets/batch_iterator.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

// A uniform integer in [0, bound) from the raw 64-bit outputs of `rng`, by rejection sampling.
// std::uniform_int_distribution is implementation-defined, so we do not use it.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

// Fisher-Yates (Durstenfeld) shuffle of 0..n-1 with mt19937_64(seed).
void ShuffledOrder(uint64_t seed, std::vector<int64_t>* order) {
  std::mt19937_64 rng(seed);
  for (size_t i = order->size(); i > 1; --i) {
    size_t j = static_cast<size_t>(UniformBelow(rng, i));
    std::swap((*order)[i - 1], (*order)[j]);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<BatchIterator>> BatchIterator::Create(
    Dataset dataset, const BatchIteratorOptions& options) {
  SF_RETURN_IF_ERROR(ValidateDataset(dataset));
  if (options.batch_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("BatchIterator batch_size must be positive; got ", options.batch_size));
  }
  if (dataset.size() == 0) {
    return absl::InvalidArgumentError("BatchIterator needs a dataset with at least one example");
  }
  if (options.drop_remainder && dataset.size() < options.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BatchIterator batch_size ", options.batch_size, " is larger than the dataset's ",
        dataset.size(), " examples and drop_remainder is set, so no batch would ever be made; ",
        "lower batch_size or unset drop_remainder"));
  }
  if (options.num_epochs < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BatchIterator num_epochs must be -1 (forever) or >= 0; got ", options.num_epochs));
  }
  if (options.prefetch < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BatchIterator prefetch must be >= 0 (0 disables it); got ", options.prefetch));
  }
  std::unique_ptr<BatchIterator> it(new BatchIterator(std::move(dataset), options));
  if (options.prefetch > 0)
    it->prefetch_thread_ = std::thread([p = it.get()] { p->PrefetchLoop(); });
  return it;
}

BatchIterator::BatchIterator(Dataset dataset, const BatchIteratorOptions& options)
    : dataset_(std::move(dataset)),
      options_(options),
      batches_per_epoch_(options.drop_remainder
                             ? dataset_.size() / options.batch_size
                             : (dataset_.size() + options.batch_size - 1) / options.batch_size),
      order_(dataset_.size()) {}

BatchIterator::~BatchIterator() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
}

std::optional<Batch> BatchIterator::Produce() {
  if (step_ == batches_per_epoch_) {
    ++epoch_;
    step_ = 0;
    order_ready_ = false;
  }
  if (options_.num_epochs >= 0 && epoch_ >= options_.num_epochs) return std::nullopt;
  if (!order_ready_) {
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
    if (options_.shuffle) ShuffledOrder(options_.seed + static_cast<uint64_t>(epoch_), &order_);
    order_ready_ = true;
  }
  const int64_t begin = step_ * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, dataset_.size() - begin);
  Batch batch = Assemble(order_.data() + begin, count);
  batch.epoch = epoch_;
  batch.step = step_;
  ++step_;
  return batch;
}

Batch BatchIterator::Assemble(const int64_t* indices, int64_t count) const {
  const int64_t row = dataset_.images.dim_size(1);
  const int num_classes = dataset_.num_classes;
  Batch batch;
  batch.images = Tensor(DT_FLOAT, TensorShape({count, row}));
  batch.labels = Tensor(DT_INT32, TensorShape({count}));
  const float* images = dataset_.images.data<float>();
  const int32_t* labels = dataset_.labels.data<int32_t>();
  float* out_images = batch.images.data<float>();
  int32_t* out_labels = batch.labels.data<int32_t>();
  for (int64_t b = 0; b < count; ++b) {
    std::memcpy(out_images + b * row, images + indices[b] * row, row * sizeof(float));
    out_labels[b] = labels[indices[b]];
  }
  if (options_.one_hot) {
    batch.one_hot = Tensor(DT_FLOAT, TensorShape({count, num_classes}));
    float* hot = batch.one_hot.data<float>();
    std::memset(hot, 0, count * num_classes * sizeof(float));
    for (int64_t b = 0; b < count; ++b) hot[b * num_classes + out_labels[b]] = 1.0f;
  }
  if (options_.layout == ImageLayout::kImage) {
    TensorShape shape = dataset_.example_shape;
    shape.InsertDim(0, count);
    // Same element count by ValidateDataset, so this cannot fail.
    batch.images = *batch.images.Reshaped(shape);
  }
  return batch;
}

void BatchIterator::PrefetchLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto room_or_cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return cancelled_ || static_cast<int>(queue_.size()) < options_.prefetch;
      };
      mu_.Await(absl::Condition(&room_or_cancelled));
      if (cancelled_) return;
    }
    // Assembling happens without the lock, while the caller works on an earlier batch. Only this
    // thread touches the sequence state.
    std::optional<Batch> batch = Produce();
    absl::MutexLock lock(&mu_);
    if (!batch.has_value()) {
      producer_done_ = true;
      return;
    }
    queue_.push_back(std::move(*batch));
  }
}

absl::StatusOr<Batch> BatchIterator::Next() {
  absl::MutexLock lock(&mu_);
  if (options_.prefetch == 0) {
    if (!producer_done_) {
      std::optional<Batch> batch = Produce();
      if (batch.has_value()) return std::move(*batch);
      producer_done_ = true;
    }
  } else {
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !queue_.empty() || producer_done_;
    };
    mu_.Await(absl::Condition(&ready));
    if (!queue_.empty()) {
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      return batch;
    }
  }
  return absl::OutOfRangeError(absl::StrCat("BatchIterator is exhausted: all ", options_.num_epochs,
                                            " epochs have been produced"));
}

}  // namespace shardflow
