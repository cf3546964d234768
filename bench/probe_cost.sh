#!/usr/bin/env bash
# Instructions per uniqueness probe of one new key (the writer's per-request
# cx_base_probe) against the latest base of STORE, a file:// store a bench
# left (e.g. bench/ingest_cpu.sh's $CTXSTORE_BENCH_DIR/stores/single; copy it
# first, a store a server still writes moves under the count): builds
# bench/probe_cost.c against TREE's storage/ (default this checkout; for
# another build: git archive <commit> storage | tar -x -C <dir>), runs it
# under callgrind for N = 100 and N = 1100 and prints the difference / 1000.
#   STORE=file:///var/tmp/probe_store bash bench/probe_cost.sh
#   TREE=/var/tmp/base STORE=file:///var/tmp/probe_store bash bench/probe_cost.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=${TREE:-$repo}
make -C "$tree/storage" -s build/libctxstore_storage.a
work=$(mktemp -d /tmp/ctxstore-probe-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Wextra -D_GNU_SOURCE -I"$tree/storage" -I"$tree/storage/include" -o "$work/probe_cost" \
  "$repo/bench/probe_cost.c" "$tree/storage/build/libctxstore_storage.a" \
  -lzstd -lz -ljansson -lavro -lcurl -lcrypto -lexpat -lpthread -lm
instructions() {  # $1 = N
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" "$work/probe_cost" "$STORE" "$1" 2>&1 |
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p'
}
"$work/probe_cost" "$STORE" 1
short=$(instructions 100)
long=$(instructions 1100)
echo "instructions per probe: $(( (long - short) / 1000 )) ($tree)"
