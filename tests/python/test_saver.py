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


def test_optimizer_slots_are_global_variables_and_saved(tmp_path):
    """Regression (issue 14): as in TF1, global_variables() and a default Saver include the
    optimizer's slots (Adam's m and v), so a model restored into a new graph trains on; the
    slots were left out and the restored model's first step failed as uninitialized."""
    def build():
        x = sf.placeholder(sf.float32, [None, 2])
        w = sf.Variable(np.ones((2, 1), np.float32), name="w")
        loss = sf.reduce_sum(sf.square(sf.matmul(x, w)))
        train = sf.train.AdamOptimizer(0.1).minimize(loss)
        return x, w, loss, train

    feed = np.array([[1.0, 2.0]], np.float32)
    with sf.Graph().as_default():
        x, w, loss, train = build()
        names = sorted(v.op.name for v in sf.global_variables())
        assert "w" in names and any(n.startswith("w/Adam") for n in names), names
        assert [v.op.name for v in sf.trainable_variables()] == ["w"]
        saver = sf.train.Saver()
        with sf.Session() as sess:
            sess.run(sf.global_variables_initializer())
            sess.run(train, {x: feed})
            path = saver.save(sess, str(tmp_path / "m"))
            sess.run(train, {x: feed})
            want = sess.run(w)
    with sf.Graph().as_default():
        x, w, loss, train = build()
        with sf.Session() as sess:
            sf.train.Saver().restore(sess, path)
            sess.run(train, {x: feed})        # Adam's moments came back with the weights
            np.testing.assert_allclose(sess.run(w), want, rtol=1e-6)


def test_tf1_saver_arguments(tmp_path):
    # The arguments TF1 programs pass: write_version, sharded, keep_checkpoint_every_n_hours,
    # pad_step_number, reshape, allow_empty; last_checkpoints and recover_last_checkpoints.
    g = sf.Graph()
    with g.as_default():
        sf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        init = sf.global_variables_initializer()
        padded = sf.train.Saver(max_to_keep=1, pad_step_number=True, sharded=True,
                                write_version=sf.train.SaverDef.V2)
        keep_all = sf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.0)
    with sf.Session(graph=g) as sess:
        sess.run(init)
        first = padded.save(sess, str(tmp_path / "a" / "m"), global_step=7)
        second = padded.save(sess, str(tmp_path / "a" / "m"), global_step=8)
        assert first.endswith("m-00000007") and second.endswith("m-00000008")
        assert not os.path.exists(first) and padded.last_checkpoints == [second]
        # Every checkpoint is past its "keep one every 0 hours" time: none is deleted.
        kept = [keep_all.save(sess, str(tmp_path / "b" / "m"), global_step=i) for i in range(3)]
        assert all(os.path.exists(p) for p in kept)
    # A fresh Saver takes over the checkpoints a previous one wrote, and deletes the oldest.
    with g.as_default():
        later = sf.train.Saver(max_to_keep=2)
    later.recover_last_checkpoints(kept[1:] + [str(tmp_path / "b" / "gone")])
    assert later.last_checkpoints == kept[1:]
    with sf.Session(graph=g) as sess:
        sess.run(init)
        later.save(sess, str(tmp_path / "b" / "m"), global_step=3)
    assert not os.path.exists(kept[1]) and os.path.exists(kept[2])
    # reshape=True restores [2, 3] into a [3, 2] variable; without it the shapes must agree.
    g2 = sf.Graph()
    with g2.as_default():
        v = sf.Variable(np.zeros((3, 2), np.float32), name="w")
        strict, loose = sf.train.Saver(), sf.train.Saver(reshape=True)
    with sf.Session(graph=g2) as sess:
        with pytest.raises(sf.errors.InvalidArgumentError, match="shape"):
            strict.restore(sess, second)
        loose.restore(sess, second)
        np.testing.assert_array_equal(sess.run(v), np.arange(6).reshape(3, 2))
    with sf.Graph().as_default():
        with pytest.raises(ValueError, match="allow_empty"):
            sf.train.Saver()
        empty_graph_saver = sf.train.Saver(allow_empty=True)
        with sf.Session() as sess:
            assert empty_graph_saver.save(sess, str(tmp_path / "c" / "m")) is None
            empty_graph_saver.restore(sess, str(tmp_path / "c" / "m"))


