"""keras.utils.get_file (Keras's cache, no downloads) and keras.datasets.cifar10 read from it:
the layout Keras gives, a clear error without the data, hashes checked, unsafe archives
refused."""

import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

import shardflow as tf


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _cifar_archive(tmp_path):
    rng = np.random.RandomState(0)
    src = tmp_path / "src" / "cifar-10-batches-py"
    src.mkdir(parents=True)
    batches = {}
    for name, n in [("data_batch_%d" % i, 4) for i in range(1, 6)] + [("test_batch", 3)]:
        batch = {b"data": rng.randint(0, 256, (n, 3072)).astype(np.uint8),
                 b"labels": [(i * 3) % 10 for i in range(n)]}
        batches[name] = batch
        with open(src / name, "wb") as f:
            pickle.dump(batch, f)
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="cifar-10-batches-py")
    return archive, batches


def test_cifar10_without_the_data_says_where_to_put_it(home):
    with pytest.raises(FileNotFoundError, match="no internet.*cifar-10-batches-py"):
        tf.keras.datasets.cifar10.load_data()


def test_cifar10_from_the_cache_in_keras_layout(home, tmp_path):
    archive, batches = _cifar_archive(tmp_path)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    path = tf.keras.utils.get_file("cifar-10-batches-py", origin="file://%s" % archive,
                                   untar=True, file_hash=digest)
    assert path == str(home / ".keras" / "datasets" / "cifar-10-batches-py")
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
    assert x_train.shape == (20, 32, 32, 3) and x_train.dtype == np.uint8
    assert y_train.shape == (20, 1) and x_test.shape == (3, 32, 32, 3) and y_test.shape == (3, 1)
    raw = batches["data_batch_1"][b"data"][1]
    # Channels last: pixel (row 5, column 7) of channel 2 is data[2 * 1024 + 5 * 32 + 7].
    assert x_train[1, 5, 7, 2] == raw[2 * 1024 + 5 * 32 + 7]
    np.testing.assert_array_equal(y_test[:, 0], [0, 3, 6])


def test_get_file_checks_hashes_and_refuses_unsafe_archives(home, tmp_path):
    plain = tmp_path / "weights.bin"
    plain.write_bytes(b"abc")
    got = tf.keras.utils.get_file("weights.bin", origin=str(plain),
                                  md5_hash=hashlib.md5(b"abc").hexdigest())
    assert open(got, "rb").read() == b"abc"
    with pytest.raises(ValueError, match="not the expected"):
        tf.keras.utils.get_file("weights.bin", origin=str(plain), file_hash="0" * 64)
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(ValueError, match="not unpacked"):
        tf.keras.utils.get_file("evil", origin=str(evil), untar=True)
    assert not os.path.exists(home / ".keras" / "escaped.txt")


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/shardflow_pickle_ran",))


def test_a_batch_that_names_other_classes_is_refused(home, tmp_path):
    archive, _ = _cifar_archive(tmp_path)
    tf.keras.utils.get_file("cifar-10-batches-py", origin=str(archive), untar=True)
    batch = home / ".keras" / "datasets" / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(pickle.dumps({b"data": _Evil(), b"labels": []}))
    with pytest.raises(ValueError, match="not a CIFAR-10 batch"):
        tf.keras.datasets.cifar10.load_data()
    assert not os.path.exists("/tmp/shardflow_pickle_ran")
