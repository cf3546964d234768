#!/usr/bin/env bash
# Group commits over a slow object store: Azurite behind the fault proxy,
# which holds every answer DELAY_MS (20) ms, a stand-in for a cloud round
# trip.  CLIENTS (16) sessions, then 1 session, of sealed single-row INSERT
# transactions (seal_on_insert on) for DURATION s each into one store, or
# into STORES stores (session i writes store i % STORES, so a writer round
# commits several), merging after MERGE_AFTER generations (default 0:
# merges off; with 8, the product's default, the writer probes a merged
# base for each request).  Prints per
# run: tps, seals, the proxy's requests per seal by method (and the
# writer's share of them, from ctxstore.stats), the round trips a seal
# waits for in sequence (the writer's requests per seal / the mean number
# of them outstanding while any is, from the proxy's trace of the run's
# last 1000 requests), the bound sessions / (round trips per seal x
# DELAY_MS) and the share of it reached, and the same bound at the trips'
# measured mean time (DELAY_MS plus Azurite's own time: what no pipelining
# of the client can remove); then, per run, the traced requests counted by
# kind and a per-request timeline of a few seals.
#
#   CTXSTORE_PGBIN=/opt/pg-g/usr/lib/postgresql/15/bin DURATION=15 bash bench/latency.sh
#   STORES=4 DURATION=15 bash bench/latency.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
duration=${DURATION:-15}
clients=${CLIENTS:-16}
delay_ms=${DELAY_MS:-20}
stores=${STORES:-1}
merge_after=${MERGE_AFTER:-0}

if [ "${1:-}" != run ]; then
  bash "$repo/scripts/emulators.sh" install >/dev/null
  exec bash "$repo/scripts/with-emulators.sh" bash "$0" run
fi
. "$repo/bench/common.sh"

bench_start
trap bench_stop EXIT
ctl=$CX_TEST_AZ_PROXY_CTL
create_az_server azslow "$CX_TEST_AZ_PROXY"
for i in $(seq 0 $((stores - 1))); do
  psql_b -c "CREATE FOREIGN TABLE ctx_$i ($context_columns)
    SERVER azslow OPTIONS (uri 'az://bench/latency$$-$i', key 'id',
                           seal_on_insert 'true', merge_after_generations '$merge_after')"
done

script=$(mktemp); chmod 644 "$script"
{ echo "\\set store :client_id % $stores"; single_row_insert 'ctx_:store'; } > "$script"
# The first commit to each store claims its shard: outside the timed runs.
for i in $(seq 0 $((stores - 1))); do
  single_row_insert "ctx_$i" | psql_b -v client_id=0
done