def test_checkpoint_state_files_are_tensorflows_text_format(tmp_path):
    # Regression: TF writes the state file with text_format's C escapes (octal bytes for
    # non-ASCII, \" and \\); they were read literally, so latest_checkpoint found nothing and a
    # resumed job started from scratch. A garbage or unreadable state file is "no state" with a
    # warning, as TF1's.
    for name in ("modèle", 'a"b', "back\\slash", "sp ace"):
        d = tmp_path / name
        with sf.Graph().as_default():
            v = sf.Variable([1.0, 2.0], name="v")
            saver = sf.train.Saver()
            with sf.Session() as sess:
                sess.run(v.initializer)
                path = saver.save(sess, str(d / "model.ckpt"), global_step=3)
        assert sf.train.latest_checkpoint(str(d)) == path
        assert sf.train.get_checkpoint_state(str(d)).all_model_checkpoint_paths == [path]
    tf_written = tmp_path / "modèle"
    (tf_written / "checkpoint").write_text(
        'model_checkpoint_path: "%s/mod\\303\\250le/model.ckpt-3"\n'
        "all_model_checkpoint_paths: '%s/mod\\xc3\\xa8le/model.ckpt-3'\n"
        % (tmp_path, tmp_path))
    state = sf.train.get_checkpoint_state(str(tf_written))
    assert state.model_checkpoint_path == str(tf_written / "model.ckpt-3")
    assert state.all_model_checkpoint_paths == [str(tf_written / "model.ckpt-3")]
    assert sf.train.latest_checkpoint(str(tf_written)) == str(tf_written / "model.ckpt-3")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "checkpoint").write_bytes(b"\x00\xff not a state file {")
    assert sf.train.get_checkpoint_state(str(garbage)) is None
    assert sf.train.latest_checkpoint(str(garbage)) is None
    (tmp_path / "dir" / "checkpoint").mkdir(parents=True)
    assert sf.train.get_checkpoint_state(str(tmp_path / "dir")) is None
    (garbage / "checkpoint").write_text('all_model_checkpoint_paths: "x"\n')
    with pytest.raises(ValueError, match="Invalid checkpoint state"):
        sf.train.get_checkpoint_state(str(garbage))


def test_a_deferred_saver_builds_later_and_takes_later_variables(tmp_path):
    with sf.Graph().as_default():
        a = sf.Variable(1.0, name="a")
        saver = sf.train.Saver(defer_build=True)
        b = sf.Variable(2.0, name="b")
        saver.build()
        with sf.Session() as sess:
            sess.run(sf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
            sess.run([a.assign(0.0), b.assign(0.0)])
            saver.restore(sess, path)
            assert sess.run([a, b]) == [1.0, 2.0]


def _crafted(entries):
    """A checkpoint in shardflow's format (runtime/checkpoint.h), well framed and checksummed,
    holding `entries` [(name bytes, dtype enum, dims, data bytes)]."""
    import struct
    import zlib
    body = []
    for name, dtype, dims, data in entries:
        b = struct.pack("<I", len(name)) + name + struct.pack("<II", dtype, len(dims))
        b += b"".join(struct.pack("<q", d) for d in dims) + struct.pack("<Q", len(data)) + data
        body.append(b + struct.pack("<I", zlib.crc32(b)))
    head = b"SFCKPT01" + struct.pack("<IQ", 1, len(entries))
    head += struct.pack("<I", zlib.crc32(head))
    whole = head + b"".join(body)
    return whole + b"SFCKTAIL" + struct.pack("<I", zlib.crc32(whole))


def test_well_framed_checkpoints_describing_impossible_tensors_are_data_loss(tmp_path):
    # Regression: a rank of 33, 2^62 elements of size 0 or a name that is not UTF-8 raised
    # NumPy's ValueError or UnicodeDecodeError naming no file.
    for case, entries in {"rank33": [(b"w", 1, [1] * 33, b"\0" * 4)],
                          "huge_empty": [(b"w", 1, [2**62, 0], b"")],
                          "name": [(b"\xff\xfe", 1, [1], b"\0" * 4)]}.items():
        path = tmp_path / case
        path.write_bytes(_crafted(entries))
        with pytest.raises(sf.errors.DataLossError, match=case):
            sf.train.NewCheckpointReader(str(path))
        with sf.Graph().as_default():
            v = sf.Variable([0.0], name="w")
            saver = sf.train.Saver()
            with sf.Session() as sess:
                sess.run(v.initializer)
                with pytest.raises(sf.errors.DataLossError, match=case):
                    saver.restore(sess, str(path))


def test_one_variable_under_two_names_is_refused_and_a_fed_placeholder_may_be_a_target():
    # Regressions: Saver({'a': v, 'b': v}) saved it twice (TF1 refuses); running a fed
    # placeholder as a target said it was "needed but not fed".
    with sf.Graph().as_default():
        v = sf.Variable(1.0, name="v")
        with pytest.raises(ValueError, match="under two names"):
            sf.train.Saver({"a": v, "b": v})
        x = sf.placeholder(sf.float32, [2], name="x")
        with sf.Session() as sess:
            assert sess.run(x.op, {x: [1.0, 2.0]}) is None
            np.testing.assert_array_equal(sess.run([x.op, x * 2], {x: [1.0, 2.0]})[1], [2, 4])
            with pytest.raises(sf.errors.InvalidArgumentError, match="not fed"):
                sess.run(x.op)
