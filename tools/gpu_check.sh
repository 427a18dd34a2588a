#!/usr/bin/env bash
# gpu_check.sh: the one run on a GPU machine, from the bundle of tools/gpu_bundle.sh:
#
#   source .devbundle/unpack.sh && bash tools/gpu_check.sh       (unpack.sh cds to /tmp/bundle)
#
# Prints the GPU (nvidia-smi), then runs, each under `timeout` within one budget (GPU_CHECK_BUDGET
# seconds, default 400, so the whole run fits in ~7 minutes):
#   1. bin/gpu_conformance_test, bin/gpu_device_test, bin/gpu_gradient_test
#   2. shardflow train --model cnn for one epoch of Fashion-MNIST (datasets/fashion-mnist)
#   3. CNN training throughput at batch 128 and 512: `shardflow train --synthetic` (one fixed batch
#      fed every step, images/s from the median step, as gpu_peer.py's "host feed" row), the same
#      with SHARDFLOW_CUDNN_LAYOUT=nhwc, and 200 steps on Fashion-MNIST
#   4. bin/gpu_benchmark (MatMul through a session vs cuBLAS; executor overhead)
#   5. python3 benchmarks/gpu_peer.py (PyTorch on the same work)
# and ends with a summary: each step's exit status and time, and the images/s side by side.
# Everything goes to $OUT/gpu_log.txt (./gpu_log.txt without $OUT) as well as to the terminal.
#
# `--device gpu` is passed to `shardflow train` when its --help lists --device. The script itself
# exits 0 unless the bundle is not where it should be; read the summary for failures.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
[ -d bin ] || { echo "gpu_check: no bin/ in $(pwd): source .devbundle/unpack.sh first" >&2; exit 2; }
log=${OUT:-.}/gpu_log.txt
mkdir -p "$(dirname "$log")"
export PYTHONUNBUFFERED=1

budget=${GPU_CHECK_BUDGET:-400}
start=$SECONDS
summary=()
declare -A rates

# run NAME CAP_SECONDS COMMAND...: runs under timeout min(CAP, what is left of the budget), output
# to the log and to $step_out; records the exit status.
step_out=$(mktemp)
run() {
  local name=$1 cap=$2
  shift 2
  : >"$step_out"
  local left=$((budget - (SECONDS - start)))
  local limit=$((cap < left ? cap : left))
  echo
  echo "==== $name  (limit ${limit}s; $(date -u +%H:%M:%S)) ===="
  echo "\$ $*"
  if [ "$limit" -lt 5 ]; then
    echo "---- skipped: the budget of ${budget}s is spent"
    summary+=("$(printf '%-44s %8s %6s' "$name" skipped -)")
    return
  fi
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$step_out"
  local rc=${PIPESTATUS[0]}
  local status=$rc
  [ "$rc" -eq 0 ] && status=ok
  [ "$rc" -eq 124 ] && status="TIMEOUT"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && status="FAIL($rc)"
  echo "---- $name: $status in $((SECONDS - t0))s"
  summary+=("$(printf '%-44s %8s %5ss' "$name" "$status" "$((SECONDS - t0))")")
}

