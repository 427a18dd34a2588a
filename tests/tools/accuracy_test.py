#!/usr/bin/python3
"""Trains a model with `shardflow train` for 2 epochs and checks the reported test accuracy.

usage: accuracy_test.py path/to/shardflow MODEL MIN_ACCURACY_PERCENT [extra flags...]
"""
import re
import subprocess
import sys
import tempfile


def main():
    binary, model, minimum = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with tempfile.TemporaryDirectory() as ckpt:
        cmd = [binary, "train", "--model", model, "--epochs", "2", "--checkpoint-dir", ckpt,
               "--progress=false"] + sys.argv[4:]
        result = subprocess.run(cmd, capture_output=True, text=True)
    print(result.stdout, result.stderr, sep="")
    if result.returncode != 0:
        print(f"0 passed, 1 failed: shardflow train exited with {result.returncode}")
        sys.exit(1)
    match = re.search(r"test accuracy ([0-9.]+)%", result.stdout)
    accuracy = float(match.group(1)) if match else -1
    ok = accuracy >= minimum
    print(f"{model}: test accuracy {accuracy:.2f}% after 2 epochs, required >= {minimum}%")
    print(f"{int(ok)} passed, {int(not ok)} failed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
