// Data-flow ops that several steps (and several workers' graphs) share through a named resource
// on one device: gradient accumulators and FIFO queues, with TensorFlow 1.x's names and attrs
// (tf.raw_ops.ResourceConditionalAccumulator, FIFOQueueV2, ...). Synchronous parameter-server
// training (sf.train.SyncReplicasOptimizer) is built from them: each worker adds its gradient to
// an accumulator on the variable's ps task, the chief takes the average of the first N fresh ones
// and applies it, and hands every worker a token from a queue so that none runs ahead.
//
// Like a variable, each is named by a handle (a string scalar holding its shared name); the ops
// that use it take the handle as input and run on its device (partitioner/placer.cc).
//
// Differences from TensorFlow, all deliberate: a FIFOQueueV2 holds one tensor per element (one
// component: `dtype`, `shape`), an enqueue beyond `capacity` fails instead of waiting, and
// ResourceAccumulatorApplyGradient takes an optional `source` attr naming the worker, so that a
// chief waiting for gradients can say whose are missing.
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"

namespace shardflow {
namespace {

absl::Status HandleIsScalar(InferenceContext* c) {
  if (c->input(0).rank() > 0) return c->InvalidArgument("the resource handle must be a scalar");
  return absl::OkStatus();
}

// What a take or dequeue outputs is known only when it runs.
absl::Status UnknownAfterHandle(InferenceContext* c) {
  SF_RETURN_IF_ERROR(HandleIsScalar(c));
  c->set_output(0, TensorShape::Unknown());
  return absl::OkStatus();
}

absl::Status ScalarAfterHandle(InferenceContext* c) {
  SF_RETURN_IF_ERROR(HandleIsScalar(c));
  return ScalarShape(c);
}

}  // namespace

REGISTER_OP("ResourceConditionalAccumulator")
    .Output("handle: string")
    .Attr("dtype: {float, double}")
    .Attr("shape: shape")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("reduction_type: string = 'MEAN'")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc(
        "A handle to the gradient accumulator `shared_name` (the node name when empty), created "
        "on first use: it sums the gradients applied to it since the last take, dropping those "
        "computed for an older global step, and hands out their MEAN (or SUM).");

REGISTER_OP("ResourceAccumulatorApplyGradient")
    .Input("handle: string")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: {float, double}")
    .Attr("source: string = ''")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc(
        "Adds `gradient` to the accumulator unless `local_step` is older than its global step "
        "(then it is counted as stale and dropped). `source` names the sender in the messages "
        "of a chief waiting for gradients (e.g. '/job:worker/task:1').");

REGISTER_OP("ResourceAccumulatorTakeGradient")
    .Input("handle: string")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: {float, double}")
    .SetIsStateful()
    .SetShapeFn(UnknownAfterHandle)
    .Doc(
        "Waits until `num_required` fresh gradients were applied, then outputs their mean (or "
        "sum), empties the accumulator and advances its global step by one.");

REGISTER_OP("ResourceAccumulatorSetGlobalStep")
    .Input("handle: string")
    .Input("new_global_step: int64")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc(
        "Sets the accumulator's global step (gradients for older steps are dropped from now on), "
        "empties it and reopens it if it was closed: how a chief (re)starts synchronous "
        "training.");

REGISTER_OP("ResourceAccumulatorNumAccumulated")
    .Input("handle: string")
    .Output("num_accumulated: int32")
    .SetIsStateful()
    .SetShapeFn(ScalarAfterHandle)
    .Doc("How many fresh gradients the accumulator holds.");

REGISTER_OP("ResourceAccumulatorNumDropped")
    .Input("handle: string")
    .Output("num_dropped: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarAfterHandle)
    .Doc("How many stale gradients the accumulator has dropped since it was created.");

REGISTER_OP("ResourceAccumulatorClose")
    .Input("handle: string")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc(
        "Closes the accumulator: takes waiting now and later fail with CANCELLED and gradients "
        "are dropped, until ResourceAccumulatorSetGlobalStep reopens it.");

REGISTER_OP("FIFOQueueV2")
    .Output("handle: string")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc(
        "A handle to the first-in first-out queue `shared_name` (the node name when empty) of "
        "tensors of `dtype` and `shape`, created on first use; `capacity` elements at most (-1: "
        "no bound).");

REGISTER_OP("QueueEnqueueV2")
    .Input("handle: string")
    .Input("component: T")
    .Attr("T: type")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc(
        "Appends one element, waiting for room when the queue is full (up to timeout_ms, -1: no "
        "bound). Errors: the queue is closed (also while waiting), or of another dtype.");

REGISTER_OP("QueueEnqueueManyV2")
    .Input("handle: string")
    .Input("components: T")
    .Attr("T: type")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc(
        "Appends each slice of `components` along dimension 0 as one element, all at once, "
        "waiting for room as QueueEnqueueV2; more slices than the capacity are an error.");

REGISTER_OP("QueueDequeueV2")
    .Input("handle: string")
    .Output("component: T")
    .Attr("T: type")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(UnknownAfterHandle)
    .Doc(
        "Removes and outputs the first element, waiting for one. Error OUT_OF_RANGE once the "
        "queue is closed and empty.");

REGISTER_OP("QueueSizeV2")
    .Input("handle: string")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(ScalarAfterHandle)
    .Doc("The number of elements in the queue.");

REGISTER_OP("QueueCloseV2")
    .Input("handle: string")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc("Closes the queue: enqueues fail, dequeues get what is left, then OUT_OF_RANGE.");

REGISTER_NO_GRADIENT("ResourceConditionalAccumulator");
REGISTER_NO_GRADIENT("ResourceAccumulatorApplyGradient");
REGISTER_NO_GRADIENT("ResourceAccumulatorTakeGradient");
REGISTER_NO_GRADIENT("ResourceAccumulatorSetGlobalStep");
REGISTER_NO_GRADIENT("ResourceAccumulatorNumAccumulated");
REGISTER_NO_GRADIENT("ResourceAccumulatorNumDropped");
REGISTER_NO_GRADIENT("ResourceAccumulatorClose");
REGISTER_NO_GRADIENT("FIFOQueueV2");
REGISTER_NO_GRADIENT("QueueEnqueueV2");
REGISTER_NO_GRADIENT("QueueEnqueueManyV2");
REGISTER_NO_GRADIENT("QueueDequeueV2");
REGISTER_NO_GRADIENT("QueueSizeV2");
REGISTER_NO_GRADIENT("QueueCloseV2");

}  // namespace shardflow
