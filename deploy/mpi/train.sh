#!/bin/sh
# Data-parallel training with OpenMPI's mpirun: 4 ranks over the hosts of a hostfile.
#
#   deploy/mpi/train.sh hosts.txt node01      # hosts.txt: "node01 slots=2\nnode02 slots=2"
#
# Each rank reads OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; MPI does not say where rank 0 is, so the
# ranks meet at --coordinator (rank 0's host; the first host of the file) to learn each other's
# addresses (rank k of a host listens on 2222 + k). On one machine: drop --hostfile and
# --coordinator (the rendezvous is then 127.0.0.1:2221). Run it again after a failure:
# --auto-resume continues from the last checkpoint (on a shared filesystem).
set -eu
HOSTFILE=${1:?usage: train.sh HOSTFILE RANK0_HOST}
RANK0=${2:?usage: train.sh HOSTFILE RANK0_HOST}
exec mpirun --hostfile "$HOSTFILE" -np 4 \
  shardflow train --cluster auto --coordinator "$RANK0:2221" --strategy allreduce --plaintext \
  --model cnn --batch-size 64 --checkpoint-dir "${CKPT:-$HOME/shardflow-checkpoints}" \
  --checkpoint-every-steps 200 --auto-resume --progress=false
