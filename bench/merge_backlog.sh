#!/usr/bin/env bash
# Merge backlog under sustained sealed single-row commits: CLIENTS pgbench
# sessions of single-row INSERT transactions for DURATION s into one store
# with default options (seal_on_insert, merge after 8 generations, steps of
# merge_max_generations 8), on Azurite (STORE=az, the default) or file://.
# Samples the writer's pending generations every 5 s; prints the samples,
# their maximum, what is pending at the end, tps, seals and merges.
#
#   DURATION=60 CLIENTS=16 bash bench/merge_backlog.sh
#   STORE=file bash bench/merge_backlog.sh
#   CTXSTORE_PGBIN=/opt/pg/usr/lib/postgresql/15/bin bash bench/merge_backlog.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
duration=${DURATION:-60}
clients=${CLIENTS:-16}
store=${STORE:-az}

if [ "$store" = az ] && [ "${1:-}" != run ]; then
  bash "$repo/scripts/emulators.sh" install >/dev/null
  exec bash "$repo/scripts/with-emulators.sh" bash "$0" run
fi
. "$repo/bench/common.sh"

bench_start
trap bench_stop EXIT
if [ "$store" = az ]; then
  create_az_server azurite "$CX_TEST_AZ_ENDPOINT"
  psql_b -c "CREATE FOREIGN TABLE ctx ($context_columns)
    SERVER azurite OPTIONS (uri 'az://bench/backlog$$', key 'id')"
else
  psql_b -c "CREATE FOREIGN TABLE ctx ($context_columns)
    SERVER local OPTIONS (uri 'file://$bench_dir/stores/backlog', key 'id')"
fi

script=$(mktemp); chmod 644 "$script"
single_row_insert ctx > "$script"
stat() { psql_b -tAc "SELECT ctxstore.stats('ctx') #>> '{$1}'"; }

pgbench_b -n -f "$script" -c "$clients" -j 2 -T "$duration" > "$script.out" 2>&1 &
bench_pid=$!
samples=()
while kill -0 "$bench_pid" 2>/dev/null; do
  sleep 5
  samples+=("$(stat writer,pending_generations)")
done
wait "$bench_pid"
max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)

echo "merge backlog, $store store, $clients sessions, $duration s, $(nproc) cores"
echo "pending generations every 5 s: ${samples[*]}"
echo "max pending: $max; at the end: $(stat writer,pending_generations)"
echo "tps: $(tps_of < "$script.out")"
echo "seals: $(stat writer,seals); merge calls: $(stat merge,merges);" \
  "generations merged: $(stat merge,generations); merges_behind: $(stat merge,merges_behind)"
rm -f "$script" "$script.out"
