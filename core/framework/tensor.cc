#include "core/framework/tensor.h"

#include <new>

#include "absl/strings/str_cat.h"
#include "core/platform/checked_math.h"

namespace shardflow {
namespace {

class AllocatedBuffer final : public TensorBuffer {
 public:
  AllocatedBuffer(Allocator* allocator, void* data, size_t size)
      : TensorBuffer(data, size), allocator_(allocator) {}
  Allocator* allocator() const override { return allocator_; }

 private:
  ~AllocatedBuffer() override { allocator_->DeallocateRaw(data(), size()); }
  Allocator* allocator_;
};

// The std::string objects of a DT_STRING tensor live in memory from the allocator, so that
// they count against its limit like any other tensor's (their characters do not).
class StringBuffer final : public TensorBuffer {
 public:
  // `data` holds `n` default-constructed strings (the constructor makes them).
  StringBuffer(Allocator* allocator, void* data, int64_t n, size_t bytes)
      : TensorBuffer(data, bytes), allocator_(allocator), n_(n) {
    auto* strings = static_cast<std::string*>(data);
    for (int64_t i = 0; i < n; ++i) new (strings + i) std::string();
  }
  Allocator* allocator() const override { return allocator_; }

 private:
  ~StringBuffer() override {
    auto* strings = static_cast<std::string*>(data());
    for (int64_t i = 0; i < n_; ++i) strings[i].~basic_string();
    allocator_->DeallocateRaw(data(), size());
  }
  Allocator* allocator_;
  const int64_t n_;
};

class ExternalBuffer final : public TensorBuffer {
 public:
  ExternalBuffer(void* data, size_t size, std::function<void()> release)
      : TensorBuffer(data, size), release_(std::move(release)) {}

 private:
  ~ExternalBuffer() override {
    if (release_) release_();
  }
  std::function<void()> release_;
};

// Says how close the allocator is to its limit, for allocation errors.
std::string MemoryLimitHint(Allocator* allocator) {
  AllocatorStats stats = allocator->GetStats();
  if (stats.bytes_limit <= 0) return "";
  if (!allocator->IsHostMemory()) {
    return absl::StrCat(
        " (", stats.bytes_in_use, " of its limit of ", stats.bytes_limit,
        " bytes of device memory are in use; use a smaller batch, or raise the "
        "limit with gpu_options.memory_limit_mb / per_process_gpu_memory_fraction)");
  }
  return absl::StrCat(" (", stats.bytes_in_use, " of its limit of ", stats.bytes_limit,
                      " bytes are in use; a server's limit is set with --memory-limit-mb)");
}

}  // namespace

absl::StatusOr<Tensor> Tensor::Create(Allocator* allocator, DataType dtype,
                                      const TensorShape& shape) {
  if (dtype == DT_INVALID || (dtype != DT_STRING && DataTypeSize(dtype) == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create a tensor of type ", DataTypeString(dtype)));
  }
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create a tensor of shape ", shape.DebugString(),
                     ": a tensor's shape must be fully defined (no unknown dimensions)"));
  }
  auto num_elements = shape.CheckedNumElements();
  if (!num_elements.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create a ", DataTypeString(dtype),
                                                   " tensor: ", num_elements.status().message()));
  }
  const int64_t element_bytes =
      dtype == DT_STRING ? static_cast<int64_t>(sizeof(std::string)) : DataTypeSize(dtype);
  int64_t bytes = 0;
  if (!CheckedMul(*num_elements, element_bytes, &bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a ", DataTypeString(dtype), " tensor of shape ", shape.DebugString(),
                     " would need more than 2^63 bytes; no allocator can hold it"));
  }
  void* ptr = allocator->AllocateRaw(Allocator::kAlignment, static_cast<size_t>(bytes));
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocator '", allocator->Name(), "' could not allocate ", bytes,
                     " bytes for a ", DataTypeString(dtype), " tensor of shape ",
                     shape.DebugString(), MemoryLimitHint(allocator)));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = *num_elements;
  if (dtype == DT_STRING) {
    t.buf_ = new StringBuffer(allocator, ptr, *num_elements, static_cast<size_t>(bytes));
  } else {
    t.buf_ = new AllocatedBuffer(allocator, ptr, static_cast<size_t>(bytes));
  }
  return t;
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) : Tensor(CpuAllocator(), dtype, shape) {}

Tensor::Tensor(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  auto t = Create(allocator, dtype, shape);
  if (t.ok()) *this = std::move(t).value();
}

