// LoadFashionMnist: the Fashion-MNIST image set (Zalando; 28x28 grey images in 10 classes).
//
//   SF_ASSIGN_OR_RETURN(Dataset train, LoadFashionMnist());                 // 60000 examples
//   SF_ASSIGN_OR_RETURN(Dataset test, LoadFashionMnist("", Split::kTest));  // 10000 examples
//
// The directory must hold the four files of the distribution, gzipped or not (the names without
// ".gz" are tried too): train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte. Debian's `dataset-fashion-mnist` package
// installs them into kDefaultFashionMnistDir.
//
// Images are float [N,784] scaled to [0,1] (pixel / 255), one contiguous buffer; labels are
// int32 [N] in [0,10); example_shape is [28,28,1].
//
// Thread safety: may be called from any thread.
#ifndef SHARDFLOW_DATASETS_FASHION_MNIST_H_
#define SHARDFLOW_DATASETS_FASHION_MNIST_H_

#include <string>

#include "absl/status/statusor.h"
#include "datasets/dataset.h"

namespace shardflow {

inline constexpr char kDefaultFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;

enum class Split { kTrain, kTest };

// Loads one split from `dir` (kDefaultFashionMnistDir when empty). A missing file gives a
// NotFound error that says how to install the data set; malformed files give the errors of
// ReadIdxFile, and images and labels of different counts or shapes are errors too.
absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir = kDefaultFashionMnistDir,
                                         Split split = Split::kTrain);

}  // namespace shardflow

#endif  // SHARDFLOW_DATASETS_FASHION_MNIST_H_
