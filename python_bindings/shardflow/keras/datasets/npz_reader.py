"""Reads the .npz files Keras's data sets come in (imdb.npz, reuters.npz, boston_housing.npz)
without trusting them. An .npz is a ZIP archive of .npy arrays; an array of Python objects
(IMDB's and Reuters' lists of word indices) is stored as a pickle, and np.load(...,
allow_pickle=True) would run whatever that pickle names. Here a pickle may name only the
NumPy classes an array is rebuilt from; anything else is refused before it is imported.

Example::

    arrays = read_npz(path, "the IMDB data", objects=True)   # {"x_train": ..., ...}
"""

import pickle
import zipfile

import numpy as np


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles an object array as np.save wrote it: the array, its dtype and NumPy scalars
    may be named; lists, tuples, numbers and strings need no names. Any other class or
    function (os.system, ...) is refused."""

    _ALLOWED = {(module, name)
                for module in ("numpy.core.multiarray", "numpy._core.multiarray")
                for name in ("_reconstruct", "scalar")} | {("numpy", "ndarray"),
                                                           ("numpy", "dtype")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError("it names %s.%s, which an array of lists does not"
                                         % (module, name))
        if module == "numpy._core.multiarray":   # written by NumPy 2
            module = "numpy.core.multiarray"
        return super().find_class(module, name)


def _read_npy(f, objects):
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError("an .npy of format version %d.%d, which Keras's data do not use"
                         % version)
    if not dtype.hasobject:
        count = int(np.prod(shape, dtype=np.int64))
        data = f.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize:
            raise ValueError("an .npy array shorter than its header says")
        order = "F" if fortran_order else "C"
        return np.frombuffer(data, dtype=dtype).reshape(shape, order=order).copy()
    if not objects:
        raise ValueError("an array of Python objects, where numbers are expected")
    array = _ArrayUnpickler(f, encoding="latin1").load()
    if not isinstance(array, np.ndarray) or array.shape != tuple(shape):
        raise ValueError("an object array whose pickle does not hold an array of shape %s"
                         % (tuple(shape),))
    return array


def read_npz(path, what, objects=False):
    """{name: array} of the .npz file at `path` (`what` names the data in errors). Arrays
    of Python objects are read only when `objects` is True, through _ArrayUnpickler. A
    file that is not an .npz of .npy arrays raises ValueError saying why."""
    if not zipfile.is_zipfile(path):
        raise ValueError("%s is not %s: not an .npz (ZIP) archive" % (path, what))
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                raise ValueError("%s is not %s: it holds %r, not an .npy array"
                                 % (path, what, member))
            with archive.open(member) as f:
                try:
                    arrays[member[:-len(".npy")]] = _read_npy(f, objects)
                except (pickle.UnpicklingError, EOFError, ValueError, TypeError,
                        AttributeError, IndexError) as e:
                    raise ValueError("%s is not %s: %s holds %s" % (path, what, member, e)) \
                        from None
    return arrays


def require(arrays, names, path, what):
    """The arrays `names` of read_npz's result, in that order; a missing one raises
    ValueError."""
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError("%s is not %s: it has no %s (it has %s)"
                         % (path, what, ", ".join(missing), ", ".join(sorted(arrays)) or
                            "nothing"))
    return [arrays[n] for n in names]
