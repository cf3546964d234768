#!/usr/bin/env bash
# CPU per committed transaction in each process, for bench/ingest.sh's
# single-row workload (16 sessions of one-row INSERT transactions, pgbench,
# DURATION s) or, with ROWS=1000 CLIENTS=4, its 1000-row INSERT statements.  Counts utime+stime from /proc: the writer and maintenance
# workers directly, the sessions through the postmaster's cutime+cstime
# (which collects its children's CPU as they exit, so the sessions' whole
# lives, connection set-up included).  Load on the machine disturbs these
# figures much less than it does tps.  PERF=1 also records a call-graph
# profile of the writer, the sessions and the maintenance worker (perf record -g) and prints the
# top symbols of each; PERF_CALLGRAPH replaces -g ("--call-graph dwarf"
# unwinds code built without frame pointers).
#   DURATION=10 bash bench/ingest_cpu.sh
#   SEAL=off DURATION=10 PERF=1 bash bench/ingest_cpu.sh
#   ROWS=1000 CLIENTS=4 DURATION=10 bash bench/ingest_cpu.sh
# TABLE_OPTIONS adds table options ("merge_after_generations '16'");
# CTXSTORE_BENCH_CONF adds postgresql.conf lines (bench/common.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
duration=${DURATION:-10}
clients=${CLIENTS:-16}
rows=${ROWS:-1}

bench_start
trap bench_stop EXIT
create_context_tables single "seal_on_insert '${SEAL:-on}'${TABLE_OPTIONS:+, $TABLE_OPTIONS}"

script=$(mktemp); chmod 644 "$script"
if [ "$rows" = 1 ]; then
  cat >"$script" <<SQL
INSERT INTO ctx_single (id, bot_id, session_id, role, content, metadata, created_at)
VALUES (gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
        'a short agent message of a few words', '{"k": 1}', now());
SQL
else  # bench/ingest.sh's batch statement
  cat >"$script" <<SQL
INSERT INTO ctx_single (id, bot_id, session_id, role, content, metadata, created_at)
SELECT gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
       'a short agent message of a few words ' || g, '{"k": 1}', now()
FROM generate_series(1, $rows) g;
SQL
fi
# Warm-up: the writer opens and claims the store.
pgbench_b -n -f "$script" -c 1 -t 10 >/dev/null 2>&1
postmaster=$(head -1 "$bench_dir/data/postmaster.pid")
writer=$(worker_pid writer)
maint=$(worker_pid maintenance)
read -r s0 w0 m0 <<<"$(cpu_ticks)"
out=$(mktemp)
if [ "${PERF:-0}" = 1 ]; then
  perf_dir=$(mktemp -d /tmp/ctxstore-ingest-perf.XXXXXX)
  pgbench_b -n -f "$script" -c "$clients" -j 2 -T "$duration" >"$out" 2>&1 &
  bench=$!
  sleep 1
  sessions=$(pgrep -d, -P "$postmaster" -f "postgres: postgres bench" || true)
  perf record -q ${PERF_CALLGRAPH:--g} -o "$perf_dir/writer.data" -p "$writer" -- sleep $((duration - 2)) >/dev/null 2>&1 &
  perf record -q ${PERF_CALLGRAPH:--g} -o "$perf_dir/sessions.data" -p "$sessions" -- sleep $((duration - 2)) >/dev/null 2>&1 &
  perf record -q ${PERF_CALLGRAPH:--g} -o "$perf_dir/maintenance.data" -p "$maint" -- sleep $((duration - 2)) >/dev/null 2>&1 &
  wait "$bench"; wait
else
  pgbench_b -n -f "$script" -c "$clients" -j 2 -T "$duration" >"$out" 2>&1
fi
sleep 0.5   # the postmaster reaps the sessions
read -r s1 w1 m1 <<<"$(cpu_ticks)"
txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
tps=$(tps_of <"$out")
rm -f "$script" "$out"
hz=$(getconf CLK_TCK)

echo "ingest CPU, $clients sessions of $rows-row txns, seal_on_insert ${SEAL:-on}, $duration s, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "transactions $txns, tps $tps"
printf '%-12s %10s %12s\n' process cpu_ms us_per_txn
for p in sessions:$((s1 - s0)) writer:$((w1 - w0)) maintenance:$((m1 - m0)); do
  name=${p%%:*}; t=${p#*:}
  printf '%-12s %10s %12s\n' "$name" "$((t * 1000 / hz))" \
    "$(awk -v t="$t" -v hz="$hz" -v n="$txns" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')"
done
if [ "${PERF:-0}" = 1 ]; then
  for who in writer sessions maintenance; do
    echo "top symbols, $who (perf report --no-children, self %):"
    perf report -q -i "$perf_dir/$who.data" --no-children -g none --sort dso,symbol 2>/dev/null |
      grep -v '^$' | grep '%' | head -25 || true
  done
  echo "perf data: $perf_dir"
fi
