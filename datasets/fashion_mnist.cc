#include "datasets/fashion_mnist.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "datasets/idx_reader.h"

namespace shardflow {
namespace {

constexpr int64_t kSide = 28;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The path of `stem` in `dir`, gzipped or not, or a NotFound error that says what to do.
absl::StatusOr<std::string> FindFile(const std::string& dir, const std::string& stem) {
  const std::string base = absl::StrCat(dir, "/", stem);
  for (const std::string& candidate : {absl::StrCat(base, ".gz"), base}) {
    if (FileExists(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(
      "Fashion-MNIST file '", base, ".gz' not found (nor '", base,
      "'). Install Debian's dataset-fashion-mnist package (apt-get install "
      "dataset-fashion-mnist), which puts the four files in ",
      kDefaultFashionMnistDir,
      ", or pass the directory that holds train-images-idx3-ubyte.gz, "
      "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz"));
}

}  // namespace

absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir_arg, Split split) {
  const std::string dir = dir_arg.empty() ? std::string(kDefaultFashionMnistDir) : dir_arg;
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  SF_ASSIGN_OR_RETURN(std::string images_path,
                      FindFile(dir, absl::StrCat(prefix, "-images-idx3-ubyte")));
  SF_ASSIGN_OR_RETURN(std::string labels_path,
                      FindFile(dir, absl::StrCat(prefix, "-labels-idx1-ubyte")));
  SF_ASSIGN_OR_RETURN(Tensor pixels, ReadIdxFile(images_path));
  SF_ASSIGN_OR_RETURN(Tensor classes, ReadIdxFile(labels_path));

  if (pixels.dtype() != DT_UINT8 || pixels.dims() != 3 || pixels.dim_size(1) != kSide ||
      pixels.dim_size(2) != kSide) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Fashion-MNIST images '", images_path, "' must be unsigned bytes [N,28,28]; ",
        "the file holds ", DataTypeString(pixels.dtype()), " ", pixels.shape().DebugString()));
  }
  if (classes.dtype() != DT_UINT8 || classes.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Fashion-MNIST labels '", labels_path, "' must be unsigned bytes [N]; ", "the file holds ",
        DataTypeString(classes.dtype()), " ", classes.shape().DebugString()));
  }
  const int64_t n = pixels.dim_size(0);
  if (classes.dim_size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat("Fashion-MNIST '", images_path, "' holds ", n,
                                                   " images but '", labels_path, "' holds ",
                                                   classes.dim_size(0), " labels"));
  }

  Dataset out;
  out.example_shape = TensorShape({kSide, kSide, 1});
  out.num_classes = kFashionMnistClasses;
  SF_ASSIGN_OR_RETURN(out.images,
                      Tensor::Create(CpuAllocator(), DT_FLOAT, TensorShape({n, kSide * kSide})));
  SF_ASSIGN_OR_RETURN(out.labels, Tensor::Create(CpuAllocator(), DT_INT32, TensorShape({n})));
  const uint8_t* in = pixels.data<uint8_t>();
  float* image = out.images.data<float>();
  float scaled[256];  // pixel / 255, so that 255 maps to exactly 1
  for (int v = 0; v < 256; ++v) scaled[v] = v / 255.0f;
  for (int64_t i = 0; i < pixels.NumElements(); ++i) image[i] = scaled[in[i]];
  const uint8_t* label_in = classes.data<uint8_t>();
  int32_t* label = out.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (label_in[i] >= kFashionMnistClasses) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Fashion-MNIST labels '", labels_path, "': label of example ", i, " is ",
          static_cast<int>(label_in[i]), "; labels must be in [0, ", kFashionMnistClasses, ")"));
    }
    label[i] = label_in[i];
  }
  return out;
}

}  // namespace shardflow
