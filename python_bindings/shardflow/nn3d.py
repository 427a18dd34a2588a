"""3-D convolution and pooling over NDHWC volumes ([batch, depth, height, width, channels]):
tf.nn.conv3d, conv3d_transpose, max_pool3d and avg_pool3d (C++ ops Conv3D, Conv3DBackpropInputV2,
MaxPool3D, AvgPool3D, all differentiable).

Example::

    x = sf.placeholder(sf.float32, [None, 16, 32, 32, 1])
    w = sf.get_variable("w", [3, 3, 3, 1, 8])
    h = sf.nn.relu(sf.nn.conv3d(x, w, strides=[1, 1, 1, 1, 1], padding="SAME"))
    p = sf.nn.max_pool3d(h, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="VALID")
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.ops import _out


def _five(v, what, default=None):
    """An int, [d, h, w] or [1, d, h, w, 1] as the 5-element form."""
    if v is None:
        if default is None:
            raise ValueError("%s is required" % what)
        v = default
    if isinstance(v, (int, np.integer)):
        return [1, int(v), int(v), int(v), 1]
    v = [int(e) for e in v]
    if len(v) == 3:
        return [1] + v + [1]
    if len(v) == 5:
        return v
    raise ValueError("%s takes an int, [d, h, w] or [1, d, h, w, 1], not %r" % (what, v))


def _padding(p):
    if not isinstance(p, str) or p.upper() not in ("SAME", "VALID"):
        raise ValueError("padding must be 'SAME' or 'VALID', not %r" % (p,))
    return p.upper()


def _ndhwc(data_format, what):
    if data_format not in (None, "NDHWC"):
        raise ValueError(
            "%s(data_format=%r): shardflow's CPU kernels take NDHWC only; give NDHWC input (from "
            "NCDHW: sf.transpose(x, [0, 2, 3, 4, 1])) and leave data_format out or 'NDHWC'"
            % (what, data_format))


def conv3d(input, filter=None, strides=None, padding=None,  # noqa: A002
           data_format="NDHWC", dilations=None, name=None, filters=None):
    """TF1's tf.nn.conv3d: NDHWC `input` with a [d, h, w, in, out] `filter`; `strides` and
    `dilations` are [1, d, h, w, 1] (or an int, or [d, h, w]); padding 'SAME' or 'VALID'."""
    filter = filter if filter is not None else filters  # noqa: A001
    if filter is None or padding is None:
        raise ValueError("conv3d needs input, filter, strides and padding")
    _ndhwc(data_format, "conv3d")
    return _out("Conv3D", [input, filter],
                {"strides": _five(strides, "strides"), "padding": _padding(padding),
                 "dilations": _five(dilations, "dilations", 1)}, name)


def conv3d_transpose(value, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """TF1's tf.nn.conv3d_transpose (the gradient of conv3d with respect to its input, used to
    upsample volumes): `value` [N, d, h, w, in] with `filter` [kd, kh, kw, out, in] to
    `output_shape` [N, D, H, W, out] (a list or an int32 tensor)."""
    filter = filter if filter is not None else filters  # noqa: A001
    value = value if value is not None else input
    if filter is None or output_shape is None or strides is None:
        raise ValueError("conv3d_transpose needs value, filter, output_shape and strides")
    _ndhwc(data_format, "conv3d_transpose")
    static = None
    if not isinstance(output_shape, ops.Tensor):
        parts = list(output_shape)
        if any(isinstance(p, ops.Tensor) for p in parts):
            if len(parts) == 5 and not any(isinstance(p, ops.Tensor) for p in parts[1:]):
                static = [-1] + [int(p) for p in parts[1:]]
            output_shape = array_ops.stack([
                ops.cast(p, dtypes.int32) if isinstance(p, ops.Tensor)
                else ops.constant(int(p), dtype=dtypes.int32) for p in parts])
        else:
            output_shape = np.asarray(parts, np.int32)
    y = _out("Conv3DBackpropInputV2", [output_shape, filter, value],
             {"strides": _five(strides, "strides"), "padding": _padding(padding),
              "dilations": _five(dilations, "dilations", 1)}, None if static else name)
    # A batch known only at run time: keep the known dimensions in the static shape.
    return ops.reshape(y, static, name=name) if static else y


def _pool3d(op, what, input, ksize, strides, padding, data_format, name):  # noqa: A002
    _ndhwc(data_format, what)
    return _out(op, [input], {"ksize": _five(ksize, "ksize"),
                              "strides": _five(strides, "strides"),
                              "padding": _padding(padding)}, name)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """TF1's tf.nn.max_pool3d: `ksize` and `strides` [1, d, h, w, 1] (or an int, or [d, h, w])."""
    return _pool3d("MaxPool3D", "max_pool3d", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """TF1's tf.nn.avg_pool3d; padded positions are not counted in a window's mean."""
    return _pool3d("AvgPool3D", "avg_pool3d", input, ksize, strides, padding, data_format, name)