# The writer's seals and its PUTs, HEADs and GETs so far, over every store
# (ctxstore.stats), the transactions it acknowledged and its group-commit
# rounds (ctxstore.workers).
writer_counts() {
  psql_b -tAc "SELECT concat_ws(' ', sum((s #>> '{writer,seals}')::bigint),
                 sum((s #>> '{writer,requests,puts}')::bigint),
                 sum((s #>> '{writer,requests,heads}')::bigint),
                 sum((s #>> '{writer,requests,gets}')::bigint),
                 sum((s ->> 'acked_transactions')::bigint),
                 (SELECT rounds FROM ctxstore.workers WHERE kind = 'writer'))
               FROM generate_series(0, $stores - 1) i, ctxstore.stats('ctx_' || i) s"
}

# The writer's round trips per seal: how many of its requests (PUTs of
# shard manifests and fragments, under _shards/ and data/: it makes no
# other during these runs, by ctxstore.stats) are outstanding on average
# while any is (their summed time over the time covered by at least one of
# them), from the proxy's trace (JSON on stdin); then "timeline" lines: the trace's
# requests counted by kind, and 12 requests from the middle of the trace.
# Prints that concurrency, the round trips a seal waits for in sequence (the
# writer's requests per shard-manifest PUT, a seal, / the concurrency) and
# the mean time of one of its requests, in ms.
writer_trips_of() {
  node -e '
    const t = JSON.parse(require("fs").readFileSync(0, "utf8")).sort((a, b) => a.start - b.start);
    const byWriter = (r) => r.method === "PUT" && /\/(_shards|data)\//.test(r.path);
    let sum = 0, covered = 0, until = -Infinity;
    for (const r of t.filter(byWriter)) {
      sum += r.end - r.start;
      if (r.end > until) { covered += r.end - Math.max(r.start, until); until = r.end; }
    }
    const conc = covered > 0 ? sum / covered : 1;
    const writer = t.filter(byWriter).length;
    const seals = t.filter((r) => r.method === "PUT" && /\/_shards\/.*\.shard$/.test(r.path)).length;
    console.log(conc.toFixed(2), (seals > 0 ? writer / seals / conc : 0).toFixed(2), (writer > 0 ? sum / writer : 0).toFixed(1));
    const kinds = {};
    for (const r of t) {
      const k = `${r.method} ${r.path.replace(/^.*latency[0-9]+-/, "").replace(/[0-9a-f]{8,}/g, "*")}`;
      kinds[k] = (kinds[k] || 0) + 1;
    }
    for (const [k, v] of Object.entries(kinds).sort((a, b) => b[1] - a[1]))
      console.log(`timeline ${String(v).padStart(5)} x ${k}`);
    const mid = t.slice(Math.floor(t.length / 2), Math.floor(t.length / 2) + 12), t0 = mid.length ? mid[0].start : 0;
    for (const r of mid)
      console.log(`timeline ${String(r.start - t0).padStart(5)}..${String(r.end - t0).padEnd(5)} ms ` +
        `${r.method.padEnd(4)} ${r.status} ${r.path.replace(/^.*latency[0-9]+-/, "")}`);
  '
}

run() {  # $1 = sessions; prints "tps seals writer_puts,heads,gets transactions/round requests by_method
         # concurrency round_trips ms_per_trip", timeline lines on fd 3
  local w0 w1 out stats rt
  curl -fsS -X DELETE "$ctl/faults" >/dev/null
  curl -fsS -X POST "$ctl/faults" -d "{\"action\": \"delay\", \"ms\": $delay_ms, \"for_ms\": $(( (duration + 30) * 1000 ))}" >/dev/null
  curl -fsS -X POST "$ctl/stats/reset" >/dev/null
  w0=$(writer_counts)
  out=$(pgbench_b -n -f "$script" -c "$1" -j 2 -T "$duration" 2>&1 | tps_of)
  w1=$(writer_counts)
  stats=$(curl -fsS "$ctl/stats")
  rt=$(curl -fsS "$ctl/trace" | writer_trips_of)
  curl -fsS -X DELETE "$ctl/faults" >/dev/null
  echo "$rt" | sed -n 's/^timeline //p' >&3
  echo "$out $(awk -v a="$w0" -v b="$w1" 'BEGIN { n = split(a, x, " "); split(b, y, " ");
      printf "%d %d,%d,%d %.1f", y[1] - x[1], y[2] - x[2], y[3] - x[3], y[4] - x[4],
             (y[6] > x[6] ? (y[5] - x[5]) / (y[6] - x[6]) : 0) }') $(echo "$stats" | node -e 'const s = JSON.parse(require("fs").readFileSync(0)); console.log(s.requests, Object.entries(s.by_method).map(([k, v]) => k + "=" + v).join(","))') $(echo "$rt" | head -1)"
}

per_seal() {  # $1 = "M=n,..." counts, $2 = seals: "M=n/seals,..."
  echo "$1" | awk -F, -v n="$2" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); printf "%s%s=%.2f", (i > 1 ? "," : ""), kv[1], kv[2] / n } }'
}

trips_bound() {  # $1 = sessions, $2 = round trips per seal, $3 = ms per trip: tps
  awk -v s="$1" -v r="$2" -v d="$3" 'BEGIN { printf "%.1f", (r > 0 && d > 0 ? s / (r * d / 1000) : 0) }'
}

report() {  # $1 = sessions, $2 = run's output
  local tps seals wr per_round req by conc rt ms bound measured wp wh wg
  read -r tps seals wr per_round req by conc rt ms <<<"$2"
  bound=$(trips_bound "$1" "$rt" "$delay_ms")
  measured=$(trips_bound "$1" "$rt" "$ms")
  printf '%-10s %9s %7s %10s %13s %-26s %11s %7s %9s %7s %11s %7s\n' "$1" "$tps" "$seals" "$per_round" \
    "$(ratio "$req" "$seals")" \
    "$(per_seal "$by" "$seals")" \
    "$rt" "$ms" "$bound" "$(ratio "$tps" "$bound")" "$measured" "$(ratio "$tps" "$measured")"
  IFS=, read -r wp wh wg <<<"$wr"
  echo "  of those, the writer's (ctxstore.stats): $(per_seal "PUT=$wp,HEAD=$wh,GET=$wg" "$seals") per seal"
}

many=$(run "$clients" 3>"$script.timeline")
one=$(run 1 3>"$script.timeline1")

echo "object-store latency, Azurite + ${delay_ms} ms per request, $stores store(s), $duration s per run, $(nproc) cores (load: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-10s %9s %7s %10s %13s %-26s %11s %7s %9s %7s %11s %7s\n' sessions tps seals xacts/round requests/seal \
  "per seal by method" \
  "round trips" ms/trip bound share "bound@trip" share
report "$clients" "$many"
report 1 "$one"
echo "the $clients-session run's last 1000 requests by kind, and 12 from their middle (ms from the first of them):"
cat "$script.timeline"
echo "the same for the 1-session run:"
cat "$script.timeline1"
rm -f "$script" "$script.timeline" "$script.timeline1"
