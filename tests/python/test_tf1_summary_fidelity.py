"""TF 1.15 fidelity of summaries, event files and hooks: run metadata that TensorBoard can parse
with TF's schema (a subset of TF's protos compiled with protoc here), hooks' RunOptions merged
into the step, summary tags as summary_scope makes them, FileWriter's flush_secs / max_queue /
reopen, histogram NaN checks, image/audio tag numbering, tf.print / tf.Print layouts, scalar
summaries of non-scalars, and MonitoredTrainingSession's graph.pbtxt and SessionLog events."""
import glob
import importlib
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import shardflow as tf

# A faithful subset of TensorFlow 1.15's protos (same field numbers; enums as int32).
_TF_PROTOS = """
syntax = "proto3";
package tfmin;
message TensorShapeProto { message Dim { int64 size = 1; string name = 2; }
  repeated Dim dim = 2; bool unknown_rank = 3; }
message NameAttrList { string name = 1; map<string, AttrValue> attr = 2; }
message AttrValue {
  message ListValue { repeated bytes s = 2; repeated int64 i = 3 [packed = true];
    repeated float f = 4 [packed = true]; repeated bool b = 5 [packed = true];
    repeated int32 type = 6 [packed = true]; repeated TensorShapeProto shape = 7;
    repeated NameAttrList func = 9; }
  oneof value { bytes s = 2; int64 i = 3; float f = 4; bool b = 5; int32 type = 6;
    TensorShapeProto shape = 7; ListValue list = 1; NameAttrList func = 10;
    string placeholder = 9; }
}
message NodeDef { string name = 1; string op = 2; repeated string input = 3; string device = 4;
  map<string, AttrValue> attr = 5; }
message VersionDef { int32 producer = 1; int32 min_consumer = 2;
  repeated int32 bad_consumers = 3; }
message GraphDef { repeated NodeDef node = 1; VersionDef versions = 4; int32 version = 3;
  bytes library = 2; }
message AllocationDescription { int64 requested_bytes = 1; int64 allocated_bytes = 2;
  string allocator_name = 3; int64 allocation_id = 4; bool has_single_reference = 5;
  uint64 ptr = 6; }
message TensorDescription { int32 dtype = 1; TensorShapeProto shape = 2;
  AllocationDescription allocation_description = 4; }
message NodeOutput { int32 slot = 1; TensorDescription tensor_description = 3; }
message NodeExecStats { string node_name = 1; int64 all_start_micros = 2;
  int64 op_start_rel_micros = 3; int64 op_end_rel_micros = 4; int64 all_end_rel_micros = 5;
  repeated NodeOutput output = 7; string timeline_label = 8; int64 scheduled_micros = 9;
  uint32 thread_id = 10; repeated AllocationDescription referenced_tensor = 11; }
message DeviceStepStats { string device = 1; repeated NodeExecStats node_stats = 2; }
message StepStats { repeated DeviceStepStats dev_stats = 1; }
message CostGraphDef { message Node { string name = 1; string device = 2; int32 id = 3; }
  repeated Node node = 1; }
message RunMetadata { StepStats step_stats = 1; CostGraphDef cost_graph = 2;
  repeated GraphDef partition_graphs = 3; }
message TaggedRunMetadata { string tag = 1; bytes run_metadata = 2; }
message SessionLog { int32 status = 1; string checkpoint_path = 2; string msg = 3; }
message Event { double wall_time = 1; int64 step = 2;
  oneof what { string file_version = 3; bytes graph_def = 4; SessionLog session_log = 7;
    TaggedRunMetadata tagged_run_metadata = 8; bytes meta_graph_def = 9; } }
"""


@pytest.fixture(scope="module")
def tfpb(tmp_path_factory):
    """The TF protos above compiled with protoc (.ci/setup.sh installs protobuf-compiler)."""
    d = tmp_path_factory.mktemp("tfproto")
    (d / "tfmin_fidelity.proto").write_text(_TF_PROTOS)
    subprocess.run(["protoc", "-I", str(d), "--python_out", str(d), "tfmin_fidelity.proto"],
                   check=True)
    sys.path.insert(0, str(d))
    try:
        return importlib.import_module("tfmin_fidelity_pb2")
    finally:
        sys.path.remove(str(d))


def _events(logdir):
    out = []
    for path in sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))):
        out.extend(tf.train.summary_iterator(path))
    return out


