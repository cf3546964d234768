#!/usr/bin/env bash
# Key benchmark: what the key index buys, side by side with a heap table's
# primary-key btree in one run.
#   1. point lookups: LOOKUPS random prepared `WHERE id = $1` lookups in one
#      session on a ROWS-row store, merged into the base and indexed, against
#      the heap table (p50 and p99 latency, from pgbench's per-transaction log);
#   2. merges: generation bytes merged against the bytes the maintenance
#      worker's merges read, for INSERTS single-row commits into the big store
#      merged in one merge_wal.
# (The uniqueness check's cost by store size is bench/unique.sh.)
set -euo pipefail
. "$(dirname "$0")/common.sh"
rows=${ROWS:-1000000}
lookups=${LOOKUPS:-1000}
inserts=${INSERTS:-2000}

bench_start
trap bench_stop EXIT
create_context_tables big "merge_after_generations '0'"

load() {  # $1 = n
  echo "SELECT 'id-' || g, 'ext-' || g, 'bot-' || (g % 7), 'session-' || (g / 50), 'user',
          'a short agent message of a few words ' || g, jsonb_build_object('turn', g), NULL::real[],
          timestamptz '2026-01-01' + g * interval '1 second'
        FROM generate_series(1, $1) g"
}
psql_b -c "SET ctxstore.max_transaction_bytes = '4GB'" \
  -c "INSERT INTO heap_big $(load "$rows")" -c "INSERT INTO ctx_big SELECT * FROM heap_big" \
  -c "VACUUM ANALYZE heap_big" \
  -c "SELECT ctxstore.merge_wal('ctx_big')" -c "SELECT ctxstore.create_id_index('ctx_big')" >/dev/null

# Latencies in ms of a pgbench run of script $1 (one client, -t $2), from its
# per-transaction log: prints "p50 p99 mean".
latencies() {
  local f logdir
  f=$(mktemp); echo "$1" > "$f"; chmod 644 "$f"
  logdir=$(mktemp -d); chmod 777 "$logdir"
  (cd "$logdir" && pgbench_b -n -M prepared -f "$f" -c 1 -t "$2" -l >/dev/null 2>&1)
  sort -n -k3 "$logdir"/pgbench_log.* | awk '{ l[NR] = $3 / 1000; s += $3 / 1000 }
    END { printf "%.3f %.3f %.3f", l[int(NR * 0.5)], l[int(NR * 0.99)], s / NR }'
  rm -rf "$f" "$logdir"
}
lookup() {  # $1 = table
  printf '\\set k random(1, %s)\nSELECT * FROM %s WHERE id = %s;\n' "$rows" "$1" "'id-' || :k"
}
insert_new() {  # $1 = table
  printf "INSERT INTO %s (id, session_id, content) VALUES (gen_random_uuid()::text, 's', 'x');\n" "$1"
}

read -r hp50 hp99 _ <<<"$(latencies "$(lookup heap_big)" "$lookups")"
read -r cp50 cp99 _ <<<"$(latencies "$(lookup ctx_big)" "$lookups")"
before=$(psql_b -tAc "SELECT ctxstore.stats('ctx_big')->'merge'")
latencies "$(insert_new ctx_big)" "$inserts" >/dev/null
psql_b -c "SELECT ctxstore.merge_wal('ctx_big')" >/dev/null
after=$(psql_b -tAc "SELECT ctxstore.stats('ctx_big')->'merge'")

delta() {  # $1 = jsonb path: after minus before
  psql_b -tAc "SELECT ('$after'::jsonb #>> '$1')::bigint - ('$before'::jsonb #>> '$1')::bigint"
}
merge_read=$(delta '{requests,bytes_read}')
merged=$(delta '{bytes}')

echo "keys, $rows-row store (merged, indexed), $(nproc) cores"
printf '%-44s %10s %12s %8s\n' measure heap ctxstore ratio
printf '%-44s %10s %12s %8s\n' "point lookup p50 ms ($lookups prepared)" "$hp50" "$cp50" "$(ratio "$cp50" "$hp50")"
printf '%-44s %10s %12s %8s\n' "point lookup p99 ms" "$hp99" "$cp99" "$(ratio "$cp99" "$hp99")"
echo "merge of $inserts single-row commits: $merged bytes merged, $merge_read bytes read ($(ratio "$merge_read" "$merged")x)"
