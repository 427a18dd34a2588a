"""A TensorFlow 1.x distributed trainer of the Supervisor era (the shape of TF's
dist_test/python/mnist_replica.py), on Fashion-MNIST; only the import differs. tf.app.flags,
ClusterSpec and Server, replica_device_setter with ps_device, an int32 global step, Adam,
SyncReplicasOptimizer driven by hand (chief_init_op, ready_for_local_init_op,
get_chief_queue_runner, get_init_tokens_op) under a tf.train.Supervisor, and a session config
with device_filters so that a worker neither waits for nor talks to the other workers.

    python3 tf1_mnist_replica.py --ps_hosts=127.0.0.1:2222 \\
        --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0 &
    python3 tf1_mnist_replica.py ... --job_name=worker --task_index=1 --sync_replicas &
    python3 tf1_mnist_replica.py ... --job_name=worker --task_index=0 --sync_replicas

Each worker trains until the global step reaches --train_steps and prints the test accuracy.
"""

import math
import sys
import tempfile
import time

import numpy as np

import shardflow as tf

flags = tf.app.flags
flags.DEFINE_string("data_dir", "", "Fashion-MNIST directory ('' = the Debian package's)")
flags.DEFINE_integer("task_index", None, "index of the task within its job")
flags.DEFINE_integer("replicas_to_aggregate", None,
                     "gradients per synchronous update (default: the number of workers)")
flags.DEFINE_integer("hidden_units", 100, "hidden layer width")
flags.DEFINE_integer("train_steps", 400, "global steps to train")
flags.DEFINE_integer("batch_size", 100, "examples per worker and step")
flags.DEFINE_float("learning_rate", 0.002, "Adam's learning rate")
flags.DEFINE_boolean("sync_replicas", False, "synchronous updates (SyncReplicasOptimizer)")
flags.DEFINE_string("ps_hosts", "127.0.0.1:2222", "comma-separated host:port of the ps tasks")
flags.DEFINE_string("worker_hosts", "127.0.0.1:2223,127.0.0.1:2224",
                    "comma-separated host:port of the workers")
flags.DEFINE_string("job_name", None, "ps or worker")
FLAGS = flags.FLAGS
IMAGE_PIXELS = 28


def main(unused_argv):
    if not FLAGS.job_name:
        raise ValueError("give --job_name (ps or worker)")
    if FLAGS.task_index is None:
        raise ValueError("give --task_index")
    ps_spec = FLAGS.ps_hosts.split(",")
    worker_spec = FLAGS.worker_hosts.split(",")
    num_workers = len(worker_spec)
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    (train_x, train_y), (test_x, test_y) = tf.datasets.fashion_mnist.load(FLAGS.data_dir)
    train_x = train_x[FLAGS.task_index::num_workers]  # each worker its own shard
    train_y = np.eye(10, dtype=np.float32)[train_y[FLAGS.task_index::num_workers]]

    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                  ps_device="/job:ps/cpu:0", cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)  # int32, as TF1's
        hid_w = tf.Variable(tf.truncated_normal([IMAGE_PIXELS * IMAGE_PIXELS, FLAGS.hidden_units],
                                                stddev=1.0 / IMAGE_PIXELS, seed=1), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, 10],
                                               stddev=1.0 / math.sqrt(FLAGS.hidden_units),
                                               seed=2), name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")
        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)),
                                          tf.float32))
        opt = tf.train.AdamOptimizer(FLAGS.learning_rate)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=FLAGS.replicas_to_aggregate or num_workers,
                total_num_replicas=num_workers, name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)
        if FLAGS.sync_replicas:
            local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()
        init_op = tf.global_variables_initializer()
        train_dir = tempfile.mkdtemp()
        if FLAGS.sync_replicas:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     local_init_op=local_init_op,
                                     ready_for_local_init_op=ready_for_local_init_op,
                                     recovery_wait_secs=1, global_step=global_step)
        else:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     recovery_wait_secs=1, global_step=global_step)
        sess_config = tf.ConfigProto(
            allow_soft_placement=True, log_device_placement=False,
            device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
        print("Worker %d: %s" % (FLAGS.task_index, "initializing the session" if is_chief
                                 else "waiting for the chief to initialize the session"),
              flush=True)
        sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)
        print("Worker %d: session ready" % FLAGS.task_index, flush=True)
        if FLAGS.sync_replicas and is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])

        time_begin = time.time()
        rng = np.random.RandomState(FLAGS.task_index)
        local_step = 0
        while True:
            idx = rng.randint(0, len(train_x), FLAGS.batch_size)
            _, step = sess.run([train_step, global_step], {x: train_x[idx], y_: train_y[idx]})
            local_step += 1
            if local_step % 100 == 0:
                print("Worker %d: local step %d done (global step %d)"
                      % (FLAGS.task_index, local_step, step), flush=True)
            if step >= FLAGS.train_steps:
                break
        print("Worker %d: trained %.1f s, %d local steps" % (FLAGS.task_index,
                                                             time.time() - time_begin,
                                                             local_step), flush=True)
        test_labels = np.eye(10, dtype=np.float32)[test_y]
        acc = sess.run(accuracy, {x: test_x, y_: test_labels})
        print("Worker %d: after %d global steps, test accuracy: %.2f%%"
              % (FLAGS.task_index, step, 100 * acc), flush=True)
        sv.stop()


if __name__ == "__main__":
    tf.app.run()
    sys.exit(0)
