"""TF1's tf.gfile and tf.io.gfile (this module is both), for local paths.

Example::

    if not sf.gfile.Exists(logdir):
        sf.gfile.MakeDirs(logdir)
    with sf.gfile.GFile(os.path.join(logdir, "vocab.txt"), "w") as f:
        f.write("a\\nb\\n")
    for path in sf.gfile.Glob(os.path.join(logdir, "*.txt")):
        print(path, sf.gfile.Stat(path).length)

Errors are TF's: a missing file or folder raises sf.errors.NotFoundError, an existing target
of MkDir / Copy / Rename without overwrite sf.errors.AlreadyExistsError. Each is also the
OSError Python would raise (FileNotFoundError, FileExistsError), so either kind of `except`
catches it. Remote file systems (gs://, hdfs://, s3://) are refused with a ValueError.
"""

import collections
import glob as _glob
import os
import shutil

from shardflow import errors


class _NotFound(errors.NotFoundError, FileNotFoundError):
    """gfile's NotFoundError, also a FileNotFoundError."""


class _AlreadyExists(errors.AlreadyExistsError, FileExistsError):
    """gfile's AlreadyExistsError, also a FileExistsError."""


def _local(path):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    if "://" in path:
        raise ValueError("gfile: '%s' is not a local path; shardflow reads local files only"
                         % path)
    return path


def _translated(what, path, error):
    """The TF error for an OSError `error` of operation `what` on `path`."""
    text = "gfile.%s: %s: %s" % (what, path, error.strerror or error)
    if isinstance(error, FileNotFoundError):
        return _NotFound(text)
    if isinstance(error, FileExistsError):
        return _AlreadyExists(text)
    return error


FileStatistics = collections.namedtuple("FileStatistics", ["length", "mtime_nsec",
                                                           "is_directory"])
FileStatistics.__doc__ = "What gfile.Stat says of a path: bytes, mtime in ns, a folder or not."


class GFile:
    """TF1's tf.gfile.GFile (also Open, FastGFile): a file object over Python's open with
    TF's extra size(). Mode "r" reads str, "rb" bytes, as TF1 does."""

    def __init__(self, name, mode="r"):
        self.name = _local(name)
        self.mode = mode
        try:
            self._file = open(self.name, mode)
        except OSError as e:
            raise _translated("GFile", self.name, e) from None

    def size(self):
        """The file's length in bytes."""
        return os.path.getsize(self.name)

    def __getattr__(self, attr):  # read, write, readline, readlines, seek, tell, flush, close
        return getattr(self._file, attr)

    def __iter__(self):
        return iter(self._file)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._file.close()
        return False


def Exists(filename):  # noqa: N802 (TF1's names)
    return os.path.exists(_local(filename))


def IsDirectory(dirname):  # noqa: N802
    return os.path.isdir(_local(dirname))


def MakeDirs(dirname):  # noqa: N802
    """Makes `dirname` and its missing parents; nothing when it exists as a folder."""
    try:
        os.makedirs(_local(dirname), exist_ok=True)
    except OSError as e:
        raise _translated("MakeDirs", dirname, e) from None


def MkDir(dirname):  # noqa: N802
    """Makes one folder; AlreadyExistsError when it exists, NotFoundError without its parent."""
    try:
        os.mkdir(_local(dirname))
    except OSError as e:
        raise _translated("MkDir", dirname, e) from None


def ListDirectory(dirname):  # noqa: N802
    """The names in `dirname` (sorted; without "." and ".."); NotFoundError if it is not a
    folder."""
    if not os.path.isdir(_local(dirname)):
        raise _NotFound("gfile.ListDirectory: %s: no such folder" % dirname)
    return sorted(os.listdir(_local(dirname)))


def Glob(filename):  # noqa: N802
    """The paths matching the pattern (or list of patterns), sorted."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else filename
    out = set()
    for pattern in patterns:
        out.update(_glob.glob(_local(pattern)))
    return sorted(out)


def Remove(filename):  # noqa: N802
    try:
        os.remove(_local(filename))
    except OSError as e:
        raise _translated("Remove", filename, e) from None


def DeleteRecursively(dirname):  # noqa: N802
    """Deletes a folder and all under it (or a file); NotFoundError when it does not exist."""
    path = _local(dirname)
    if not os.path.lexists(path):
        raise _NotFound("gfile.DeleteRecursively: %s: no such file or folder" % dirname)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    old, new = _local(oldname), _local(newname)
    if not overwrite and os.path.exists(new):
        raise _AlreadyExists("gfile.Rename: %s exists (pass overwrite=True)" % newname)
    try:
        os.replace(old, new)
    except OSError as e:
        raise _translated("Rename", oldname, e) from None


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    old, new = _local(oldpath), _local(newpath)
    if not overwrite and os.path.exists(new):
        raise _AlreadyExists("gfile.Copy: %s exists (pass overwrite=True)" % newpath)
    try:
        shutil.copyfile(old, new)
    except OSError as e:
        raise _translated("Copy", oldpath, e) from None


def Stat(filename):  # noqa: N802
    try:
        st = os.stat(_local(filename))
    except OSError as e:
        raise _translated("Stat", filename, e) from None
    return FileStatistics(length=st.st_size, mtime_nsec=st.st_mtime_ns,
                          is_directory=os.path.isdir(_local(filename)))


def Walk(top, in_order=True):  # noqa: N802
    """(folder, subfolder names, file names) for `top` and every folder under it, parents
    first when in_order (TF1's Walk); nothing when `top` does not exist."""
    for entry in os.walk(_local(top), topdown=bool(in_order)):
        yield entry[0], sorted(entry[1]), sorted(entry[2])


def walk(top, topdown=True, onerror=None):
    """tf.io.gfile.walk: Walk with the argument names of os.walk."""
    for entry in os.walk(_local(top), topdown=bool(topdown), onerror=onerror):
        yield entry[0], sorted(entry[1]), sorted(entry[2])


# TF1's other names (Open, FastGFile) and TF2's tf.io.gfile names for the same functions.
Open = FastGFile = GFile
exists, isdir, makedirs, mkdir = Exists, IsDirectory, MakeDirs, MkDir
listdir, glob, remove, rmtree = ListDirectory, Glob, Remove, DeleteRecursively
rename, copy, stat = Rename, Copy, Stat

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "FileStatistics", "GFile",
           "Glob", "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove",
           "Rename", "Stat", "Walk", "copy", "exists", "glob", "isdir", "listdir", "makedirs",
           "mkdir", "remove", "rename", "rmtree", "stat", "walk"]