# ---- 1. FileWriter.add_run_metadata writes TF's RunMetadata ------------------------------


def test_run_metadata_event_parses_with_tfs_schema(tmp_path, tfpb):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        y = tf.matmul(x, x, name="y")
        with tf.Session() as sess:
            md = tf.RunMetadata()
            sess.run(y, {x: np.ones((2, 2), np.float32)},
                     options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=md)
            writer = tf.summary.FileWriter(str(tmp_path))
            writer.add_run_metadata(md, "step1", global_step=1)
            writer.close()
    path = glob.glob(str(tmp_path / "events.out.tfevents.*"))[0]
    tagged = [tfpb.Event.FromString(e.SerializeToString()).tagged_run_metadata
              for e in tf.train.summary_iterator(path) if e.HasField("tagged_run_metadata")]
    assert len(tagged) == 1 and tagged[0].tag == "step1"
    parsed = tfpb.RunMetadata.FromString(tagged[0].run_metadata)
    names = {ns.node_name for dev in parsed.step_stats.dev_stats for ns in dev.node_stats}
    assert "y" in names
    label = [ns.timeline_label for dev in parsed.step_stats.dev_stats
             for ns in dev.node_stats if ns.node_name == "y"][0]
    assert label.startswith("y = ")
    assert parsed.partition_graphs
    nodes = {n.name: n for g in parsed.partition_graphs for n in g.node}
    assert nodes["y"].op == "MatMul" and nodes["y"].device


def test_graph_event_parses_with_tfs_schema_attrs_translated(tmp_path, tfpb):
    # Regression: the graph event held shardflow's GraphDef, whose AttrValue numbers its fields
    # differently from TF's (s is 1 there, TF's list): TensorBoard's parse of a graph with
    # string attrs failed or read garbage. It is TF's GraphDef now, attrs translated.
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.transpose(tf.nn.max_pool(tf.reshape(x, [-1, 3, 1, 1]), [1, 1, 1, 1],
                                        [1, 1, 1, 1], "SAME", name="pool"), name="t")
        del y
    writer = tf.summary.FileWriter(str(tmp_path), g)
    writer.close()
    path = glob.glob(str(tmp_path / "events.out.tfevents.*"))[0]
    graphs = [tfpb.Event.FromString(e.SerializeToString()).graph_def
              for e in tf.train.summary_iterator(path) if e.HasField("graph_def")]
    assert len(graphs) == 1
    nodes = {n.name: n for n in tfpb.GraphDef.FromString(graphs[0]).node}
    assert nodes["x"].op == "Placeholder"
    assert nodes["x"].attr["dtype"].type == 1          # DT_FLOAT
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 3]
    assert list(nodes["pool"].attr["ksize"].list.i) == [1, 1, 1, 1]
    assert nodes["pool"].attr["padding"].s == b"SAME"
    assert nodes["t"].input[0] == "pool"


# ---- 2. hooks' SessionRunArgs(options=...) ------------------------------------------------


class _TraceHook(tf.train.SessionRunHook):
    def __init__(self, options):
        self.options = options
        self.seen = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(None, options=self.options)

    def after_run(self, run_context, run_values):
        md = run_values.run_metadata
        traced = sum(len(d.node_stats) for d in md.step_stats.dev_stats) if md else None
        self.seen.append((run_values.options, traced))


