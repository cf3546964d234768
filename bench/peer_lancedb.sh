#!/usr/bin/env bash
# The system ctxstore replaces, side by side in one run: single-row appends
# to a LanceDB table on the local filesystem, one table.add per row (the
# replaced write path; bench/peer_lancedb.mjs, @lancedb/lancedb pinned in
# bench/common.sh), against single-row INSERT transactions into one ctxstore
# foreign table (file:// store, default options: seal_on_insert 'true',
# merges by the maintenance worker after 8 generations).  For each N
# (appends) and each WRITERS (LanceDB: Node processes appending to one table,
# its own commit-conflict retries part of each add; ctxstore: pgbench
# sessions), both systems:
#   - append rows 1..N, one per add / transaction: appends per second (N over
#     the first start to the last end), p50 / p99 latency per append;
#   - files (find -type f) and bytes of the table / store directory;
#   - scan every column of every row, median of REPEAT in one process /
#     session after a warm-up, against the same rows written in one batch
#     (one createTable / one INSERT) to another table;
#   - settle and scan again: LanceDB's optimize() (compaction and cleanup of
#     every old version), ctxstore's merge_wal until nothing is pending, then
#     ctxstore.compact and ctxstore.gc (the tables set retain_versions 1,
#     retain_interval 0, gc_grace 0, which act on GC only).
# "ahead" is yes where ctxstore's number is the better one.
#
# Every Node process is bounded by LANCE_TIMEOUT s (default 1800): from 8
# writers at N = 10,000, LanceDB's conflict retries can starve writers.
# LANCE_APPEND_S (default 0: none) stops LanceDB's writers appending after
# that many seconds (a writer stuck in one add runs on until LANCE_TIMEOUT
# kills it): the rows then say how many of the N appends LanceDB made, its
# rates are over those (until the last writer ended or was killed), and
# its scans read those rows.
#
#   N="1000 10000" WRITERS="1 8" REPEAT=5 bash bench/peer_lancedb.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"
ns=${N:-1000 10000}
writer_counts=${WRITERS:-1 8}
repeat=${REPEAT:-5}
lance_dir=$bench_dir/lance
columns="id text NOT NULL, session_id text, role text, content text, created_at timestamptz"
gc_now="retain_versions '1', retain_interval '0', gc_grace '0'"
# Row n, as bench/peer_lancedb.mjs makes it.
row_sql="SELECT 'r' || lpad(n::text, 8, '0'), 's' || n % 50, 'user',
  'a short agent message of a few words ' || n, '2026-12-01 00:00:00+00'::timestamptz + n * interval '1 second'"
scan_sql="SELECT count(*), sum(length(id) + length(session_id) + length(role) + length(content)),
  max(created_at) FROM"

lance_timeout=${LANCE_TIMEOUT:-1800}	# s, per Node process (writer, scan, optimize)
lance() { LANCE_PREFIX=$lance_prefix timeout "$lance_timeout" node "$repo/bench/peer_lancedb.mjs" "$1" "$lance_dir" "${@:2}" 2>>"$bench_dir/lance.log"; }
value_of() { sed -n "s/^$1\t//p"; }  # the value of key $1 in "key<TAB>value" lines
files_of() { find "$1" -type f | wc -l; }
bytes_of() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
store_dir() { echo "$bench_dir/stores/$1"; }

create_store_table() {  # $1 = name
  psql_b -c "CREATE FOREIGN TABLE $1 ($columns) SERVER local
    OPTIONS (uri 'file://$(store_dir "$1")', key 'id', $gc_now)" -c "CREATE SEQUENCE $1_n"
}

