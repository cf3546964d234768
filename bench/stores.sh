#!/usr/bin/env bash
# Many stores: 16 sessions of single-row INSERT transactions written
# round-robin over STORES (1000) stores, each its own foreign table, against
# the same sessions writing one store, in one run.  The round-robin run goes
# twice: with ctxstore.writer_max_open_stores at its default (32), so nearly
# every commit finds its store closed and reopens it, and with room for every
# store (what the reopens cost, apart from the group commits a store loses
# when each commit goes to another store).  Prints the throughputs, their
# ratios to one store, each run's CPU per transaction in the sessions, the
# writer and the maintenance worker (as bench/ingest_cpu.sh counts it: the
# sessions' share includes their connection set-up and, here, their first
# open of each table), and the shard claims per store: "claimed shard" lines
# in the server log / STORES (ctxstore.stats keeps counters for 128 stores
# only).  Every store is written once before the timed runs, which makes
# the one claim each needs.  SEALS (e.g. "4 16") adds a round-robin run
# with every store kept open for each value of
# ctxstore.writer_concurrent_seals (default 8): how much the seals of a
# round gain from overlapping.
#   CTXSTORE_PGBIN=... DURATION=15 STORES=1000 SEALS="16" bash bench/stores.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"
duration=${DURATION:-15}
stores=${STORES:-1000}

bench_start
trap bench_stop EXIT

psql_b <<SQL
CREATE SEQUENCE rr;
DO \$\$
BEGIN
  FOR i IN 0 .. $stores - 1 LOOP
    EXECUTE format('CREATE FOREIGN TABLE s%s (id text NOT NULL, session_id text, content text)
                    SERVER local OPTIONS (uri %L)', i, 'file://$bench_dir/stores/s' || i);
  END LOOP;
  CREATE FOREIGN TABLE one (id text NOT NULL, session_id text, content text)
    SERVER local OPTIONS (uri 'file://$bench_dir/stores/one');
END \$\$;
-- One single-row transaction into table t.
CREATE FUNCTION put(t text, client int) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
  EXECUTE format('INSERT INTO %I VALUES (gen_random_uuid()::text, %L, %L)', t,
                 's' || client, 'a short agent message of a few words');
END \$\$;
-- The timed runs' call: the next of n stores in turn, or with n = 0 the
-- store "one".  Both runs draw from the sequence (and so flush its WAL now
-- and then) and pass put() a computed name, so that they differ only in
-- the table they write.
CREATE FUNCTION put_next(n int, client int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
  i bigint := nextval('rr');
BEGIN
  PERFORM put(CASE WHEN n = 0 THEN 'one' ELSE 's' || (i % n) END, client);
END \$\$;
SQL

# The first write of each store: its one claim, outside the timed run; one
# transaction per store (a transaction writes at most as many stores as the
# writer keeps open).
warm_up() {
  psql_b -c "DO \$\$ BEGIN FOR i IN 0 .. $stores - 1 LOOP PERFORM put('s' || i, 0); COMMIT; END LOOP; END \$\$" >/dev/null
}
warm_up
psql_b -c "SELECT put('one', 0)" >/dev/null

# "tps sessions writer maintenance": the throughput and each process's
# CPU per transaction in us (bench/common.sh, cpu_per_txn).
run() {  # $1 = how many stores the run writes in turn, 0 for "one"
  local f out c0 c1 txns
  f=$(mktemp); echo "SELECT put_next($1, :client_id);" > "$f"; chmod 644 "$f"
  out=$(mktemp)
  c0=$(cpu_ticks)
  pgbench_b -n -f "$f" -c 16 -j 2 -T "$duration" >"$out" 2>&1
  sleep 0.5   # the postmaster reaps the sessions
  c1=$(cpu_ticks)
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
  echo "$(tps_of <"$out") $(cpu_per_txn "$c0" "$c1" "$txns")"
  rm -f "$f" "$out"
}

claims_logged() { grep -cE 'ctxstore writer: (re-)?claimed shard' "$bench_dir/server.log" || true; }

one=$(run 0)
many=$(run "$stores")
claims=$(claims_logged)
psql_b -c "ALTER SYSTEM SET ctxstore.writer_max_open_stores = $((stores + 1))"
as_pg "$pgbin/pg_ctl" -D "$bench_dir/data" -l "$bench_dir/server.log" -w restart >/dev/null
warm_up
all_open=$(run "$stores")
declare -A with_seals
for n in ${SEALS:-}; do
  psql_b -c "ALTER SYSTEM SET ctxstore.writer_concurrent_seals = $n" -c "SELECT pg_reload_conf()" >/dev/null
  with_seals[$n]=$(run "$stores")
done

echo "stores, $duration s per run, 16 sessions, $(nproc) cores (load: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "CPU in us per transaction: sessions, writer, maintenance worker"
row() {  # $1 = the run's name, $2 = its run output
  local r=($2) o=($one)
  printf '%-52s %10s %6s %9s %7s %7s\n' "$1" "${r[0]}" "$(ratio "${r[0]}" "${o[0]}")" "${r[1]}" "${r[2]}" "${r[3]}"
}
printf '%-52s %10s %6s %9s %7s %7s\n' run tps ratio sessions writer maint
row "one store" "$one"
row "$stores stores round-robin, 32 kept open" "$many"
row "$stores stores round-robin, all kept open" "$all_open"
for n in ${SEALS:-}; do
  row "$stores stores round-robin, all open, $n concurrent seals" "${with_seals[$n]}"
done
printf '%-52s %10s\n' "claims per store, 32 kept open (target 1)" "$(ratio "$claims" $((stores + 1)))"