main() {
  echo "gpu_check: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), in $(pwd), budget ${budget}s"
  uname -a
  nvidia-smi || echo "gpu_check: nvidia-smi failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  python3 --version || true
  ls -la bin
  echo "libraries not found:"
  for b in bin/*; do ldd "$b" 2>/dev/null | grep "not found" | sed "s|^|  $b: |"; done
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

  # ---- 1. tests --------------------------------------------------------------------------------
  run "gpu_conformance_test" 60 bin/gpu_conformance_test
  run "gpu_device_test" 40 bin/gpu_device_test
  run "gpu_gradient_test" 40 bin/gpu_gradient_test

  # ---- 2. and 3. shardflow train --------------------------------------------------------------
  device=()
  if bin/shardflow train --help 2>&1 | grep -q -- '--device'; then device=(--device gpu); fi
  echo
  echo "shardflow train ${device[*]:-(no --device flag: the default placement, GPU first)}"
  data=datasets/fashion-mnist
  if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
    run "train cnn, 1 epoch, batch 64" 60 bin/shardflow train --model cnn "${device[@]}" \
        --epochs 1 --progress=false --data-dir "$data" --checkpoint-dir /tmp/gpu_check_ckpt \
        --checkpoint-every-secs 0
    rates["epoch 64"]=$(grep -o '[0-9.]* examples/s after' "$step_out" | head -1 | cut -d' ' -f1)
    accuracy=$(grep -o 'test accuracy [0-9.]*%' "$step_out" | head -1)
  else
    echo "gpu_check: no Fashion-MNIST in $data; the epoch on real data is skipped"
    accuracy=""
  fi
  for batch in 128 512; do
    run "train cnn synthetic, batch $batch" 25 bin/shardflow train --model cnn "${device[@]}" \
        --synthetic --batch-size "$batch" --max-steps 30 --progress=false \
        ${GPU_CHECK_PROFILE:+--profile-step 20}
    rates["synthetic $batch"]=$(grep -o 'cnn synthetic: [0-9.]*' "$step_out" | awk '{print $3}')
  done
  # The same with cuDNN's NHWC convolutions (strict float32 defaults to NCHW inside the kernels).
  for batch in 128 512; do
    run "train cnn synthetic, batch $batch, NHWC" 25 env SHARDFLOW_CUDNN_LAYOUT=nhwc \
        bin/shardflow train --model cnn "${device[@]}" --synthetic --batch-size "$batch" \
        --max-steps 30 --progress=false
    rates["nhwc $batch"]=$(grep -o 'cnn synthetic: [0-9.]*' "$step_out" | awk '{print $3}')
  done
  run "train mlp synthetic, batch 128" 25 bin/shardflow train --model mlp "${device[@]}" \
      --synthetic --batch-size 128 --max-steps 30 --progress=false
  # Which ops of the CNN's training step stay on the CPU (no GPU kernel), by type.
  run "cnn ops placed on the CPU" 25 bash -c "bin/shardflow train --model cnn ${device[*]:-} \
      --synthetic --max-steps 3 --progress=false --log-placement 2>&1 | grep -- '-> .*CPU:0' |
      sed -E 's/.*\\(([A-Za-z0-9_]+)\\) ->.*/\\1/' | sort | uniq -c | sort -rn"

  # ResNet-50 (uneven SAME padding in its stride-2 layers, batch norm) on synthetic 224x224.
  run "train resnet50 synthetic, batch 32" 90 bin/shardflow train --model resnet50 \
      "${device[@]}" --synthetic --batch-size 32 --max-steps 12 --progress=false
  rates["resnet50 32"]=$(grep -o 'resnet50 synthetic: [0-9.]*' "$step_out" | awk '{print $3}')

  # ---- 3b. data parallelism over GPUs ------------------------------------------------------------
  if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
    # Two replicas on GPU:0 and GPU:1 of one process (logical devices of one GPU where there is
    # one: the all-reduce is staged through host memory; NCCL with two physical GPUs).
    run "allreduce, 2 GPU replicas in one process" 60 bin/shardflow train --model cnn \
        --device gpu --strategy allreduce --devices 2 --max-steps 200 --progress=false \
        --data-dir "$data" --lr-decay none --checkpoint-dir /tmp/gpu_check_ar --checkpoint-every-secs 0
    # Two processes, a replica on each one's GPU:0, the gradients over gRPC (GPU -> host -> wire).
    echo '{"worker": ["127.0.0.1:23511", "127.0.0.1:23512"]}' > /tmp/gpu_check_cluster.json
    timeout 90 bin/shardflow train --model cnn --device gpu --strategy allreduce \
        --cluster /tmp/gpu_check_cluster.json --job worker --task 1 --max-steps 200 \
        --progress=false --data-dir "$data" > /tmp/gpu_check_task1.log 2>&1 &
    run "allreduce, 2 processes over gRPC, GPU" 90 bin/shardflow train --model cnn --device gpu \
        --strategy allreduce --cluster /tmp/gpu_check_cluster.json --job worker --task 0 \
        --max-steps 200 --progress=false --data-dir "$data" --lr-decay none \
        --checkpoint-dir /tmp/gpu_check_ar2 --checkpoint-every-secs 0
    wait
    echo "task 1 said:"; tail -3 /tmp/gpu_check_task1.log
  fi

  # ---- 4. and 5. benchmarks ---------------------------------------------------------------------
  run "gpu_benchmark" 60 bin/gpu_benchmark
  run "gpu_peer.py (PyTorch)" 70 python3 benchmarks/gpu_peer.py
  peer=$(cat "$step_out")

  # ---- 6. throughput on real data, if the budget allows -----------------------------------------
  if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
    for batch in 128 512; do
      run "train cnn, 200 steps, batch $batch" 45 bin/shardflow train --model cnn "${device[@]}" \
          --batch-size "$batch" --max-steps 200 --progress=false --data-dir "$data" \
          --lr-decay none --checkpoint-dir "/tmp/gpu_check_ckpt_$batch" --checkpoint-every-secs 0
      rates["fashion $batch"]=$(grep -o '[0-9.]* examples/s after' "$step_out" | head -1 |
                                 cut -d' ' -f1)
    done
  fi


  # ---- summary ----------------------------------------------------------------------------------
  echo
  echo "==== summary ($((SECONDS - start))s of ${budget}s) ===="
  printf '%-44s %8s %6s\n' step status time
  for line in "${summary[@]}"; do echo "$line"; done
  echo
  echo "CNN training images/s (shardflow --model cnn ${device[*]:-}; PyTorch rows from gpu_peer.py):"
  printf '%-54s %14s %14s\n' "" "batch 128" "batch 512"
  printf '%-54s %14s %14s\n' "shardflow synthetic (host feed, loss every step)" \
    "${rates[synthetic 128]:--}" "${rates[synthetic 512]:--}"
  printf '%-54s %14s %14s\n' "shardflow synthetic, convolutions in NHWC" \
    "${rates[nhwc 128]:--}" "${rates[nhwc 512]:--}"
  printf '%-54s %14s %14s\n' "shardflow Fashion-MNIST, 200 steps (after warm-up)" \
    "${rates[fashion 128]:--}" "${rates[fashion 512]:--}"
  echo "$peer" | grep -E '^(fp32,|torch defaults)' || echo "(no PyTorch rows)"
  echo "shardflow ResNet-50 synthetic, batch 32: ${rates[resnet50 32]:--} images/s"
  [ -n "${accuracy:-}" ] && echo "shardflow 1 epoch at batch 64: ${rates[epoch 64]:--} examples/s, $accuracy"
  echo "log: $log"
}

main 2>&1 | tee "$log"
rm -f "$step_out"
exit 0
