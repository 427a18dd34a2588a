"""The floating-point operations of one graph op, as TF 1.15's tf.profiler counts them: from the
static shapes of the op's inputs and outputs, with TF's per-op formulas (its flops registry,
tensorflow/python/profiler/internal/flops_registry.py, and the MatMul / Conv2D statistics).

Example::

    flops = op_flops(matmul_op)      # 2 * M * N * K for a [M, K] @ [K, N] MatMul
    flops = op_flops(relu_op)        # None: TF registers no FLOPs for Relu

What is counted (an op of another type counts nothing, as in TF):

- MatMul: 2 * K * (elements of the output) (K from transpose_a and the first input).
- Conv2D: 2 * (elements of the output) * in_channels * filter_height * filter_width;
  DepthwiseConv2dNative: 2 * (elements of the output) * filter_height * filter_width;
  Conv2DBackpropInput / Conv2DBackpropFilter: TF's formulas (divided by the strides).
  Conv3D (not in TF's registry; counted as Conv2D is): 2 * (elements of the output) *
  in_channels * filter_depth * filter_height * filter_width.
- MaxPool / AvgPool (and 3-D): window area * (elements of the output); AvgPoolGrad: window area
  * (elements of the gradient in); MaxPoolGrad: window area * (elements of the pooled output)
  + (elements of the gradient in).
- BiasAdd: the elements of the input.
- Element-wise, per element of the output: Add, AddV2, Sub, Mul, RealDiv (and shardflow's
  Div, which is TF's RealDiv for floats), Maximum, Minimum, Pow, RsqrtGrad, Greater,
  GreaterEqual, Less, LessEqual, Equal, NotEqual: 1; SquaredDifference: 2.
- Per element of the first input: Reciprocal, Square, Log, Neg, AssignAdd, AssignSub: 1;
  Rsqrt: 2; Softmax: 5; L2Loss: 3 per element - 1.
- Reductions over the first input: Mean (its elements), Sum, ArgMax, ArgMin, BiasAddGrad (its
  elements minus the output's); AddN: (inputs - 1) * (elements of the first).

Relu, Sigmoid, Tanh and the other activations count 0 (TF registers nothing for them). An op
whose shapes are not all known when the graph is built (an unknown batch dimension) is skipped:
op_flops raises IncompleteShapeError, as TF's registry raises ValueError and the profiler then
leaves the op out (shapes from a traced RunMetadata fill them in: shardflow/profiler_model.py;
propagate_shapes carries them through the ops a traced step does not record).
"""

import numpy as np


class IncompleteShapeError(ValueError):
    """An input or output shape the formula needs is not fully known."""


def _dims(shape):
    """The shape as a list of ints; IncompleteShapeError when a dimension is unknown."""
    if shape is None or None in shape:
        raise IncompleteShapeError("incomplete shape %s" % (shape,))
    return [int(d) for d in shape]


def _count(shape):
    return int(np.prod(_dims(shape), dtype=np.int64))


def _attr(op, name, default=None):
    try:
        return op.get_attr(name)
    except ValueError:
        return default


class _Shapes:
    """The static shapes of one op's inputs and outputs (lists with None for an unknown
    dimension, None for an unknown rank); `known` overrides them by tensor name."""

    def __init__(self, op, known=None):
        self._op = op
        self._known = known or {}

    def _of(self, tensor):
        shape = self._known.get(tensor.name)
        if shape is not None:
            return shape
        return tensor.shape.as_list() if tensor.shape.ndims is not None else None

    def input(self, i):
        inputs = self._op.inputs
        if i >= len(inputs):
            raise IncompleteShapeError("op %s has no input %d" % (self._op.name, i))
        return self._of(inputs[i])

    def output(self, i=0):
        outputs = self._op.outputs
        if i >= len(outputs):
            raise IncompleteShapeError("op %s has no output %d" % (self._op.name, i))
        return self._of(outputs[i])

    def num_inputs(self):
        return len(self._op.inputs)


def _matmul(op, s):
    a = _dims(s.input(0))
    k = a[-2] if _attr(op, "transpose_a", False) else a[-1]
    return 2 * k * _count(s.output())


def _conv(op, s):
    kernel = _dims(s.input(1))   # [filter spatial dims..., in_channels, out_channels]
    return 2 * _count(s.output()) * int(np.prod(kernel[:-1], dtype=np.int64))


def _depthwise(op, s):
    kernel = _dims(s.input(1))   # [height, width, in_channels, multiplier]
    return 2 * _count(s.output()) * kernel[0] * kernel[1]


def _strides_product(op):
    strides = list(_attr(op, "strides", [1, 1, 1, 1]))
    return int(np.prod(strides[1:-1], dtype=np.int64)) or 1


def _conv_backprop_input(op, s):
    out = _dims(s.output())
    kernel = _dims(s.input(1))
    return 2 * _count(out) * int(np.prod(kernel, dtype=np.int64)) // (
        out[-1] * _strides_product(op))


def _conv_backprop_filter(op, s):
    out = _dims(s.output())
    image = _dims(s.input(0))
    return 2 * _count(image) * _count(out) // (image[-1] * _strides_product(op))


