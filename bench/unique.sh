#!/usr/bin/env bash
# The cost of an INSERT's uniqueness check against the base: single-row
# INSERT transactions of new random keys (one session, COMMITS each) into a
# merged store of 1,000 rows and one of ROWS (1,000,000) rows, both
# unique_key 'true', side by side with the big store's twin under
# unique_key 'false' (no check: the write path alone).  Keys are random
# uuids, so min/max statistics cannot rule a fragment out: without a key
# index the check reads the key column of the base.  Timed merges and
# cleanups are off, so only the commits run.  Prints the average commit
# latency of each and the ratios; each store is measured twice, alternately,
# and the better run counts.
#
#   bash bench/unique.sh
#   ROWS=200000 COMMITS=200 bash bench/unique.sh
#   CTXSTORE_PGBIN=/opt/pg/usr/lib/postgresql/15/bin bash bench/unique.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rows=${ROWS:-1000000}
commits=${COMMITS:-300}
. "$repo/bench/common.sh"

bench_start
trap bench_stop EXIT

opts="merge_after_generations '0', cleanup_interval '0', flush_interval '0'"
load() {  # $1 = table, $2 = rows, $3 = unique_key
  psql_b >/dev/null <<SQL
CREATE FOREIGN TABLE $1 (id text NOT NULL, external_id text, n int)
  SERVER local OPTIONS (uri 'file://$bench_dir/stores/$1', unique_key '$3', $opts);
INSERT INTO $1 SELECT gen_random_uuid()::text, 'e' || i, i FROM generate_series(1, $2) i;
SELECT ctxstore.merge_wal('$1');
SQL
}
load small 1000 true
load big "$rows" true
load big_nocheck "$rows" false

script=$(mktemp); chmod 644 "$script"
# Average latency in ms of COMMITS single-row INSERTs into table $1.
latency() {
  echo "INSERT INTO $1 VALUES (gen_random_uuid()::text, 'new', 0);" > "$script"
  pgbench_b -n -f "$script" -c 1 -t "$commits" 2>/dev/null |
    sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

declare -A ms
for round in 1 2; do
  for t in small big big_nocheck; do
    l=$(latency "$t")
    ms[$t]=$([ "$round" = 1 ] && echo "$l" || best "$l" "${ms[$t]}")
  done
done
rm -f "$script"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "uniqueness check, $commits single-row INSERTs each, one session, $(nproc) cores"
printf '%-32s %10s\n' "store" "avg ms"
printf '%-32s %10s\n' "1,000 rows, unique_key true" "${ms[small]}"
printf '%-32s %10s\n' "$rows rows, unique_key true" "${ms[big]}"
printf '%-32s %10s\n' "$rows rows, unique_key false" "${ms[big_nocheck]}"
echo "big / small (target <= 1.5): $(ratio "${ms[big]}" "${ms[small]}")"
echo "big / big without the check: $(ratio "${ms[big]}" "${ms[big_nocheck]}")"
