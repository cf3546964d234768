#!/usr/bin/env bash
# Store lifecycle benchmark (targets in docs/BENCHMARKS.md), one run, side
# by side: COMMITS single-row commits (from CLIENTS sessions, default 1:
# sequential; merging on: the defaults) against the same rows written in
# one batch.  For each store:
# files and bytes on disk and scan time (best of REPEAT)
#   (a) once every generation is merged, before compaction and GC;
#   (b) after ctxstore.compact and ctxstore.gc with retain_versions 1,
#       retain_interval 0 and gc_grace 0 (settled).
# Then the settled single-commit store's objects by prefix, to show which
# ones remain.  Run as root: CTXSTORE_PGBIN=... COMMITS=1000 bash bench/lifecycle.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"
commits=${COMMITS:-1000}
clients=${CLIENTS:-1}
repeat=${REPEAT:-5}

bench_start
trap bench_stop EXIT
settled="retain_versions '1', retain_interval '0', gc_grace '0'"
create_context_tables single "$settled"
create_context_tables batch "$settled"

script=$(mktemp)
cat > "$script" <<SQL
INSERT INTO ctx_single (id, bot_id, session_id, role, content, metadata, created_at)
VALUES (gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
        'a short agent message of a few words', '{"k": 1}', now());
SQL
chmod 644 "$script"
pgbench_b -n -f "$script" -c "$clients" -j "$((clients < 2 ? 1 : 2))" -t "$((commits / clients))" >/dev/null 2>&1
rm -f "$script"
psql_b -c "INSERT INTO ctx_batch SELECT * FROM ctx_single"

merged() {  # merges table $1 until no generation is pending
  for _ in $(seq 100); do
    [ "$(psql_b -tAc "SELECT ctxstore.pending_wal_generations('$1')")" = 0 ] && return
    psql_b -tAc "SELECT ctxstore.merge_wal('$1')" >/dev/null
  done
  echo "lifecycle: $1 still has pending generations" >&2
  exit 1
}
files() { find "$bench_dir/stores/$1" -type f | wc -l; }
bytes() { find "$bench_dir/stores/$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
scan="SELECT count(*), sum(length(content)), max(created_at) FROM"

declare -A f b ms
measure() {  # $1 = when (before, after)
  for t in single batch; do
    f[$1,$t]=$(files "$t"); b[$1,$t]=$(bytes "$t"); ms[$1,$t]=$(best_ms "$scan ctx_$t")
  done
}

merged ctx_single
merged ctx_batch
measure before
for t in single batch; do
  echo "compact ctx_$t: $(psql_b -tAc "SELECT ctxstore.compact('ctx_$t')")"
  echo "gc ctx_$t:      $(psql_b -tAc "SELECT ctxstore.gc('ctx_$t')")"
done
measure after

echo "lifecycle, $commits single-row commits from $clients sessions vs one batch, scan best of $repeat, $(nproc) cores"
printf '%-8s %-14s %7s %10s %9s %9s %9s %9s\n' when store files bytes scan_ms files_x bytes_x scan_x
for w in before after; do
  for t in single batch; do
    printf '%-8s %-14s %7s %10s %9s %9s %9s %9s\n' "$w" "$t" "${f[$w,$t]}" "${b[$w,$t]}" "${ms[$w,$t]}" \
      "$(ratio "${f[$w,$t]}" "${f[$w,batch]}")" "$(ratio "${b[$w,$t]}" "${b[$w,batch]}")" \
      "$(ratio "${ms[$w,$t]}" "${ms[$w,batch]}")"
  done
done

# What remains of each store, by prefix (shard ids and numbers folded).
for t in single batch; do
  echo "settled objects of ctx_$t by prefix: count bytes"
  (cd "$bench_dir/stores/$t" && find . -type f -printf '%P %s\n') |
    sed -E 's#^_shards/[^/ ]+/#_shards/<shard>/#; s#[0-9a-f]{32}#<id>#; s#[0-9]{20}#<n>#' |
    awk '{ k = $1; c[k]++; s[k] += $2 } END { for (k in c) printf "  %-50s %5d %9d\n", k, c[k], s[k] }' | sort
done
