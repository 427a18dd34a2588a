"""sf.distribute.cluster_resolver: each launcher's environment to a ClusterSpec and this task's
type and index (the same C++ as `--cluster auto`), a rendezvous for MPI ranks, and malformed
environments raising errors that name the variable."""
import json
import threading

import pytest

import shardflow as sf
from cluster_util import free_port

cr = sf.distribute.cluster_resolver


def test_tf_config():
    env = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["w0:2222", "w1:2222"],
                                                "ps": ["p0:2222"]},
                                    "task": {"type": "ps", "index": 0}})}
    r = cr.TFConfigClusterResolver(environment=env)
    assert (r.task_type, r.task_id) == ("ps", 0)
    assert r.cluster_spec().as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]}
    assert r.master() == "grpc://p0:2222"
    assert r.master("worker", 1, rpc_layer="") == "w1:2222"
    assert cr.resolve(environment=env).environment == "TF_CONFIG"


def test_slurm_hostlists_and_tasks_per_node():
    env = {"SLURM_PROCID": "4", "SLURM_NTASKS": "5", "SLURM_STEP_ID": "0",
           "SLURM_STEP_NODELIST": "node[01-02],gpu7", "SLURM_STEP_TASKS_PER_NODE": "2(x2),1",
           "SLURM_NODEID": "2", "SLURM_LOCALID": "0"}
    r = cr.SlurmClusterResolver(port_base=3000, environment=env)
    assert (r.task_type, r.task_id) == ("worker", 4)
    assert r.cluster_spec().as_dict()["worker"] == [
        "node01:3000", "node01:3001", "node02:3000", "node02:3001", "gpu7:3000"]


def test_kubernetes_indexed_job():
    env = {"JOB_COMPLETION_INDEX": "1", "SHARDFLOW_NUM_TASKS": "2", "SHARDFLOW_SERVICE": "svc",
           "HOSTNAME": "train-1"}
    r = cr.KubernetesClusterResolver(environment=env)
    assert r.cluster_spec().as_dict() == {"worker": ["train-0.svc:2222", "train-1.svc:2222"]}


def test_mpi_ranks_meet_at_the_rendezvous():
    port = free_port()
    got = {}

    def rank(i):
        env = {"OMPI_COMM_WORLD_RANK": str(i), "OMPI_COMM_WORLD_SIZE": "2",
               "OMPI_COMM_WORLD_LOCAL_RANK": str(i), "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
        r = cr.MPIClusterResolver(port_base=port + 1, environment=env, rendezvous_timeout=20)
        got[i] = r.cluster_spec().as_dict()
    threads = [threading.Thread(target=rank, args=(i,)) for i in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = {"worker": ["127.0.0.1:%d" % (port + 1), "127.0.0.1:%d" % (port + 2)]}
    assert got == {0: want, 1: want}


@pytest.mark.parametrize("resolver,env,words", [
    (cr.TFConfigClusterResolver, {"TF_CONFIG": "[1, 2"}, "TF_CONFIG is not a JSON object"),
    (cr.SlurmClusterResolver, {"SLURM_PROCID": "0", "SLURM_NTASKS": "1",
                               "SLURM_STEP_NODELIST": "n[1-", "SLURM_TASKS_PER_NODE": "1"},
     "SLURM_STEP_NODELIST='n[1-' is not a Slurm hostlist"),
    (cr.TorchrunClusterResolver, {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h"},
     "MASTER_PORT is not set"),
    (cr.ClusterResolver, {"HOME": "/"}, "found no launcher"),
])
def test_malformed_environments_name_the_variable(resolver, env, words):
    with pytest.raises(sf.errors.InvalidArgumentError, match=words.replace("[", r"\[")):
        resolver(environment=env).cluster_spec()
