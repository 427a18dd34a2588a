"""tf.keras.utils: to_categorical, normalize, Sequence, Progbar, and custom_object_scope /
CustomObjectScope / get_custom_objects (names load_model and activations.get look up).

Example: ``keras.utils.to_categorical([0, 2], 3)`` -> [[1, 0, 0], [0, 0, 1]] (float32).
"""

import os

import numpy as np


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for the class indices `y` (any shape; a trailing dimension of 1 is
    dropped, as Keras does); `num_classes` defaults to max(y) + 1."""
    y = np.asarray(y, dtype=np.int64)
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError("to_categorical: class indices must not be negative, got %d" % y.min())
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError("to_categorical: class %d is not below num_classes=%d"
                         % (y.max(), num_classes))
    out = np.zeros((y.size, num_classes), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out.reshape(tuple(shape) + (num_classes,))


class Sequence:
    """Base class of a data set fed batch by batch: ``__getitem__(i)`` returns batch i as
    (x, y), ``__len__()`` the number of batches; ``on_epoch_end()`` is called after each
    epoch (to reshuffle). ``model.fit(seq, epochs=...)`` trains on it (shuffle=True visits the
    batches in a random order), as does fit_generator.

    Example::

        class Batches(keras.utils.Sequence):
            def __init__(self, x, y, n): self.x, self.y, self.n = x, y, n
            def __len__(self): return (len(self.x) + self.n - 1) // self.n
            def __getitem__(self, i):
                return self.x[i * self.n:(i + 1) * self.n], self.y[i * self.n:(i + 1) * self.n]
    """

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        pass

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along `axis` (rows of norm 0 left as they are)."""
    norms = np.atleast_1d(np.linalg.norm(x, order, axis))
    norms[norms == 0] = 1
    return x / np.expand_dims(norms, axis)


_GLOBAL_CUSTOM_OBJECTS = {}


def get_custom_objects():
    """The global name -> object dict that load_model (layer classes) and activations.get
    look names up in; custom_object_scope adds to it for a `with` block."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with CustomObjectScope({'MyLayer': MyLayer}):`` makes the names known to load_model
    (and activations.get) inside the block; the previous entries come back after it."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = _GLOBAL_CUSTOM_OBJECTS.copy()
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args, **kwargs):
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup)


def custom_object_scope(*args):
    """CustomObjectScope(*args): ``with custom_object_scope({'MyLayer': MyLayer}): ...``."""
    return CustomObjectScope(*args)


def get_file(fname, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None):
    """The path of `fname` in Keras's cache (cache_dir, default ~/.keras, then cache_subdir),
    as keras.utils.get_file: a file already there is used (an archive with untar/extract is
    unpacked there first when its folder is missing); an `origin` that is a local path or a
    file:// URL is copied in. Nothing is downloaded (shardflow's machines have no internet):
    a remote origin whose file is not cached is an error saying where to put it. A given
    file_hash/md5_hash (sha256 or md5) is checked."""
    import hashlib
    import shutil
    import tarfile
    import zipfile
    base = os.path.expanduser(cache_dir or os.path.join("~", ".keras"))
    folder = os.path.join(base, cache_subdir)
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, fname)
    archive = target + ".tar.gz" if untar else target
    if not os.path.exists(archive) and not (untar and os.path.isdir(target)):
        source = origin[len("file://"):] if origin and origin.startswith("file://") else origin
        if source and os.path.exists(source):
            shutil.copyfile(source, archive)
        else:
            raise FileNotFoundError(
                "get_file(%r): it is not in %s and nothing can be downloaded here (no internet); "
                "fetch %s elsewhere and put it at %s" % (fname, folder, origin, archive))
    wanted = file_hash or md5_hash
    if wanted and os.path.isfile(archive):
        algo = hash_algorithm
        if algo == "auto":
            algo = "sha256" if len(wanted) == 64 else "md5"
        digest = hashlib.new(algo)
        with open(archive, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != wanted:
            raise ValueError("get_file(%r): %s has %s %s, not the expected %s"
                             % (fname, archive, algo, digest.hexdigest(), wanted))
    if untar and not os.path.isdir(target):
        _safe_untar(archive, folder)
    if extract and os.path.isfile(archive):
        if tarfile.is_tarfile(archive):
            _safe_untar(archive, folder)
        elif zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                z.extractall(folder)
    return target if untar else archive


def _safe_untar(archive, folder):
    """Unpacks a tar archive into `folder`, refusing members that would land outside it or
    that are links or devices (an archive is untrusted input)."""
    import tarfile
    root = os.path.realpath(folder)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            dest = os.path.realpath(os.path.join(root, m.name))
            if not (m.isfile() or m.isdir()) or os.path.commonpath([root, dest]) != root:
                raise ValueError("get_file: %s holds %r, which would not stay a plain file "
                                 "inside %s; not unpacked" % (archive, m.name, folder))
        tar.extractall(root, members=members)


class Progbar:
    """A text progress bar (Keras's utils.Progbar), as custom training loops use it:
    ``bar = Progbar(target); bar.update(step, values=[("loss", 0.3)])`` or ``bar.add(1, ...)``.
    Values are averaged over the steps since the start (stateful_metrics are shown as given).
    verbose=1 redraws one line, verbose=2 prints one line when the target is reached, 0 is
    silent. target None: the total is unknown."""

    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        import sys
        import time
        self.target, self.width, self.verbose = target, int(width), int(verbose)
        self.interval, self.unit_name = float(interval), unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._values, self._order = {}, []
        self._seen, self._start, self._last = 0, time.time(), 0.0
        self._out = sys.stdout

    def update(self, current, values=None):
        import time
        for name, value in values or []:
            if name not in self._values:
                self._order.append(name)
            if name in self.stateful_metrics:
                self._values[name] = [value, 1]
            else:
                steps = max(current - self._seen, 1)
                total, count = self._values.get(name, [0.0, 0])
                self._values[name] = [total + value * steps, count + steps]
        self._seen = current
        now = time.time()
        done = self.target is not None and current >= self.target
        if self.verbose == 0 or (self.verbose == 1 and not done and
                                 now - self._last < self.interval):
            return
        if self.verbose == 2 and not done:
            return
        self._last = now
        parts = ["%s: %.4g" % (name, self._values[name][0] / max(self._values[name][1], 1))
                 for name in self._order]
        if self.target is not None:
            filled = int(self.width * min(current, self.target) / max(self.target, 1))
            bar = "%d/%d [%s%s]" % (current, self.target, "=" * filled,
                                    "." * (self.width - filled))
        else:
            bar = "%d" % current
        line = " - ".join([bar, "%.0fs" % (now - self._start)] + parts)
        if self.verbose == 1:
            self._out.write("\r" + line + ("\n" if done else ""))
        else:
            self._out.write(line + "\n")
        self._out.flush()

    def add(self, n, values=None):
        self.update(self._seen + n, values)
