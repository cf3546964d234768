#!/usr/bin/env bash
# Object-store commit cost: a resident writer (one store handle and one shard
# writer, reused by every append, as the writer worker keeps them) against a
# fresh handle and writer per append (the write path ctxstore replaces), on
# a private Azurite with SharedKey authentication.  Prints per-commit latency
# (p50, p99, mean), requests per commit and new connections, and the ratios.
#
#   APPENDS=300 bash bench/objstore.sh
#   DELAY_MS=5 bash bench/objstore.sh     every answer held 5 ms by the fault
#                                         proxy: a network round trip per request
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
appends=${APPENDS:-300}
delay_ms=${DELAY_MS:-0}

if [ "${1:-}" != run ]; then
  bash "$repo/scripts/emulators.sh" install
  make -C "$repo/storage" -s build/libctxstore_storage.a
  bin=$(mktemp -d /tmp/ctxstore-objbench.XXXXXX)
  trap 'rm -rf "$bin"' EXIT
  cc -O2 -Wall -D_GNU_SOURCE -I"$repo/storage" -I"$repo/storage/include" -o "$bin/objstore_bench" \
    "$repo/bench/objstore_bench.c" "$repo/storage/build/libctxstore_storage.a" \
    -lzstd -lz -ljansson -lavro -lcurl -lcrypto -lexpat -lpthread -lm
  # Private emulators on free ports, stopped afterwards.
  BENCH_BIN="$bin/objstore_bench" bash "$repo/scripts/with-emulators.sh" bash "$0" run
  exit
fi

endpoint=$CX_TEST_AZ_ENDPOINT
if [ "$delay_ms" != 0 ]; then
  endpoint=$CX_TEST_AZ_PROXY
  curl -sf -X POST "$CX_TEST_AZ_PROXY_CTL/faults" -H 'content-type: application/json' \
    -d "{\"action\": \"delay\", \"ms\": $delay_ms, \"count\": 100000000}" >/dev/null
fi
perl -I"$repo/t" -MCxStores -e 'CxStores::az_create_container("bench")'
echo "Azurite blob service, $(nproc) cores; per-request delay: ${delay_ms} ms"
"$BENCH_BIN" az://bench/run$$ "$appends" endpoint="$endpoint" \
  account_name="$CX_TEST_AZ_ACCOUNT" account_key="$CX_TEST_AZ_KEY"
