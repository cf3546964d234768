#!/usr/bin/env bash
# Scan cost with 1 shard against 64 shards (2 of them with unmerged
# generations): builds bench/shards.c against storage/ and runs it on a
# temporary file:// directory (removed afterwards).
#   SCANS=50 bash bench/shards.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
make -C "$repo/storage" -s build/libctxstore_storage.a
work=$(mktemp -d /tmp/ctxstore-shards.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Wextra -D_GNU_SOURCE -I"$repo/storage" -I"$repo/storage/include" -I"$repo/bench" -o "$work/shards" \
  "$repo/bench/shards.c" "$repo/storage/build/libctxstore_storage.a" \
  -lzstd -lz -ljansson -lavro -lcurl -lcrypto -lexpat -lpthread -lm
mkdir "$work/stores"
"$work/shards" "$work/stores" "${SCANS:-50}"
[ -z "${KEEP:-}" ] || cp -r "$work/stores" "$KEEP"
