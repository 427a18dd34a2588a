#!/bin/sh
echo "shardflow's Bazel build does not collect coverage (bazel/README.md)" >&2
exit 1
