// The `shardflow._shardflow` extension module: the public C++ API of shardflow for the Python
// package in python_bindings/shardflow/. Users import `shardflow`, not this module.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "datasets/fashion_mnist.h"
#include "kernels/cpu/string_hash.h"
#include "python_bindings/src/status_exceptions.h"
#include "python_bindings/src/tensor_conversion.h"
#include "runtime/checkpoint.h"

namespace shardflow {
namespace python {

void RegisterGraphBindings(pybind11::module_& m);
void RegisterSessionBindings(pybind11::module_& m);
void RegisterServerBindings(pybind11::module_& m);

namespace {

namespace py = pybind11;

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) of a buffer, for TFRecord files
// (shardflow/tfrecord.py); slicing-by-8 tables, built once.
uint32_t Crc32c(const uint8_t* p, size_t n) {
  static const auto tables = [] {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = tables[7][lo & 0xFF] ^ tables[6][(lo >> 8) & 0xFF] ^ tables[5][(lo >> 16) & 0xFF] ^
          tables[4][lo >> 24] ^ tables[3][hi & 0xFF] ^ tables[2][(hi >> 8) & 0xFF] ^
          tables[1][(hi >> 16) & 0xFF] ^ tables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = tables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// (images float32 [N,784] in [0,1], labels int32 [N]); the arrays own the loader's buffers.
py::tuple LoadFashionMnistArrays(const std::string& dir, const std::string& split) {
  Split s;
  if (split == "train") {
    s = Split::kTrain;
  } else if (split == "test") {
    s = Split::kTest;
  } else {
    throw StatusError(
        absl::InvalidArgumentError("split must be 'train' or 'test', not '" + split + "'"));
  }
  absl::StatusOr<Dataset> data;
  {
    py::gil_scoped_release release;
    data = LoadFashionMnist(dir.empty() ? kDefaultFashionMnistDir : dir, s);
  }
  ThrowIfError(data.status());
  Tensor images = std::move(data->images);
  Tensor labels = std::move(data->labels);
  data = absl::StatusOr<Dataset>();  // drop the dataset's references: the arrays own the data
  return py::make_tuple(TensorToArray(std::move(images)), TensorToArray(std::move(labels)));
}

// sf.train.Saver's file format is runtime/checkpoint.h's: [(name, array)] in, and out in saved
// order.
void SaveCheckpointArrays(const std::string& path, const py::list& items) {
  NamedTensors tensors;
  for (py::handle item : items) {
    auto pair = item.cast<py::tuple>();
    if (pair.size() != 2) {
      throw StatusError(absl::InvalidArgumentError("save_checkpoint takes (name, array) pairs"));
    }
    std::string name = pair[0].cast<std::string>();
    const std::string what = "checkpoint variable '" + name + "'";
    tensors.emplace_back(name,
                         ArrayToTensor(pair[1], /*allow_zero_copy=*/false, nullptr, what.c_str()));
  }
  absl::Status st;
  {
    py::gil_scoped_release release;
    st = SaveCheckpoint(path, tensors);
  }
  ThrowIfError(st);
}

py::list LoadCheckpointArrays(const std::string& path) {
  absl::StatusOr<NamedTensors> loaded;
  {
    py::gil_scoped_release release;
    loaded = LoadCheckpoint(path);
  }
  ThrowIfError(loaded.status());
  py::list out;
  for (auto& [name, tensor] : *loaded) {
    out.append(py::make_tuple(name, TensorToArray(std::move(tensor))));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_shardflow, m) {
  m.doc() = "shardflow's C++ engine; use the `shardflow` package instead of this module.";
  RegisterStatusErrors(m);
  RegisterGraphBindings(m);
  RegisterSessionBindings(m);
  RegisterServerBindings(m);
  m.def("load_fashion_mnist", &LoadFashionMnistArrays, py::arg("dir") = "",
        py::arg("split") = "train");
  m.attr("DEFAULT_FASHION_MNIST_DIR") = std::string(kDefaultFashionMnistDir);
  m.def(
      "crc32c",
      [](py::buffer data) {
        py::buffer_info info = data.request();
        const size_t n = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
        py::gil_scoped_release release;
        return Crc32c(static_cast<const uint8_t*>(info.ptr), n);
      },
      py::arg("data"), "The CRC32C (Castagnoli) of a bytes-like object (TFRecord checksums).");
  m.def(
      "string_hash64",
      [](const py::bytes& data, const std::string& kind, uint64_t k0, uint64_t k1) {
        std::string s(data);
        if (kind == "fast") return Fingerprint64(s);
        if (kind == "legacy") return LegacyHash64(s);
        if (kind == "strong") return StrongKeyedHash64(k0, k1, s);
        throw py::value_error("string_hash64: kind is fast, legacy or strong, not " + kind);
      },
      py::arg("data"), py::arg("kind") = "fast", py::arg("k0") = 0, py::arg("k1") = 0,
      "TensorFlow's 64-bit string hashes: 'fast' FarmHash Fingerprint64, 'legacy' Hash64, "
      "'strong' SipHash-2-4 keyed by (k0, k1) (feature crosses, vocabulary buckets).");
  m.def("save_checkpoint", &SaveCheckpointArrays, py::arg("path"), py::arg("items"));
  m.def("load_checkpoint", &LoadCheckpointArrays, py::arg("path"));
  m.def("_raise_status", [](int code, const std::string& message) {
    // Test hook: raises the exception a status of this code becomes.
    ThrowIfError(absl::Status(static_cast<absl::StatusCode>(code), message));
  });
}

}  // namespace python
}  // namespace shardflow