def _window(op):
    return int(np.prod(list(_attr(op, "ksize", [1])), dtype=np.int64))


def _pool(op, s):
    return _window(op) * _count(s.output())


def _avg_pool_grad(op, s):
    return _window(op) * _count(s.input(1))


def _max_pool_grad(op, s):
    return _window(op) * _count(s.input(1)) + _count(s.input(2))


def _per_output(n):
    return lambda op, s: n * _count(s.output())


def _per_input(n):
    return lambda op, s: n * _count(s.input(0))


def _reduction(reduce_flops, finalize_flops):
    def flops(op, s):
        n_in, n_out = _count(s.input(0)), _count(s.output())
        return n_in * reduce_flops + n_out * (finalize_flops - reduce_flops)
    return flops


def _add_n(op, s):
    return _count(s.input(0)) * (s.num_inputs() - 1)


_FLOPS = {
    "MatMul": _matmul,
    "Conv2D": _conv,
    "Conv3D": _conv,
    "DepthwiseConv2dNative": _depthwise,
    "Conv2DBackpropInput": _conv_backprop_input,
    "Conv2DBackpropFilter": _conv_backprop_filter,
    "MaxPool": _pool, "AvgPool": _pool, "MaxPool3D": _pool, "AvgPool3D": _pool,
    "AvgPoolGrad": _avg_pool_grad,
    "MaxPoolGrad": _max_pool_grad,
    "BiasAdd": _per_input(1),
    "Reciprocal": _per_input(1), "Square": _per_input(1), "Log": _per_input(1),
    "Neg": _per_input(1), "AssignAdd": _per_input(1), "AssignSub": _per_input(1),
    "Rsqrt": _per_input(2), "Softmax": _per_input(5),
    "L2Loss": lambda op, s: _count(s.input(0)) * 3 - 1,
    "Mean": _reduction(1, 1), "Sum": _reduction(1, 0), "ArgMax": _reduction(1, 0),
    "ArgMin": _reduction(1, 0), "BiasAddGrad": _reduction(1, 0),
    "AddN": _add_n,
    "SquaredDifference": _per_output(2),
}
for _name in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow",
              "RsqrtGrad", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual"):
    _FLOPS[_name] = _per_output(1)


# Ops whose output has the shape of their first input, and element-wise ops that broadcast.
_SAME_SHAPE = {"BiasAdd", "Relu", "Relu6", "Elu", "Selu", "Sigmoid", "Tanh", "Softplus",
               "Softsign", "Identity", "Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log",
               "Reciprocal", "Abs", "Softmax", "LogSoftmax", "Cast", "StopGradient"}
_BROADCAST = {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow",
              "SquaredDifference"}


def _broadcast(a, b):
    if len(a) < len(b):
        a, b = b, a
    b = [1] * (len(a) - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out


def _inferred(op, s):
    """The output shape of `op` from its inputs' known shapes, or None."""
    try:
        if op.type in _SAME_SHAPE:
            return _dims(s.input(0))
        if op.type in _BROADCAST:
            return _broadcast(_dims(s.input(0)), _dims(s.input(1)))
        if op.type == "MatMul":
            a, b = _dims(s.input(0)), _dims(s.input(1))
            rows = a[-1] if _attr(op, "transpose_a", False) else a[-2]
            cols = b[-2] if _attr(op, "transpose_b", False) else b[-1]
            return [rows, cols]
    except IncompleteShapeError:
        return None
    return None


def propagate_shapes(ops, known):
    """Fills `known` ({tensor name: [dims]}, e.g. the shapes a traced step recorded) with the
    first outputs of `ops` (in graph order) whose static shapes are incomplete and whose
    shapes follow from their inputs' (element-wise ops, BiasAdd, MatMul): what a traced step
    does not record for ops the engine fused into one kernel."""
    for op in ops:
        if not op.outputs:
            continue
        out = op.outputs[0]
        if out.name in known or (out.shape.ndims is not None and out.shape.is_fully_defined()):
            continue
        shape = _inferred(op, _Shapes(op, known))
        static = out.shape.as_list() if out.shape.ndims is not None else None
        if shape is not None and (static is None or (
                len(static) == len(shape)
                and all(d is None or d == e for d, e in zip(static, shape)))):
            known[out.name] = shape
    return known


def counted_op_types():
    """The op types with a FLOPs formula, sorted."""
    return sorted(_FLOPS)


def op_flops(op, known_shapes=None):
    """The FLOPs of graph op `op` (an sf.Operation) by TF's formula for its type, or None when
    its type has none. IncompleteShapeError when a shape the formula needs is unknown.
    `known_shapes` ({tensor name: [dims]}) overrides the graph's static shapes."""
    formula = _FLOPS.get(op.type)
    if formula is None:
        return None
    if op.type == "Div" and op.outputs and not op.outputs[0].dtype.is_floating:
        return None   # integer Div is TF1's floor division, which TF does not count
    return int(formula(op, _Shapes(op, known_shapes)))


__all__ = ["IncompleteShapeError", "counted_op_types", "op_flops", "propagate_shapes"]
