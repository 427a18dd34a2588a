// Tensor: a typed, shaped, reference-counted view of a buffer.
//
// Copying a Tensor is cheap: both copies share one buffer (an atomic reference count). The buffer
// is freed when the last Tensor that refers to it goes away. Buffers are 64-byte aligned.
//
//   Tensor t(DT_FLOAT, TensorShape({2, 3}));          // from the CPU allocator
//   float* p = t.data<float>();
//   Tensor s = Tensor::Scalar<int32_t>(7);
//   Tensor v = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
//
// Thread safety: distinct Tensor objects may be used from different threads even when they
// share a buffer; writing the buffer's contents while another thread reads them is a race.
#ifndef SHARDFLOW_CORE_FRAMEWORK_TENSOR_H_
#define SHARDFLOW_CORE_FRAMEWORK_TENSOR_H_

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor_shape.h"
#include "core/framework/types.h"
#include "core/protos/tensor.pb.h"

namespace shardflow {

// Reference-counted memory behind one or more Tensors.
class TensorBuffer {
 public:
  TensorBuffer(void* data, size_t size) : data_(data), size_(size), version_(NewVersion()) {}
  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }
  void* data() const { return data_; }
  size_t size() const { return size_; }
  // The allocator the memory came from; null for external memory.
  virtual Allocator* allocator() const { return nullptr; }
  // Identifies the contents: unique to this buffer, and replaced by a fresh one by MarkWritten()
  // whenever the memory is handed to someone to write in place (a variable update, a kernel
  // forwarding its input as its output). Two reads that see the same version see the same
  // bytes, so a kernel may cache what it derives from them (a reordered filter).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void MarkWritten() { version_.store(NewVersion(), std::memory_order_release); }

 protected:
  virtual ~TensorBuffer() = default;

 private:
  void* const data_;
  const size_t size_;
  mutable std::atomic<int> refs_{1};
  std::atomic<uint64_t> version_;

  static uint64_t NewVersion() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
};

class Tensor {
 public:
  // An uninitialized tensor (dtype DT_INVALID); IsInitialized() is false.
  Tensor() = default;
  // Allocates from CpuAllocator(). `shape` must be fully defined (checked; an invalid shape
  // gives an uninitialized tensor — use Create() to get the error).
  Tensor(DataType dtype, const TensorShape& shape);
  Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape);
  // Like the constructor, with errors for undefined shapes and failed allocations.
  static absl::StatusOr<Tensor> Create(Allocator* allocator, DataType dtype,
                                       const TensorShape& shape);
  // Wraps memory owned by someone else without copying; `release` runs when the last Tensor
  // referring to it is gone. `data` must stay valid until then.
  static Tensor WrapExternal(DataType dtype, const TensorShape& shape, void* data,
                             std::function<void()> release);

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape());
    *t.data<T>() = value;
    return t;
  }
  // `values.size()` must equal the shape's element count; otherwise the result is uninitialized.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape);
  // A rank-1 tensor of the values.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, TensorShape({static_cast<int64_t>(values.size())}));
  }

  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  bool IsInitialized() const { return dtype_ != DT_INVALID; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.rank(); }
  int64_t dim_size(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  // Bytes of element data (0 for strings, whose storage is not contiguous).
  size_t TotalBytes() const { return num_elements_ * DataTypeSize(dtype_); }

  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() const { return buf_ ? buf_->data() : nullptr; }
  template <typename T>
  T& scalar() {
    return *data<T>();
  }
  template <typename T>
  const T& scalar() const {
    return *data<T>();
  }

  const TensorBuffer* buffer() const { return buf_; }
  // The buffer's content version (TensorBuffer::version); 0 for no buffer.
  uint64_t content_version() const { return buf_ ? buf_->version() : 0; }
  // Called by whoever is about to write into a buffer others may have read before
  // (TensorBuffer::MarkWritten).
  void MarkWritten() {
    if (buf_) buf_->MarkWritten();
  }
  bool SharesBufferWith(const Tensor& other) const { return buf_ != nullptr && buf_ == other.buf_; }
  // True when this is the only Tensor referring to its buffer (a kernel may then write in place).
  bool RefCountIsOne() const { return buf_ != nullptr && buf_->RefCountIsOne(); }

  // A tensor with the same buffer and another shape of the same element count.
  absl::StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // A copy with its own buffer.
  Tensor DeepCopy() const;

  static absl::StatusOr<Tensor> FromProto(const TensorProto& proto,
                                          Allocator* allocator = CpuAllocator());
  void AsProto(TensorProto* proto) const;

  // "float [2,3] {1 2 3 4 5 6}", eliding entries past max_entries.
  std::string DebugString(int max_entries = 10) const;
  // Only the values, "1 2 3 ...".
  std::string SummarizeValue(int max_entries = 10) const;

 private:
  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  int64_t num_elements_ = 0;
  TensorBuffer* buf_ = nullptr;
};

// True when the CPU can read the tensor's memory directly (an uninitialized tensor, external
// memory, and memory from a host allocator all count).
inline bool IsHostTensor(const Tensor& t) {
  return t.buffer() == nullptr || t.buffer()->allocator() == nullptr ||
         t.buffer()->allocator()->IsHostMemory();
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const TensorShape& shape) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  if (!t.IsInitialized() || t.NumElements() != static_cast<int64_t>(values.size())) return Tensor();
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_TENSOR_H_
