#!/usr/bin/python3
"""`shardflow train --cluster auto` under a real, private Slurm: a controller and one slurmd per
emulated node (network namespaces joined by a bridge; node names resolved through a private
/etc/hosts in a mount namespace; every file under a temporary folder; no systemd, no munge:
auth/none), then `srun -N2 -n4` (2 nodes x 2 tasks) and `sbatch` of a script that calls srun.
The machine's own Slurm configuration is never read or touched (SLURM_CONF points at ours).

usage: slurm_test.py path/to/shardflow     (root; exits 77 = skipped without slurm or netns)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

BINARY = os.path.abspath(sys.argv[1])
SUFFIX = str(os.getpid())
NS = [f"sfs1_{SUFFIX}", f"sfs2_{SUFFIX}"]
BRIDGE = f"sfsb_{SUFFIX}"
SUBNET = f"10.234.{os.getpid() % 200 + 20}"
ADDR = [f"{SUBNET}.1", f"{SUBNET}.2"]
NODES = ["sfnode1", "sfnode2"]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)


def sh(*args, check_rc=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(77)


def in_node(i, hosts, command):
    """`command` (a shell string) in node i's network namespace, with its hostname (a UTS
    namespace: slurmctld checks it is the controller) and the private /etc/hosts."""
    return ["nsenter", f"--net=/run/netns/{NS[i]}", "unshare", "--mount", "--uts", "sh", "-c",
            f"hostname {NODES[i]} && mount --bind {hosts} /etc/hosts && exec {command}"]


def setup_network():
    sh("ip", "netns", "add", BRIDGE)
    sh("ip", "netns", "exec", BRIDGE, "ip", "link", "add", "br0", "type", "bridge")
    sh("ip", "netns", "exec", BRIDGE, "ip", "link", "set", "br0", "up")
    for i, ns in enumerate(NS):
        a, b = f"sfsa{i}_{SUFFIX}"[:15], f"sfsp{i}_{SUFFIX}"[:15]
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        sh("ip", "link", "set", a, "netns", ns)
        sh("ip", "link", "set", b, "netns", BRIDGE)
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{ADDR[i]}/24", "dev", a)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", a, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        sh("ip", "netns", "exec", BRIDGE, "ip", "link", "set", b, "master", "br0")
        sh("ip", "netns", "exec", BRIDGE, "ip", "link", "set", b, "up")


def teardown(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    for ns in NS + [BRIDGE]:
        for pid in sh("ip", "netns", "pids", ns, check_rc=False).stdout.split():
            sh("kill", "-9", pid, check_rc=False)
        sh("ip", "netns", "del", ns, check_rc=False)


def write_conf(d):
    os.makedirs(f"{d}/state")
    for n in NODES:
        os.makedirs(f"{d}/spool-{n}")
        os.makedirs(f"{d}/tmp-{n}")
    with open(f"{d}/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for a, n in zip(ADDR, NODES)))
    with open(f"{d}/slurm.conf", "w") as f:
        f.write(f"""ClusterName=sftest
SlurmctldHost={NODES[0]}({ADDR[0]})
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
TmpFS={d}/tmp-%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
NodeName={NODES[0]} NodeAddr={ADDR[0]} CPUs=2 State=UNKNOWN
NodeName={NODES[1]} NodeAddr={ADDR[1]} CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")


def main():
    if os.geteuid() != 0:
        skip("needs root (network namespaces, a private Slurm)")
    for tool in ("slurmctld", "slurmd", "srun", "sbatch", "sinfo", "nsenter", "unshare", "ip"):
        if shutil.which(tool) is None:
            skip(f"needs {tool} (apt-get install slurmctld slurmd slurm-client)")
    d = tempfile.mkdtemp(prefix="sfslurm")
    os.environ["SLURM_CONF"] = f"{d}/slurm.conf"
    os.environ["GRPC_DNS_RESOLVER"] = "native"  # node names from the private /etc/hosts
    procs = []
    try:
        try:
            setup_network()
        except RuntimeError as e:
            skip(f"cannot create network namespaces here ({e})")
        write_conf(d)
        hosts = f"{d}/hosts"
        procs.append(subprocess.Popen(in_node(0, hosts, f"slurmctld -D -f {d}/slurm.conf"),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for i, n in enumerate(NODES):
            procs.append(subprocess.Popen(
                in_node(i, hosts, f"slurmd -D -N {n} -f {d}/slurm.conf"),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 30
        states = ""
        while time.time() < deadline:
            states = subprocess.run(in_node(0, hosts, "sinfo -h -N -o %t"), capture_output=True,
                                    text=True).stdout.split()
            if states.count("idle") == 2:
                break
            time.sleep(0.3)
        check("a private Slurm with 2 nodes comes up", states.count("idle") == 2,
              f"sinfo: {states}; {open(f'{d}/slurmctld.log').read()[-800:]}")
        if states.count("idle") != 2:
            return 1
        train = (f"{BINARY} train --cluster auto --strategy allreduce --plaintext --model mlp "
                 f"--batch-size 32 --threads 1 --max-steps 30 --progress=false "
                 f"--checkpoint-dir {d}/ckpt")
        start = time.time()
        r = subprocess.run(in_node(0, hosts, f"srun -N2 -n4 --ntasks-per-node=2 {train}"),
                           capture_output=True, text=True, timeout=300)
        took = time.time() - start
        out = r.stdout + r.stderr
        check(f"srun -N2 -n4: 4 tasks train with allreduce ({took:.1f} s)",
              r.returncode == 0 and out.count("cluster from Slurm") == 4 and
              "gradients all-reduced over 4 replicas" in out and "test accuracy" in out,
              out[-2000:])
        check("tasks of a node get distinct ports, names from the hostlist",
              f"{NODES[0]}:2222" in out and f"{NODES[0]}:2223" in out and f"{NODES[1]}:2223" in out,
              out[-1000:])
        # sbatch of a script that runs srun (the script's own shell is not a task).
        with open(f"{d}/job.sbatch", "w") as f:
            f.write(f"#!/bin/sh\n#SBATCH -N2\n#SBATCH --ntasks-per-node=2\n"
                    f"#SBATCH --output={d}/sbatch.out\n"
                    f"srun --kill-on-bad-exit=1 {train.replace('ckpt', 'ckpt2')} --auto-resume\n")
        r = subprocess.run(in_node(0, hosts, f"sbatch --parsable {d}/job.sbatch"),
                           capture_output=True, text=True, timeout=60)
        job = r.stdout.strip()
        deadline = time.time() + 300
        while time.time() < deadline:
            q = subprocess.run(in_node(0, hosts, f"squeue -h -j {job} -o %t"),
                               capture_output=True, text=True).stdout.strip()
            if not q:
                break
            time.sleep(0.5)
        out = open(f"{d}/sbatch.out").read() if os.path.exists(f"{d}/sbatch.out") else ""
        check("sbatch: the batch script's srun trains across both nodes",
              out.count("cluster from Slurm") == 4 and "test accuracy" in out,
              r.stderr + out[-2000:])
    finally:
        teardown(procs)
        shutil.rmtree(d, ignore_errors=True)
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