def test_hook_run_options_are_merged_and_get_the_run_metadata():
    with tf.Graph().as_default():
        loss = tf.reduce_sum(tf.Variable(np.ones(3, np.float32)))
        tracer = _TraceHook(tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
        timeout = _TraceHook(tf.RunOptions(timeout_in_ms=60000))
        caller = tf.RunOptions(output_partition_graphs=True)
        with tf.train.MonitoredSession(hooks=[tracer, timeout]) as sess:
            sess.run(loss, options=caller)
            mine = tf.RunMetadata()
            sess.run(loss, run_metadata=mine)
    options, traced = tracer.seen[0]
    assert traced and traced > 0
    assert options.trace_level == tf.RunOptions.FULL_TRACE
    assert options.timeout_in_ms == 60000 and options.output_partition_graphs
    assert timeout.seen[0][1] == traced          # every hook gets the step's RunMetadata
    # The caller's options are not changed; the caller's RunMetadata gets the trace.
    assert caller.trace_level == tf.RunOptions.NO_TRACE and caller.timeout_in_ms == 0
    assert sum(len(d.node_stats) for d in mine.step_stats.dev_stats) > 0


def test_hook_without_options_sees_run_options_and_metadata_objects():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        hook = _TraceHook(None)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            sess.run(x)
    options, traced = hook.seen[0]
    assert options is not None and options.trace_level == tf.RunOptions.NO_TRACE
    assert traced == 0


def test_profiler_hook_traces_steps_the_caller_passes_options_to(tmp_path):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        train = tf.assign_add(step, 1)
        hook = tf.train.ProfilerHook(save_steps=1, output_dir=str(tmp_path))
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(2):
                sess.run(train, options=tf.RunOptions(timeout_in_ms=60000))
    traces = sorted(os.listdir(str(tmp_path)))
    assert len(traces) == 2 and all(t.startswith("timeline-") for t in traces), traces


# ---- 3. tags --------------------------------------------------------------------------------


def test_summary_tags_are_cleaned_and_unique_as_tf_summary_scope():
    with tf.Graph().as_default():
        w = tf.get_variable("dense/kernel", [2, 2])
        tf.summary.histogram(w.name, w)
        tf.summary.scalar("loss", tf.constant(1.0))
        tf.summary.scalar("loss", tf.constant(2.0))
        tf.summary.scalar("my loss", tf.constant(3.0))
        tf.summary.scalar("/lead", tf.constant(4.0))
        for i in range(2):
            with tf.name_scope("tower"):
                tf.summary.scalar("acc", tf.constant(float(i)))
        tf.summary.scalar("f", tf.constant(1.0), family="fam")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = tf.summary.Summary.FromString(sess.run(tf.summary.merge_all()))
    assert [v.tag for v in out.value] == ["dense/kernel_0", "loss", "loss_1", "my_loss", "lead",
                                          "tower/acc", "tower_1/acc", "fam/fam/f"]


# ---- 4. FileWriter flush_secs, max_queue, reopen --------------------------------------------


def _summary(step):
    return tf.summary.Summary(value=[tf.summary.Summary.Value(tag="loss", simple_value=step)])


def test_file_writer_flushes_every_flush_secs(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=0.2)
    for step in range(3):
        writer.add_summary(_summary(step), step)
    deadline = time.time() + 10
    while len(_events(tmp_path)) < 4 and time.time() < deadline:
        time.sleep(0.1)
    assert [e.step for e in _events(tmp_path)[1:]] == [0, 1, 2]   # without flush() or close()
    writer.close()
    assert not any(t.name == "FileWriter flush" and t.is_alive()
                   for t in threading.enumerate() if t is writer._flusher)


def test_file_writer_flushes_after_max_queue_events(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=3, flush_secs=1000)
    writer.add_summary(_summary(0), 0)
    writer.add_summary(_summary(1), 1)    # with the file_version record: 3 waiting
    assert [e.step for e in _events(tmp_path)[1:]] == [0, 1]
    writer.close()


def test_file_writer_reopen_goes_on_after_close(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=1000)
    writer.add_summary(_summary(0), 0)
    writer.close()
    assert not writer._flusher.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_summary(_summary(9), 9)
    writer.reopen()
    writer.add_summary(_summary(1), 1)
    writer.flush()
    steps = [e.step for e in _events(tmp_path) if e.HasField("summary")]
    assert steps == [0, 1]
    writer.close()


# ---- 5. histogram of NaN / Inf --------------------------------------------------------------


def test_histogram_of_nan_or_inf_fails_the_step():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None])
        h = tf.summary.histogram("h", p)
        with tf.Session() as sess:
            for bad in ([1.0, np.nan], [1.0, np.inf]):
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match="Nan in summary histogram for: h"):
                    sess.run(h, {p: bad})
            assert tf.summary.Summary.FromString(sess.run(h, {p: [1.0, 2.0]})).value[0].histo.num \
                == 2


# ---- 6. image / audio tags -----------------------------------------------------------------


def test_media_tags_are_numbered_unless_max_outputs_is_one():
    with tf.Graph().as_default():
        summaries = [tf.summary.image("img", tf.zeros([1, 4, 4, 3])),
                     tf.summary.image("one", tf.zeros([2, 4, 4, 3]), max_outputs=1),
                     tf.summary.audio("aud", tf.zeros([1, 100]), 8000),
                     tf.summary.audio("mono", tf.zeros([2, 100]), 8000, max_outputs=1)]
        with tf.Session() as sess:
            out = tf.summary.Summary.FromString(sess.run(tf.summary.merge(summaries)))
    assert [v.tag for v in out.value] == ["img/image/0", "one/image", "aud/audio/0",
                                          "mono/audio"]


