#!/usr/bin/env bash
# MemWAL benchmark (targets in docs/BENCHMARKS.md), one run, side by side:
#   1. read cost after COMMITS single-row commits (CLIENTS sessions) with
#      merging on (the defaults), vs the same rows written in one batch, vs
#      merging off: scan time (best of REPEAT) and fragments read;
#   2. object writes (PUTs) per committed transaction, from ctxstore.stats();
#   3. p99 commit latency of single-row INSERTs while a merge of MERGE_ROWS
#      rows runs on the same store, vs the same load on a twin store of the
#      same rows with no merge running.
set -euo pipefail
. "$(dirname "$0")/common.sh"
commits=${COMMITS:-10000}
clients=${CLIENTS:-8}
repeat=${REPEAT:-5}
merge_rows=${MERGE_ROWS:-1000000}

bench_start
trap bench_stop EXIT
no_timers="flush_interval '1h', cleanup_interval '0'"
create_context_tables merge_on
create_context_tables merge_off "merge_after_generations '0', pending_generations_max '100000', $no_timers"
create_context_tables batch
for t in latency latency_idle; do
  create_context_tables $t "merge_after_generations '0', pending_generations_max '100000', $no_timers"
done

insert_one() {  # $1 = table
  cat <<SQL
INSERT INTO $1 (id, bot_id, session_id, role, content, metadata, created_at)
VALUES (gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
        'a short agent message of a few words', '{"k": 1}', now());
SQL
}

pgbench_script() {  # $1 = script text, then pgbench options
  local f; f=$(mktemp); echo "$1" > "$f"; chmod 644 "$f"; shift
  pgbench_b -n -f "$f" "$@" 2>&1
  rm -f "$f"
}

# ---- 1. read cost ----
per_client=$((commits / clients))
for t in merge_on merge_off; do
  pgbench_script "$(insert_one ctx_$t)" -c "$clients" -j 2 -t "$per_client" >/dev/null
done
psql_b -c "INSERT INTO ctx_batch SELECT * FROM ctx_merge_on"
# Let the count-triggered merges that are still running finish.
for _ in $(seq 600); do
  [ "$(psql_b -tAc "SELECT ctxstore.pending_wal_generations('ctx_merge_on') < 8")" = t ] && break
  sleep 0.1
done

scan="SELECT count(*), sum(length(content)), max(created_at) FROM"
fragments() {  # fragments the scan of table $1 opens (EXPLAIN ANALYZE)
  psql_b -tAc "EXPLAIN (ANALYZE, FORMAT JSON) $scan $1" |
    sed -n 's/.*"Fragments Read": \([0-9]*\).*/\1/p' | head -1
}
pending() { psql_b -tAc "SELECT ctxstore.pending_wal_generations('$1')"; }
puts_per_txn() {  # writer PUTs per acknowledged transaction of table $1
  psql_b -tAc "SELECT round((s #>> '{writer,requests,puts}')::numeric / (s->>'acked_transactions')::numeric, 2),
                      s->>'acked_transactions', s #>> '{merge,merges}',
                      (s #>> '{merge,requests,puts}')::bigint + (s #>> '{compaction,requests,puts}')::bigint
               FROM ctxstore.stats('$1') s"
}
ms_on=$(best_ms "$scan ctx_merge_on"); ms_off=$(best_ms "$scan ctx_merge_off"); ms_batch=$(best_ms "$scan ctx_batch")

echo "memwal, $commits single-row commits from $clients sessions, best of $repeat, $(nproc) cores"
printf '%-30s %10s %10s %9s %12s\n' store scan_ms fragments pending "vs batch"
printf '%-30s %10s %10s %9s %12s\n' "one batch" "$ms_batch" "$(fragments ctx_batch)" "$(pending ctx_batch)" 1.00
printf '%-30s %10s %10s %9s %12s\n' "single commits, merging on" "$ms_on" "$(fragments ctx_merge_on)" "$(pending ctx_merge_on)" "$(ratio "$ms_on" "$ms_batch")"
printf '%-30s %10s %10s %9s %12s\n' "single commits, merging off" "$ms_off" "$(fragments ctx_merge_off)" "$(pending ctx_merge_off)" "$(ratio "$ms_off" "$ms_batch")"

# ---- 2. object writes per commit ----
echo "writer PUTs per transaction | transactions | merges | maintenance PUTs"
echo "merging on:  $(puts_per_txn ctx_merge_on)"
echo "merging off: $(puts_per_txn ctx_merge_off)"

# ---- 3. commit latency during a merge vs idle ----
p99() {  # p99 and max latency (ms) of a pgbench per-transaction log in dir $1
  cat "$1"/pgbench_log.* | awk '{print $3 / 1000}' | sort -n |
    awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f %.1f %d", v[i], v[NR], NR }'
}
latency_run() {  # $1 = log dir, $2 = table; 4 sessions of single-row INSERTs for 5 s
  mkdir -p "$1"; chmod 777 "$1"
  (cd "$1" && pgbench_script "$(insert_one "$2")" -c 4 -j 2 -T 5 -l >/dev/null)
}
# Idle and during the merge on twin stores of the same rows: each commit adds
# a generation that every later seal's shard manifest lists (merging is off),
# so both runs must start from the same pending generations.
for t in latency latency_idle; do
  psql_b -c "INSERT INTO ctx_$t SELECT * FROM ctx_batch" \
         -c "INSERT INTO ctx_$t (id, session_id, content) SELECT 'bulk-' || g, 's', repeat('x', 100) FROM generate_series(1, $merge_rows) g"
done
logs=$(mktemp -d)
latency_run "$logs/idle" ctx_latency_idle
(psql_b -c '\timing on' -c "SELECT ctxstore.merge_wal('ctx_latency')" |
   sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' > "$logs/merge_ms") &
merge_pid=$!
latency_run "$logs/merge" ctx_latency
wait "$merge_pid"
echo "commit latency, 4 sessions of single-row INSERTs, 5 s; merge_wal of $((merge_rows + commits))+ pending rows took $(cat "$logs/merge_ms") ms"
printf '%-22s %8s %8s %8s\n' when p99_ms max_ms txns
printf '%-22s %8s %8s %8s\n' idle $(p99 "$logs/idle")
printf '%-22s %8s %8s %8s\n' "during a merge" $(p99 "$logs/merge")
rm -rf "$logs"
