"""Small helpers of TF1's training_util and input modules that sit beside tf.train's global
step: assert_global_step, and maybe_batch (tf.train.batch with a keep_input predicate).

Example::

    sf.train.assert_global_step(sf.train.get_or_create_global_step())   # passes
"""


def assert_global_step(global_step_tensor):
    """TypeError unless `global_step_tensor` is a scalar integer Variable or tensor (a global
    step)."""
    from shardflow.framework import Tensor
    from shardflow.variables import Variable
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError("Existing \"global_step\" must be a Variable or Tensor: %s."
                        % (global_step_tensor,))
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError("Existing \"global_step\" does not have integer type: %s"
                        % global_step_tensor.dtype)
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError("Existing \"global_step\" is not scalar: %s" % shape)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """tf.train.batch when `keep_input` is the Python bool True; other predicates (a boolean
    tensor, to drop examples) are not supported yet: NotImplementedError says so."""
    from shardflow.queue_ops import batch
    if keep_input is not True:
        raise NotImplementedError("maybe_batch: only keep_input=True is supported (use "
                                  "sf.train.batch, filtering the input first)")
    return batch(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                 allow_smaller_final_batch, shared_name, name)


__all__ = ["assert_global_step", "maybe_batch"]