# p50, p99 (ms) of the latencies in file $1 (one per line) and appends per
# second: $2 appends from epoch $3 s to $4 s.
append_stats() {
  local pct
  pct=$(sort -n "$1" | awk '{ v[NR] = $1 }
    function at(q) { i = int(q * NR + 0.999999); return v[i < 1 ? 1 : i] }
    END { printf "%.2f %.2f", at(0.5), at(0.99) }')
  echo "$(awk -v n="$2" -v s="$3" -v e="$4" 'BEGIN { printf "%.0f", n / (e - s) }') $pct"
}

lance_append() {  # $1 = table, $2 = N, $3 = writers; prints appends/s p50 p99 failed-adds appends-made
  local out=$bench_dir/lance_out w pid pids=()
  rm -rf "$out"; mkdir -p "$out"
  lance create "$1"
  for ((w = 0; w < $3; w++)); do lance append "$1" "$2" "$3" "$w" "$out/go" >"$out/$w" & pids+=($!); done
  # every writer has opened the table: let them all start (at most 120 s)
  for _ in $(seq 1200); do
    [ "$(find "$out" -name 'go.ready.*' | wc -l)" = "$3" ] && break
    sleep 0.1
  done
  touch "$out/go"
  # A writer killed at LANCE_TIMEOUT (stuck in one add) ends then.
  for pid in "${pids[@]}"; do
    wait "$pid" || echo "a LanceDB writer failed or ran past LANCE_TIMEOUT=$lance_timeout s" >&2
  done
  cat "$out"/[0-9]* | value_of lat >"$out/lat"
  echo "$(append_stats "$out/lat" "$(wc -l <"$out/lat")" \
    "$(cat "$out"/[0-9]* | value_of start | sort -n | head -1 | awk '{ printf "%.3f\n", $1 / 1000 }')" \
    "$(date +%s.%N)") \
    $(cat "$out"/[0-9]* | value_of failed | awk '{ s += $1 } END { print s }') $(wc -l <"$out/lat")"
}

ctx_append() {  # $1 = table, $2 = N, $3 = sessions; prints appends/s p50 p99
  local logs=$bench_dir/pgbench_logs script
  rm -rf "$logs"; mkdir -p "$logs"; chmod 777 "$logs"
  script=$logs/append.sql
  echo "INSERT INTO $1 (id, session_id, role, content, created_at) $row_sql FROM (SELECT nextval('$1_n') n) s;" >"$script"
  (cd "$logs" && pgbench_b -n -f "$script" -c "$3" -j "$(($3 < 2 ? 1 : 2))" -t "$(($2 / $3))" -l >/dev/null)
  # log lines: client transaction latency_us script end_epoch_s end_us
  cat "$logs"/pgbench_log.* | awk '{ print $3 / 1000 }' >"$logs/lat"
  echo "$(append_stats "$logs/lat" "$2" \
    "$(cat "$logs"/pgbench_log.* | awk '{ printf "%.6f\n", $5 + $6 / 1e6 - $3 / 1e6 }' | sort -n | head -1)" \
    "$(cat "$logs"/pgbench_log.* | awk '{ printf "%.6f\n", $5 + $6 / 1e6 }' | sort -n | tail -1)")"
}

# The count-triggered merges still running after the last commit finish on
# their own: wait for them (at most 60 s), as a reader would meet the store.
wait_for_merges() {
  for _ in $(seq 600); do
    [ "$(psql_b -tAc "SELECT ctxstore.pending_wal_generations('$1') < 8")" = t ] && return
    sleep 0.1
  done
}

settle_store() {  # $1 = table; prints what compact and gc did
  local pending compacted deleted
  for _ in $(seq 50); do
    psql_b -c "SELECT ctxstore.merge_wal('$1')" >/dev/null
    pending=$(psql_b -tAc "SELECT ctxstore.pending_wal_generations('$1')")
    [ "$pending" = 0 ] && break
  done
  compacted=$(psql_b -tAc "SELECT format('compacted %s, %s inputs', c->>'compacted', c->>'inputs')
    FROM ctxstore.compact('$1') c")
  deleted=$(psql_b -tAc "SELECT ctxstore.gc('$1')->>'objects_deleted'")
  echo "compact: $compacted; gc: $deleted objects deleted"
}

ctx_scan() {  # $1 = table, $2 = rows expected
  [ "$(psql_b -tAc "SELECT count(*) FROM $1")" = "$2" ] || { echo "$1 does not hold $2 rows" >&2; exit 1; }
  median_ms "" "$scan_sql $1"
}
lance_scan() {  # $1 = table, $2 = rows expected
  local o
  o=$(lance scan "$1" "$repeat")
  [ "$(value_of rows <<<"$o")" = "$2" ] || { echo "LanceDB $1 does not hold $2 rows" >&2; exit 1; }
  value_of scan_ms <<<"$o"
}

row() { printf '%-36s %14s %14s %6s\n' "$@"; }
# One line: label, LanceDB's value, ctxstore's, and whether ctxstore's is
# the better one ($4 = "higher" or "lower" is better).
compare() {
  row "$1" "$2" "$3" "$(awk -v l="$2" -v c="$3" -v b="$4" 'BEGIN { print ((b == "higher" ? c > l : c < l) ? "yes" : "no") }')"
}

measure() {  # $1 = N, $2 = writers
  local n=$1 w=$2 tag=${1}_$2 la lb ca cb
  la=lance_app_$tag lb=lance_batch_$tag ca=ctx_app_$tag cb=ctx_batch_$tag
  local -a lapp capp
  local appended
  appended=$(lance_append "$la" "$n" "$w"); read -r -a lapp <<<"$appended"
  create_store_table "$ca"; create_store_table "$cb"
  appended=$(ctx_append "$ca" "$n" "$w"); read -r -a capp <<<"$appended"
  wait_for_merges "$ca"
  lance batch "$lb" "$n"
  psql_b -c "INSERT INTO $cb SELECT * FROM $ca"
  local lf lbytes cf cbytes lscan lbscan cscan cbscan lbf cbf
  lf=$(files_of "$lance_dir/$la.lance"); lbytes=$(bytes_of "$lance_dir/$la.lance")
  cf=$(files_of "$(store_dir "$ca")"); cbytes=$(bytes_of "$(store_dir "$ca")")
  lbf=$(files_of "$lance_dir/$lb.lance"); cbf=$(files_of "$(store_dir "$cb")")
  lscan=$(lance_scan "$la" "${lapp[4]}"); lbscan=$(lance_scan "$lb" "$n")
  cscan=$(ctx_scan "$ca" "$n"); cbscan=$(ctx_scan "$cb" "$n")
  local lopt t0 csettle settled
  lopt=$(lance optimize "$la" | value_of optimize_s)
  t0=$(date +%s.%N); settled=$(settle_store "$ca"); csettle=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  local lsf lsbytes csf csbytes lsscan csscan
  lsf=$(files_of "$lance_dir/$la.lance"); lsbytes=$(bytes_of "$lance_dir/$la.lance")
  csf=$(files_of "$(store_dir "$ca")"); csbytes=$(bytes_of "$(store_dir "$ca")")
  lsscan=$(lance_scan "$la" "${lapp[4]}"); csscan=$(ctx_scan "$ca" "$n")

  echo
  [ "${lapp[4]}" = "$n" ] ||
    echo "LanceDB stopped after LANCE_APPEND_S=${LANCE_APPEND_S:-0} s: ${lapp[4]} of $n appends made (its rows below are over those)"
  echo "N = $n appends from $w writer(s); LanceDB failed adds retried: ${lapp[3]};" \
    "settling took LanceDB ${lopt} s, ctxstore ${csettle} s ($settled)"
  row "" LanceDB ctxstore ahead
  compare "appends/s" "${lapp[0]}" "${capp[0]}" higher
  compare "p50 append ms" "${lapp[1]}" "${capp[1]}" lower
  compare "p99 append ms" "${lapp[2]}" "${capp[2]}" lower
  compare "files after appends" "$lf" "$cf" lower
  compare "bytes after appends" "$lbytes" "$cbytes" lower
  compare "scan ms, one batch ($lbf / $cbf files)" "$lbscan" "$cbscan" lower
  compare "scan ms after appends" "$lscan" "$cscan" lower
  compare "  x one batch" "$(ratio "$lscan" "$lbscan")" "$(ratio "$cscan" "$cbscan")" lower
  compare "files settled" "$lsf" "$csf" lower
  compare "bytes settled" "$lsbytes" "$csbytes" lower
  compare "scan ms settled" "$lsscan" "$csscan" lower
  compare "  x one batch" "$(ratio "$lsscan" "$lbscan")" "$(ratio "$csscan" "$cbscan")" lower
}

install_lance
bench_start
trap bench_stop EXIT
mkdir -p "$lance_dir"
echo "LanceDB ${lance_packages[0]##*@} against ctxstore, single-row appends, scans median of $repeat," \
  "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for n in $ns; do
  for w in $writer_counts; do
    [ $((n % w)) = 0 ] || { echo "N=$n is not a multiple of WRITERS=$w" >&2; exit 1; }
    measure "$n" "$w"
  done
done
echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "reproduce (as root): N=\"$ns\" WRITERS=\"$writer_counts\" REPEAT=$repeat bash bench/peer_lancedb.sh"
