#!/usr/bin/env bash
# CPU per row of two in-memory loops of the ingest path, side by side for
# two trees in one run (bench/cpu_loops.c says what they are): builds the
# harness against BASE's storage/ (a commit, default HEAD~1) and this
# checkout's, runs them alternately RUNS times (default 3) and prints each
# value's median for both and their ratio.
#   bash bench/cpu_loops.sh
#   BASE=2fd2b76 NROWS=200000 RUNS=5 bash bench/cpu_loops.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/common.sh"
base=${BASE:-HEAD~1}
runs=${RUNS:-3}
nrows=${NROWS:-20000}
work=$(mktemp -d /tmp/ctxstore-cpu-loops.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/base"
git -C "$repo" archive "$base" storage | tar -x -C "$work/base"
build() {  # $1 = tree, $2 = binary
  local defs=""
  make -C "$1/storage" -s build/libctxstore_storage.a >/dev/null
  grep -q cx_kc_prefetch "$1/storage/memwal/cx_key_cache.h" && defs=-DHAVE_KC_PREFETCH
  [ -f "$1/storage/util/cx_prefix_sort.h" ] && defs="$defs -DHAVE_PREFIX_SORT"
  cc -O2 -Wall -Wextra -D_GNU_SOURCE $defs -I"$1/storage" -I"$1/storage/include" \
    -o "$2" "$repo/bench/cpu_loops.c" "$1/storage/build/libctxstore_storage.a" \
    -lzstd -lz -ljansson -lavro -lcurl -lcrypto -lexpat -lpthread -lm
}
build "$work/base" "$work/base.bin"
build "$repo" "$work/candidate.bin"
for i in $(seq "$runs"); do
  "$work/base.bin" "$nrows" >>"$work/base.out"
  "$work/candidate.bin" "$nrows" >>"$work/candidate.out"
done
median() {  # $1 = file, $2 = value name
  awk -v k="$2" '$1 == k { print $2 }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
echo "in-memory ingest loops, $nrows rows per sorted run, $runs runs each, load $(cut -d' ' -f1 /proc/loadavg)"
echo "base: $(git -C "$repo" log -1 --format='%h %s' "$base")"
echo "candidate: $repo at $(git -C "$repo" log -1 --format='%h')"
printf '%-26s %10s %10s %8s\n' value base candidate ratio
for k in sort_add_ns_per_row sort_flush_ns_per_row order_ns_per_key keys_lookup_ns_per_key keys_apply_ns_per_key; do
  b=$(median "$work/base.out" "$k"); c=$(median "$work/candidate.out" "$k")
  printf '%-26s %10s %10s %8s\n' "$k" "$b" "$c" "$(ratio "$c" "$b")"
done
