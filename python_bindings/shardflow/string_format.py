"""tf.strings.format (TF 1.15): a string scalar made of a template whose placeholders are
replaced by tensors printed as TensorFlow prints them (Tensor::SummarizeValue in TF's
print_v2 layout, which tf.print uses too).

Example::

    s = sf.strings.format("x: {}, n: {}", [sf.range(10), 3])
    sess.run(s)      # b'x: [0 1 2 ... 7 8 9], n: 3'

A tensor prints as nested brackets, elements separated by a space (rows by a newline and an
indent), with `summarize` elements at each end of every dimension and "..." between them when
a dimension has more than 2 * summarize (summarize=-1 prints everything). Elements print as TF's
StrCat does: integers in decimal, bools as 1 / 0, float32 with the shortest of 6 or 9
significant digits that reads back the same (float64: 15 or 17), strings as they are. A PyFunc
node (shardflow/script_ops.py): it runs in the client process.
"""

import numpy as np

from shardflow import dtypes
from shardflow.framework import Tensor, convert_to_tensor
from shardflow.script_ops import py_func


def _float_text(value, digits, retry_digits, np_type):
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = "%.*g" % (digits, value)
    if np_type(float(text)) != np_type(value):
        text = "%.*g" % (retry_digits, value)
    return text


def _element_text(value):
    """One element as TF's StrCat (AlphaNum) writes it, as bytes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bool, np.bool_)):
        return b"1" if value else b"0"
    if isinstance(value, (np.floating, float)):
        if isinstance(value, np.float64) or type(value) is float:
            return _float_text(float(value), 15, 17, np.float64).encode()
        return _float_text(float(value), 6, 9, np.float32).encode()
    return str(int(value)).encode()


def _dim_spacing(dim, num_dims, out):
    if dim == num_dims - 1:
        out.append(b" ")
        return
    out.append(b"\n" * (num_dims - dim - 1) + b" " * (dim + 1))


def _print_dim(array, dim, at_ends, index, out):
    """TF's PrintOneDimV2: dimension `dim` of `array` from the element prefix `index`."""
    if dim == array.ndim:
        out.append(_element_text(array[index]))
        return
    out.append(b"[")
    count = array.shape[dim]
    for i in range(min(at_ends, count)):
        if i > 0:
            _dim_spacing(dim, array.ndim, out)
        _print_dim(array, dim + 1, at_ends, index + (i,), out)
    if count > 2 * at_ends:
        _dim_spacing(dim, array.ndim, out)
        out.append(b"...")
    for i in range(max(at_ends, count - at_ends), count):
        _dim_spacing(dim, array.ndim, out)
        _print_dim(array, dim + 1, at_ends, index + (i,), out)
    out.append(b"]")


def summarize_value(array, summarize=3):
    """`array` as TF's Tensor::SummarizeValue(summarize, print_v2=True) writes it (bytes)."""
    array = np.asarray(array)
    if array.dtype == np.float16:
        array = array.astype(np.float32)
    limit = array.size if summarize < 0 else min(int(summarize), array.size)
    if array.ndim == 0:
        text = _element_text(array[()]) if limit > 0 else b""
        return text + (b"..." if array.size > limit else b"")
    out = []
    _print_dim(array, 0, limit, (), out)
    return b"".join(out)


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """A string scalar: `template` with each `placeholder` replaced, in order, by one of
    `inputs` (a tensor or a list of them) printed by summarize_value. ValueError when the
    numbers of placeholders and inputs differ."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    if not placeholder:
        raise ValueError("strings.format: placeholder must not be empty")
    pieces = template.split(placeholder)
    if len(inputs) != len(pieces) - 1:
        raise ValueError("num placeholders in template and num inputs must match: {} vs {}"
                         .format(len(pieces) - 1, len(inputs)))
    tensors = [convert_to_tensor(x) for x in inputs]
    encoded = [p.encode() for p in pieces]

    def run(*values):
        out = [encoded[0]]
        for value, piece in zip(values, encoded[1:]):
            out.append(summarize_value(value, summarize))
            out.append(piece)
        return np.array(b"".join(out), dtype=object)

    if not tensors:
        from shardflow import ops
        return ops.constant(template.encode(), dtype=dtypes.string, name=name)
    result = py_func(run, tensors, dtypes.string, stateful=False, name=name or "StringFormat")
    result.set_shape([])
    return result


__all__ = ["string_format", "summarize_value"]
