#!/usr/bin/env bash
# Scan benchmark: the same ROWS wide context rows in a heap table and in a
# ctxstore foreign table; times a 3-column projection and whole-row scans
# (best of REPEAT) once the load is merged into the base (and the projection
# once before, while it is an unmerged generation), and compares stored size
# (heap + TOAST vs store files).
set -euo pipefail
. "$(dirname "$0")/common.sh"
rows=${ROWS:-200000}
repeat=${REPEAT:-5}

bench_start
trap bench_stop EXIT
create_context_tables scan

load="SELECT 'id-' || g, NULL, 'bot-' || (g % 7), 'session-' || (g / 50), (ARRAY['user','assistant','tool'])[1 + g % 3],
        repeat('The agent considered the request and answered with care. ', 1 + g % 20) || g,
        jsonb_build_object('turn', g, 'lang', 'en', 'tokens', g % 900),
        ARRAY[random(), random(), random(), random(), random(), random(), random(), random()]::real[],
        timestamptz '2026-01-01' + g * interval '1 second'
      FROM generate_series(1, $rows) g"
psql_b -c "INSERT INTO heap_scan $load" -c "INSERT INTO ctx_scan SELECT * FROM heap_scan" -c "VACUUM ANALYZE heap_scan"
# The load is one generation; time the store as cleanup leaves it (merged
# into the base), and once as loaded (a generation, read with key
# de-duplication).
unmerged=$(best_ms "SELECT count(*), max(session_id), max(role), max(created_at) FROM ctx_scan")
psql_b -c "SELECT ctxstore.merge_wal('ctx_scan')" >/dev/null

proj="SELECT count(*), max(session_id), max(role), max(created_at) FROM"
whole="SELECT count(*), sum(length(t::text)) FROM"
hp=$(best_ms "$proj heap_scan")
cp=$(best_ms "$proj ctx_scan")
hw=$(best_ms "$whole heap_scan t")
cw=$(best_ms "$whole ctx_scan t")
heap_bytes=$(psql_b -tAc "SELECT pg_table_size('heap_scan')")
store_bytes=$(du -sb "$bench_dir/stores/scan" | cut -f1)

echo "scan, $rows rows, best of $repeat, $(nproc) cores"
printf '%-28s %10s %12s %14s\n' query heap_ms ctxstore_ms "speedup(heap/ctx)"
printf '%-28s %10s %12s %14s\n' "3 projected columns" "$hp" "$cp" "$(ratio "$hp" "$cp")"
printf '%-28s %10s %12s %14s\n' "whole rows" "$hw" "$cw" "$(ratio "$hw" "$cw")"
printf '%-28s %10s %12s %14s\n' "3 columns, before merging" "$hp" "$unmerged" "$(ratio "$hp" "$unmerged")"
printf '%-28s %10s %12s %14s\n' "stored bytes" "$heap_bytes" "$store_bytes" "$(ratio "$store_bytes" "$heap_bytes") of heap"
