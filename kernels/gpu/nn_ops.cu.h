// Launchers of the neural-network CUDA kernels (kernels/gpu/nn_ops.cu): Softmax, LogSoftmax, the
// two softmax cross-entropies and BiasAdd, all over rows of the last dimension. Conventions as in
// gpu_launchers.h: plain pointers, int64 counts, a stream; each launcher enqueues its kernel and
// returns cudaGetLastError(); nothing is launched when there is no row.
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_NN_OPS_CU_H_
#define SHARDFLOW_KERNELS_GPU_NN_OPS_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

// out[r, :] = softmax(logits[r, :]) (or its logarithm when `log`) for `rows` rows of `classes`
// >= 1 entries; the row's maximum is subtracted before exponentiating. out must not overlap
// logits.
cudaError_t LaunchSoftmax(const float* logits, float* out, int64_t rows, int64_t classes, bool log,
                          cudaStream_t stream);

// Per row r of features and labels ([rows, classes], classes >= 1):
//   loss[r] = sum_k labels[r, k] * (log(sum_j exp(x_j - max)) - (x_k - max)),
//   backprop[r, k] = softmax(features[r, :])_k - labels[r, k].
cudaError_t LaunchSoftmaxXent(const float* features, const float* labels, float* loss,
                              float* backprop, int64_t rows, int64_t classes, cudaStream_t stream);

// As LaunchSoftmaxXent with one-hot labels given as class indices (device memory, each in
// [0, classes): the caller checks; a row whose label is not gets a NaN loss).
cudaError_t LaunchSparseSoftmaxXent(const float* features, const int32_t* labels, float* loss,
                                    float* backprop, int64_t rows, int64_t classes,
                                    cudaStream_t stream);
cudaError_t LaunchSparseSoftmaxXent(const float* features, const int64_t* labels, float* loss,
                                    float* backprop, int64_t rows, int64_t classes,
                                    cudaStream_t stream);

// out[r, k] = value[r, k] + bias[k] for `rows` rows of `channels` >= 1 entries. out may equal
// value.
cudaError_t LaunchBiasAdd(const float* value, const float* bias, float* out, int64_t rows,
                          int64_t channels, cudaStream_t stream);

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_NN_OPS_CU_H_
