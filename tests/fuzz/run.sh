#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer harness on its checked-in corpus for a while:
#   run.sh HARNESS NAME SECONDS SRC_DIR WORK_DIR
# New inputs go to WORK_DIR/corpus/NAME (the checked-in tests/fuzz/corpus/NAME is only read);
# a crash, leak, timeout or OOM leaves its input in WORK_DIR/artifacts and fails the run.
set -euo pipefail
harness=$1 name=$2 seconds=$3 src=$4 work=$5
mkdir -p "$work/corpus/$name" "$work/artifacts"
# Limits: an input that takes 10 s or 512 MB is a finding (the configuration reproducer once
# took 1.9 GB in 6 s). Requests over 64 KB are not interesting to any of these parsers.
exec "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" \
  "$work/corpus/$name" "$src/tests/fuzz/corpus/$name"
