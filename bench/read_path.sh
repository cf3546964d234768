#!/usr/bin/env bash
# Read-path benchmark: the queries agent platforms run most, side by side in
# one run on ROWS wide context rows (DIM-dimension embeddings, BOTS bots,
# sessions of ~50 turns arriving interleaved in time order):
#   - a ctxstore foreign table clustered by sort_key 'session_id, created_at'
#     (or "unclustered" when this build has no sort_key option), merged into
#     its base;
#   - a heap table with a primary key and a btree on (session_id, created_at);
#   - LanceDB (@lancedb/lancedb, pinned) for the top-10 cosine queries, exact
#     flat search over the same vectors (bench/read_path_lance.mjs).
# Every query runs REPEAT times after a warm-up in one session, with
# max_parallel_workers_per_gather = 2 (the heap's parallel plans on the same
# cores); the table shows the medians, ratios (> 1: ctxstore is faster) and
# whether both tables returned the same answer.
#
#   ROWS=20000 bash bench/read_path.sh      (a quick check; default 1,000,000)
set -euo pipefail
. "$(dirname "$0")/common.sh"
rows=${ROWS:-1000000}
dim=${DIM:-768}
bots=${BOTS:-10}
repeat=${REPEAT:-5}
batch=${BATCH:-100000}		# rows per INSERT ... SELECT into the store
k=10
bot=bot-3					# the filtered top-10's bot
columns="id text NOT NULL, session_id text, bot_id text, created_at timestamptz, role text,
  content text, tokens int, meta jsonb, embedding real[]"

has_option() { [ "$(psql_b -tAc "SELECT count(*) FROM ctxstore.options() WHERE name = '$1'")" = 1 ]; }
# (to_regproc is NULL for an overloaded name: real[] and float8[] versions)
has_cosine() { [ "$(psql_b -tAc "SELECT count(*) > 0 FROM pg_proc WHERE proname = 'cosine_distance' AND pronamespace = 'ctxstore'::regnamespace")" = t ]; }
seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

create_tables() {  # $1 = "clustered" or "unclustered"
  local sort=""
  [ "$1" = clustered ] && sort=", sort_key 'session_id, created_at'"
  psql_b -c "CREATE TABLE heap_rp ($columns)" -c "CREATE FOREIGN TABLE ctx_rp ($columns)
    SERVER local OPTIONS (uri 'file://$bench_dir/stores/rp', key 'id'$sort)"
}

load_heap() {
  node "$repo/bench/read_path_data.mjs" rows "$rows" "$dim" "$bots" | psql_b -c "COPY heap_rp FROM STDIN"
  psql_b -c "ALTER TABLE heap_rp ADD PRIMARY KEY (id)" \
    -c "CREATE INDEX heap_rp_session ON heap_rp (session_id, created_at)" -c "VACUUM ANALYZE heap_rp"
}

