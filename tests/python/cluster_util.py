"""Helpers for the Python tests that start `shardflow server` processes on loopback."""
import json
import os
import socket
import subprocess

BUILD = os.environ.get("SHARDFLOW_BUILD_DIR",
                       os.path.join(os.path.dirname(__file__), "..", "..", "build"))
BINARY = os.path.join(BUILD, "bin", "shardflow")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_cluster(path, tasks=2):
    """A cluster file of `tasks` worker tasks on free loopback ports; returns the ports."""
    ports = [free_port() for _ in range(tasks)]
    with open(path, "w") as f:
        json.dump({"worker": [f"127.0.0.1:{p}" for p in ports]}, f)
    return ports


def start_server(spec, task, *flags):
    """`shardflow server --cluster spec --task task` once it says it listens (a restarted task
    too); the process and its "listening on" line."""
    p = subprocess.Popen([BINARY, "server", "--cluster", str(spec), "--task", str(task),
                          "--threads", "1", *flags], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert "listening on" in line, line
    return p, line


def start_servers(spec, tasks=2, *flags, banner=False):
    """`shardflow server --cluster spec --task i` for each task, once each says it listens.
    With banner=True, also returns each server's "listening on" line."""
    started = [start_server(spec, task, *flags) for task in range(tasks)]
    procs, lines = [p for p, _ in started], [line for _, line in started]
    return (procs, lines) if banner else procs


def stop_servers(procs):
    """SIGTERM: a clean shutdown, exit status 0."""
    for p in procs:
        p.terminate()
    for p in procs:
        assert p.wait(timeout=10) == 0


def run_together(commands, timeout=180):
    """Starts every (argv, env) of `commands` at once and waits for them all (any left running
    past `timeout` seconds, or after another's failure, is killed); asserts that each exited 0
    and returns their outputs (stdout and stderr together), in order."""
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for argv, env in commands]
    try:
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
    return outs