# ---- 7. tf.print and tf.Print ----------------------------------------------------------------


def test_print_v2_structures_summarize_and_streams(capfd):
    with tf.Graph().as_default():
        x = tf.constant(np.arange(10, dtype=np.int32))
        with tf.Session() as sess:
            sess.run(tf.print("nested:", {"a": x[:2]}, [x[0], 7]))
            sess.run(tf.print("summarize:", x, summarize=3))
            sess.run(tf.print("all:", x[:4], summarize=-1, sep="|", end="!\n"))
            sess.run(tf.print("to stdout", x[:2], output_stream=sys.stdout))
    out, err = capfd.readouterr()
    assert "nested: {'a': [0 1]} [0, 7]\n" in err
    assert "summarize: [0 1 2 ... 7 8 9]\n" in err
    assert "all:|[0 1 2 3]!\n" in err
    assert out == "to stdout [0 1]\n" and "to stdout" not in err
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print("x", output_stream="nowhere")


def test_tf_print_of_a_matrix_prints_nested_brackets(capfd):
    with tf.Graph().as_default():
        x = tf.constant(np.arange(10, dtype=np.float32))
        m3 = tf.reshape(tf.range(24), [2, 3, 4])
        m2 = tf.reshape(tf.range(1, 13), [3, 4])
        p = tf.placeholder(tf.float32)
        a = tf.Print(x, [m3], "M3: ", summarize=2)
        b = tf.Print(x, [m2, tf.constant(5)], "M2: ", summarize=12)
        c = tf.Print(p, [p], "once: ", first_n=1) * 2
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(a), np.arange(10))
            sess.run(b)
            for _ in range(3):
                assert sess.run(c, {p: [[1.0]]}).tolist() == [[2.0]]
            grad = tf.gradients(tf.reduce_sum(a), [x])[0]
            np.testing.assert_array_equal(sess.run(grad), np.ones(10))
    err = capfd.readouterr().err
    assert "M3: [[[0 1...]]...]\n" in err
    assert "M2: [[1 2 3 4][5 6 7 8][9 10 11 12]][5]\n" in err
    assert err.count("once: ") == 1


# ---- 8. scalar summaries of non-scalars, non-numeric types -----------------------------------


def test_scalar_summary_of_a_non_scalar_fails_naming_it():
    with tf.Graph().as_default():
        vec = tf.summary.scalar("vec", tf.constant([1.0, 2.0, 3.0]))
        one = tf.summary.scalar("one", tf.constant([5.0]))
        fine = tf.summary.scalar("int", tf.constant(7))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"tags and values not the same shape: \[\] != \[3\] "
                                     r"\(tag 'vec'\)"):
                sess.run(vec)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[1\] \(tag 'one'\)"):
                sess.run(one)
            assert tf.summary.Summary.FromString(sess.run(fine)).value[0].simple_value == 7
        for build in (lambda: tf.summary.scalar("s", tf.constant("a")),
                      lambda: tf.summary.scalar("b", tf.constant(True)),
                      lambda: tf.summary.histogram("hs", tf.constant(["a"]))):
            with pytest.raises(TypeError, match="real number tensor"):
                build()


# ---- 9. MonitoredTrainingSession: graph.pbtxt, graph event, SessionLog -----------------------


def test_monitored_training_session_writes_graph_and_session_logs(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(np.ones(3, np.float32))
        loss = tf.reduce_sum(w * w)
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        tf.summary.scalar("loss", loss)
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_summaries_steps=1) as sess:
            for _ in range(3):
                sess.run(train)
    assert "GradientDescent" in (tmp_path / "graph.pbtxt").read_text()
    tf.summary.FileWriterCache.clear()
    events = _events(tmp_path)
    kinds = [e.WhichOneof("what") for e in events]
    assert kinds[0] == "file_version" and "graph_def" in kinds
    logs = [(e.session_log.status, e.step) for e in events if e.HasField("session_log")]
    assert (tf.summary.SessionLog.START, 1) in logs     # as TF's: the step after the first
    assert (tf.summary.SessionLog.CHECKPOINT, 0) in logs
    assert (tf.summary.SessionLog.CHECKPOINT, 3) in logs