Tensor Tensor::WrapExternal(DataType dtype, const TensorShape& shape, void* data,
                            std::function<void()> release) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  t.buf_ = new ExternalBuffer(data, t.TotalBytes(), std::move(release));
  return t;
}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      buf_(other.buf_) {
  if (buf_) buf_->Ref();
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      num_elements_(other.num_elements_),
      buf_(other.buf_) {
  other.buf_ = nullptr;
  other.dtype_ = DT_INVALID;
  other.num_elements_ = 0;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (other.buf_) other.buf_->Ref();
  if (buf_) buf_->Unref();
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  num_elements_ = other.num_elements_;
  buf_ = other.buf_;
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (buf_) buf_->Unref();
  dtype_ = other.dtype_;
  shape_ = std::move(other.shape_);
  num_elements_ = other.num_elements_;
  buf_ = other.buf_;
  other.buf_ = nullptr;
  other.dtype_ = DT_INVALID;
  other.num_elements_ = 0;
  return *this;
}

Tensor::~Tensor() {
  if (buf_) buf_->Unref();
}

absl::StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape a tensor of shape ",
                                                   shape_.DebugString(), " (", num_elements_,
                                                   " elements) to ", shape.DebugString()));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Allocator* alloc = buf_ && buf_->allocator() ? buf_->allocator() : CpuAllocator();
  Tensor t(alloc, dtype_, shape_);
  if (dtype_ == DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (TotalBytes() > 0 && t.IsInitialized()) {
    alloc->CopyBytes(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

// Every size is checked against what the proto holds before anything is allocated: a proto
// cannot make us allocate more than it carries (a few bytes per element at most).
absl::StatusOr<Tensor> Tensor::FromProto(const TensorProto& proto, Allocator* allocator) {
  auto shape = TensorShape::FromProto(proto.shape());
  if (!shape.ok()) return shape.status();
  const DataType dtype = proto.dtype();
  if (!DataType_IsValid(dtype) || dtype == DT_INVALID ||
      (dtype != DT_STRING && DataTypeSize(dtype) == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor proto has no valid dtype (", static_cast<int>(dtype), ")"));
  }
  auto num_elements = shape->CheckedNumElements();
  if (!num_elements.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor proto: ", num_elements.status().message()));
  }
  if (dtype == DT_STRING) {
    if (proto.string_val_size() != *num_elements) {
      return absl::InvalidArgumentError(
          absl::StrCat("string tensor proto of shape ", shape->DebugString(), " has ",
                       proto.string_val_size(), " values; expected ", *num_elements));
    }
  } else {
    int64_t bytes = 0;
    const bool fits = CheckedMul(*num_elements, DataTypeSize(dtype), &bytes);
    if (!fits || static_cast<uint64_t>(bytes) != proto.content().size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor proto of type ", DataTypeString(dtype), " and shape ", shape->DebugString(),
          " has ", proto.content().size(), " bytes of content; expected ",
          fits ? absl::StrCat(bytes) : std::string("more than 2^63")));
    }
  }
  if (dtype == DT_BOOL) {
    // Any other byte is not a bool: reading it as one is undefined behaviour.
    const std::string& content = proto.content();
    for (size_t i = 0; i < content.size(); ++i) {
      if (static_cast<uint8_t>(content[i]) > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bool tensor proto holds byte ", static_cast<int>(static_cast<uint8_t>(content[i])),
            " at element ", i, "; a bool is 0 or 1"));
      }
    }
  }
  auto t = Create(allocator, dtype, *shape);
  if (!t.ok()) return t.status();
  if (dtype == DT_STRING) {
    for (int i = 0; i < proto.string_val_size(); ++i)
      t->data<std::string>()[i] = proto.string_val(i);
    return t;
  }
  if (t->TotalBytes() > 0) std::memcpy(t->raw_data(), proto.content().data(), t->TotalBytes());
  return t;
}

void Tensor::AsProto(TensorProto* proto) const {
  proto->Clear();
  proto->set_dtype(dtype_);
  shape_.AsProto(proto->mutable_shape());
  if (dtype_ == DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) proto->add_string_val(data<std::string>()[i]);
  } else if (TotalBytes() > 0) {
    proto->set_content(raw_data(), TotalBytes());
  }
}

namespace {
template <typename T>
void AppendValue(std::string* out, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    absl::StrAppend(out, "\"", v, "\"");
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    absl::StrAppend(out, static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    absl::StrAppend(out, static_cast<int>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    absl::StrAppend(out, v ? "true" : "false");
  } else {
    absl::StrAppend(out, v);
  }
}
}  // namespace

std::string Tensor::SummarizeValue(int max_entries) const {
  std::string out;
  if (!IsInitialized()) return "<uninitialized>";
  int64_t n = std::min<int64_t>(num_elements_, max_entries);
  SF_SWITCH_ALL(
      dtype_, T,
      {
        for (int64_t i = 0; i < n; ++i) {
          if (i > 0) out += " ";
          AppendValue(&out, data<T>()[i]);
        }
      },
      return "<invalid>");
  if (num_elements_ > n) out += "...";
  return out;
}

std::string Tensor::DebugString(int max_entries) const {
  if (!IsInitialized()) return "Tensor<uninitialized>";
  return absl::StrCat(DataTypeString(dtype_), " ", shape_.DebugString(), " {",
                      SummarizeValue(max_entries), "}");
}

}  // namespace shardflow
