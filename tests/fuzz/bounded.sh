#!/bin/sh
# SPDX-License-Identifier: MIT
# A bounded, reproducible libFuzzer pass (CI):
#   bounded.sh TARGET SEED_CORPUS SCRATCH RUNS
# Starts from the tracked seed corpus; what the pass finds goes to SCRATCH
# (emptied first), never into the source tree. Fails on any finding.
set -eu
target=$1 seed=$2 scratch=$3 runs=$4
rm -rf "$scratch"
mkdir -p "$scratch"
exec "$target" -runs="$runs" -seed=1 \
	-artifact_prefix="$scratch/" "$scratch" "$seed"
