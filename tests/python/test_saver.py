"""sf.train.Saver and sf.train.latest_checkpoint, as TF1 programs use them: save with a global
step, keep max_to_keep, restore into a fresh session (and a fresh graph), clear errors for a
missing variable, a wrong shape and a damaged file; files shardflow train's checkpoints can read."""
import os

import numpy as np
import pytest

import shardflow as sf


def build():
    g = sf.Graph()
    with g.as_default():
        w = sf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        b = sf.Variable(np.zeros(3, np.float32), name="b")
        step = sf.Variable(0, dtype=sf.int64, name="global_step", trainable=False)
        bump = sf.group(w.assign(w * 2.0), b.assign_add(np.ones(3, np.float32)),
                        step.assign_add(np.int64(1)))
        init = sf.global_variables_initializer()
        saver = sf.train.Saver(max_to_keep=2)
    return g, w, b, step, bump, init, saver


def test_save_restore_latest_and_max_to_keep(tmp_path):
    g, w, b, step, bump, init, saver = build()
    prefix = str(tmp_path / "model.ckpt")
    with sf.Session(graph=g) as sess:
        sess.run(init)
        paths = []
        for _ in range(3):
            sess.run(bump)
            paths.append(saver.save(sess, prefix, global_step=step))
        assert paths == [prefix + "-1", prefix + "-2", prefix + "-3"]
        assert not os.path.exists(paths[0]) and os.path.exists(paths[2])  # max_to_keep=2
        assert sf.train.latest_checkpoint(str(tmp_path)) == paths[2]
        w_saved, b_saved = sess.run([w, b])
    # A fresh graph and session, as a restarted program.
    g2, w2, b2, step2, _, init2, saver2 = build()
    with sf.Session(graph=g2) as sess:
        sess.run(init2)
        saver2.restore(sess, sf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(w2), w_saved)
        np.testing.assert_array_equal(sess.run(b2), b_saved)
        assert sess.run(step2) == 3
        saver2.restore(sess, paths[1])
        assert sess.run(step2) == 2
    assert sf.train.latest_checkpoint(str(tmp_path / "nowhere")) is None


def test_errors_name_the_variable_and_the_file(tmp_path):
    g, w, b, step, bump, init, saver = build()
    path = str(tmp_path / "model.ckpt")
    with sf.Session(graph=g) as sess:
        sess.run(init)
        saver.save(sess, path)
    other = sf.Graph()
    with other.as_default():
        sf.Variable(np.zeros((3, 3), np.float32), name="w")
        sf.Variable(np.zeros(3, np.float32), name="extra")
        init3 = sf.global_variables_initializer()
        saver3 = sf.train.Saver()
    with sf.Session(graph=other) as sess:
        sess.run(init3)
        with pytest.raises(sf.errors.NotFoundError, match="has no variable\\(s\\) extra"):
            saver3.restore(sess, path)
    only_w = sf.Graph()
    with only_w.as_default():
        sf.Variable(np.zeros((3, 3), np.float32), name="w")
        init4 = sf.global_variables_initializer()
        saver4 = sf.train.Saver()
    with sf.Session(graph=only_w) as sess:
        sess.run(init4)
        with pytest.raises(sf.errors.InvalidArgumentError, match="'w' has shape \\[2, 3\\]"):
            saver4.restore(sess, path)
    with open(path, "r+b") as f:
        f.seek(40)
        f.write(b"\xff\xff\xff\xff")
    with sf.Session(graph=g) as sess:
        sess.run(init)
        with pytest.raises(sf.errors.OpError):
            saver.restore(sess, path)
    with pytest.raises(sf.errors.NotFoundError):
        with sf.Session(graph=g) as sess:
            saver.restore(sess, str(tmp_path / "missing.ckpt"))
