#!/usr/bin/env bash
# Ingest benchmark: ctxstore foreign table vs a heap table with a primary key,
# same rows, same clients, one run.
#   1. 16 sessions of single-row INSERT transactions (pgbench, DURATION s each),
#      sealed (the default) and deferred (seal_on_insert 'false')
#   2. 1000-row INSERT statements (4 sessions)
# Prints tps for both and the ratio ctxstore / heap, plus the store commits
# the writer worker made (group commit: commits < transactions).
set -euo pipefail
. "$(dirname "$0")/common.sh"
duration=${DURATION:-15}

bench_start
trap bench_stop EXIT
create_context_tables single
create_context_tables deferred "seal_on_insert 'false'"
create_context_tables batch

batch_rows() {  # $1 = table
  cat <<SQL
INSERT INTO $1 (id, bot_id, session_id, role, content, metadata, created_at)
SELECT gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
       'a short agent message of a few words ' || g, '{"k": 1}', now()
FROM generate_series(1, 1000) g;
SQL
}

run() {  # $1 = script text, $2 = clients
  local f
  f=$(mktemp); echo "$1" > "$f"; chmod 644 "$f"
  pgbench_b -n -f "$f" -c "$2" -j 2 -T "$duration" 2>&1 | tps_of
  rm -f "$f"
}

heap1=$(run "$(single_row_insert heap_single)" 16)
ctx1=$(run "$(single_row_insert ctx_single)" 16)
heapd=$(run "$(single_row_insert heap_deferred)" 16)
ctxd=$(run "$(single_row_insert ctx_deferred)" 16)
heapb=$(run "$(batch_rows heap_batch)" 4)
ctxb=$(run "$(batch_rows ctx_batch)" 4)
stats=$(psql_b -tAc "SELECT ctxstore.stats('ctx_single')")

echo "ingest, $duration s per run, $(nproc) cores"
printf '%-36s %10s %10s %8s\n' workload heap_tps ctxstore_tps ratio
printf '%-36s %10s %10s %8s\n' "16 sessions, single-row txns" "$heap1" "$ctx1" "$(ratio "$ctx1" "$heap1")"
printf '%-36s %10s %10s %8s\n' "16 sessions, single-row, deferred" "$heapd" "$ctxd" "$(ratio "$ctxd" "$heapd")"
printf '%-36s %10s %10s %8s\n' "4 sessions, 1000-row INSERTs" "$heapb" "$ctxb" "$(ratio "$ctxb" "$heapb")"
echo "single-row store stats: $stats"
# What the maintenance worker read to merge the sealed single-row store.
psql_b -tA -F' ' -c "SELECT s->'merge'->>'merges', round((s->'merge'->'requests'->>'bytes_read')::numeric / 1e6, 2), round((s->'merge'->>'bytes')::numeric / 1e6, 2) FROM ctxstore.stats('ctx_single') s" |
  awk '{ printf "%-36s %8s %10s %10s %10s\n%-36s %8s %10s %10s %10.2f\n", "merges_of", "merges", "read_MB", "merged_MB", "read_per_merged", "16 sessions, single-row txns", $1, $2, $3, ($3 > 0 ? $2 / $3 : 0) }'