# The store is loaded from the heap in batches of ids (one generation each),
# then merged into its base: the state the maintenance worker leaves.
load_store() {
  local lo args=(-c "SET ctxstore.max_transaction_bytes = '4GB'") pending tries
  for ((lo = 1; lo <= rows; lo += batch)); do
    args+=(-c "INSERT INTO ctx_rp SELECT * FROM heap_rp
      WHERE id >= 't$(printf %09d "$lo")' AND id < 't$(printf %09d $((lo + batch)))'")
  done
  psql_b "${args[@]}"
  for tries in $(seq 20); do
    psql_b -c "SELECT ctxstore.merge_wal('ctx_rp')" >/dev/null
    pending=$(psql_b -tAc "SELECT ctxstore.pending_wal_generations('ctx_rp')")
    [ "$pending" = 0 ] && return
  done
  echo "the store still has $pending unmerged generations after $tries merges" >&2
  exit 1
}

parallel="SET max_parallel_workers_per_gather = 2;"
in_session() { psql_b -tA -c "$parallel $1" -c "$2"; }
same() {  # $1, $2 on one table against $3, $4 on the other
  local a b
  a=$(in_session "$1" "$2")
  b=$(in_session "$3" "$4")
  [ -n "$a" ] && [ "$a" = "$b" ] && echo same || echo DIFFERENT
}

# "Row Groups Read: 2" and the like from EXPLAIN ANALYZE of statement $2.
row_groups() {
  in_session "$1" "EXPLAIN (ANALYZE, COSTS OFF) $2" | { grep -o 'Row Groups [A-Za-z]*: [0-9]*' || true; } |
    paste -sd, - | sed 's/^$/row groups not in EXPLAIN/'
}

declare -A heap_ms ctx_ms note
# Times statement $2 on both tables (:tbl names the table in it and in the
# statements $3 run first) and compares their answers.
measure() {  # $1 = name, $2 = statement, $3 = setup statements or ""
  local h=${2//:tbl/heap_rp} c=${2//:tbl/ctx_rp} setup=${3:-}
  local hs=${setup//:tbl/heap_rp} cs=${setup//:tbl/ctx_rp}
  heap_ms[$1]=$(median_ms "$parallel $hs" "$h")
  ctx_ms[$1]=$(median_ms "$parallel $cs" "$c")
  note[$1]="answers $(same "$hs" "$h" "$cs" "$c")"
}

# The set of ids query $1 returns, sorted (the order of equal distances may
# differ between float32 and float64 kernels).
ids_of() { in_session "" "SELECT string_agg(id, ',' ORDER BY id) FROM ($1) q"; }
sorted_ids() { tr , '\n' <<<"$1" | sort | paste -sd, -; }

# Top-10 cosine on both tables, their answers checked against the exact ids
# (as sets: the vectors' distances are distinct, so one ORDER BY key is
# enough, and it is the form the scan answers itself).
measure_topk() {  # $1 = name, $2 = WHERE clause or "", $3 = exact ids
  local q="SELECT id FROM :tbl $2 ORDER BY ctxstore.cosine_distance(embedding, '$query'::real[]) LIMIT $k"
  measure "$1" "$q"
  local h c exact
  exact=$(sorted_ids "$3")
  h=$([ "$(ids_of "${q//:tbl/heap_rp}")" = "$exact" ] && echo exact || echo "NOT exact")
  c=$([ "$(ids_of "${q//:tbl/ctx_rp}")" = "$exact" ] && echo exact || echo "NOT exact")
  note[$1]="heap $h, ctxstore $c"
}

install_lance
bench_start
trap bench_stop EXIT
if has_option sort_key; then layout=clustered; else layout=unclustered; fi
create_tables "$layout"
t0=$(date +%s.%N); load_heap; heap_load=$(seconds_since "$t0")
t0=$(date +%s.%N); load_store; store_load=$(seconds_since "$t0")

session=$(psql_b -tAc "SELECT session_id FROM heap_rp WHERE id = 't$(printf %09d $((rows / 2)))'")
last20="PREPARE last20(text) AS SELECT id, role, content, created_at FROM :tbl
  WHERE session_id = \$1 ORDER BY created_at DESC LIMIT 20;"
measure last20 "EXECUTE last20('$session')" "$last20"
note[last20]+="; ctxstore $(ratio "${ctx_ms[last20]}" "${heap_ms[last20]}")x heap's time,"
note[last20]+=" $(row_groups "${last20//:tbl/ctx_rp}" "EXECUTE last20('$session')")"
measure proj "SELECT count(*), sum(tokens), max(created_at), max(role) FROM :tbl"
measure whole "SELECT count(*), sum(length(id) + length(session_id) + length(bot_id) + length(role) + length(content)
  + tokens + length(meta::text) + cardinality(embedding)), max(created_at) FROM :tbl"

declare -A lance
LANCE_PREFIX=$lance_prefix node "$repo/bench/read_path_lance.mjs" "$bench_dir/lance" "$rows" "$dim" "$bots" \
  "$bot" "$k" "$repeat" >"$bench_dir/lance.out" 2>"$bench_dir/lance.log" ||
  { cat "$bench_dir/lance.log" >&2; exit 1; }
while IFS=$'\t' read -r name value; do lance[$name]=$value; done <"$bench_dir/lance.out"
[ "${lance[lance_indices]}" = 0 ] || { echo "LanceDB table has a vector index: not a flat search" >&2; exit 1; }
query=$(node "$repo/bench/read_path_data.mjs" query "$dim")
if has_cosine; then
  measure_topk topk "" "${lance[exact_unfiltered_ids]}"
  measure_topk topk_bot "WHERE bot_id = '$bot'" "${lance[exact_filtered_ids]}"
else
  echo "ctxstore.cosine_distance does not exist in this build: heap and ctxstore top-10 skipped"
  for q in topk topk_bot; do heap_ms[$q]=skipped; ctx_ms[$q]=skipped; note[$q]=""; done
fi
note[topk]+="${note[topk]:+; }LanceDB recall ${lance[lance_unfiltered_recall]}"
note[topk_bot]+="${note[topk_bot]:+; }LanceDB recall ${lance[lance_filtered_recall]}"
declare -A lance_ms=([topk]=${lance[lance_unfiltered_ms]} [topk_bot]=${lance[lance_filtered_ms]})

echo "read path, $rows rows, $dim-d embeddings, median of $repeat, $(nproc) cores, ctxstore $layout"
echo "load: heap COPY + indexes ${heap_load} s, store INSERT ... SELECT + merge ${store_load} s," \
  "LanceDB ${lance[lance_load_s]} s"
psql_b -tAc "SELECT format('stored: heap %s bytes (with TOAST and indexes), store %s bytes in %s base fragments',
  pg_total_relation_size('heap_rp'), s->>'bytes', s->>'fragments') FROM ctxstore.stats('ctx_rp') s"
row() { printf '%-34s %10s %12s %9s %11s %11s  %s\n' "$@"; }
row query heap_ms ctxstore_ms heap/ctx lancedb_ms lance/ctx notes
for q in last20 proj whole topk topk_bot; do
  case $q in
    last20) label="last 20 turns of one session" ;;
    proj) label="3 small columns, whole table" ;;
    whole) label="whole rows" ;;
    topk) label="top-$k cosine, unfiltered" ;;
    topk_bot) label="top-$k cosine, $bot only" ;;
  esac
  l=${lance_ms[$q]:--} hc=- lc=-
  if [ "${ctx_ms[$q]}" != skipped ]; then
    hc=$(ratio "${heap_ms[$q]}" "${ctx_ms[$q]}")
    [ "$l" = - ] || lc=$(ratio "$l" "${ctx_ms[$q]}")
  fi
  row "$label" "${heap_ms[$q]}" "${ctx_ms[$q]}" "$hc" "$l" "$lc" "${note[$q]}"
done
