#!/usr/bin/env bash
# Side-by-side benchmark of two builds of ctxstore in one run: builds BASE and
# CANDIDATE from clean copies of their trees, installs each into its own
# relocated copy of PostgreSQL, then runs each bench script RUNS times per
# build, alternating the builds (ABBA order, so that drift over the run and
# the machine's noise hit both alike), with this checkout's bench scripts and
# so the same data.  Prints, for every value of every table the script
# prints, the median of each build's runs, their ratio and the spread of
# the runs, plus the bytes of each store the script left.
#
#   bash bench/compare.sh                               bench/scan.sh and bench/ingest.sh
#   BASE=95f2d44 CANDIDATE=/work/wt-x RUNS=4 bash bench/compare.sh bench/scan.sh
#   RUNS=2 ROWS=20000 DURATION=3 bash bench/compare.sh  a quick check of the harness
#
# BASE and CANDIDATE are commits (default: 95f2d44, the last commit of
# format v1, against HEAD) or worktree directories (their tracked and
# untracked files as they are, uncommitted changes included).  The
# PostgreSQL copies are BASE_PG and CANDIDATE_PG (default /opt/pg-e and
# /opt/pg-f; made from Debian's PostgreSQL 15 when absent).  Every other
# variable (ROWS, DURATION, REPEAT, ...) goes to the bench scripts.  Run as
# root; the raw output of every run is kept in the directory printed last.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-2}
pg_tail=usr/lib/postgresql/15/bin
declare -A source=([base]=${BASE:-95f2d44} [candidate]=${CANDIDATE:-HEAD})
declare -A pgdir=([base]=${BASE_PG:-/opt/pg-e} [candidate]=${CANDIDATE_PG:-/opt/pg-f})
declare -A label
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=("$repo/bench/scan.sh" "$repo/bench/ingest.sh")
# A cluster and port of its own, so that a bench of another checkout running
# meanwhile is not disturbed (both builds use the same, one at a time).
export CTXSTORE_BENCH_DIR=${CTXSTORE_BENCH_DIR:-/var/tmp/ctxstore-compare}
export CTXSTORE_BENCH_PORT=${CTXSTORE_BENCH_PORT:-5496}
export CTXSTORE_BENCH_INSTALL=0

builds=$(mktemp -d /tmp/ctxstore-compare-builds.XXXXXX)
results=$(mktemp -d /tmp/ctxstore-compare.XXXXXX)
trap 'rm -rf "$builds"' EXIT

# A copy of Debian's PostgreSQL 15 in $1 that pg_config and the server use
# relocated (headers shared with the system), unless $1 has one already.
make_pg_copy() {
  [ -x "$1/$pg_tail/pg_config" ] && return
  mkdir -p "$1/usr/lib/postgresql" "$1/usr/share/postgresql"
  cp -a /usr/lib/postgresql/15 "$1/usr/lib/postgresql/"
  cp -a /usr/share/postgresql/15 "$1/usr/share/postgresql/"
  ln -s /usr/include "$1/usr/include"
}

# The files of commit or worktree $1 into directory $2, without build output.
export_tree() {
  if [ -d "$1" ]; then
    git -C "$1" ls-files -z --cached --others --exclude-standard |
      tar -C "$1" --null --ignore-failed-read -T - -cf - | tar -C "$2" -xf -
  else
    git -C "$repo" archive "$1" | tar -C "$2" -xf -
  fi
}

describe() {  # $1 = commit or worktree
  if [ -d "$1" ]; then
    echo "$1 at $(git -C "$1" log -1 --format='%h %s')$(git -C "$1" diff --quiet HEAD || echo ', with uncommitted changes')"
  else
    git -C "$repo" log -1 --format='%h %s' "$1"
  fi
}

# Build $1 (base or candidate) and install it alone into its PostgreSQL copy
# (the ctxstore files of an earlier install removed first).
build() {
  local dir pg=${pgdir[$1]}
  # Names of one length: source paths compiled into the builds (__FILE__)
  # then lay out both alike.
  dir=$(mktemp -d "$builds/src.XXXXXX")
  make_pg_copy "$pg"
  export_tree "${source[$1]}" "$dir"
  rm -f "$pg/$pg_tail/ctxstore-inspect" "$pg"/usr/lib/postgresql/15/lib/ctxstore.so \
    "$pg"/usr/share/postgresql/15/extension/ctxstore[-.]*
  echo "building $1: ${label[$1]}"
  if ! make -C "$dir" -s PG_CONFIG="$pg/$pg_tail/pg_config" all install >"$dir.log" 2>&1; then
    tail -30 "$dir.log"; echo "build of $1 failed"; exit 1
  fi
}

# Run bench script $1 on build $2; its output, then the bytes of each store
# it left (as one more table), go to $3.
run_once() {
  if ! CTXSTORE_PGBIN="${pgdir[$2]}/$pg_tail" bash "$1" >"$3" 2>"${3%.out}.err"; then
    tail -30 "${3%.out}.err"; echo "$1 failed on $2 (output: $3)"; exit 1
  fi
  echo "store stored_bytes" >>"$3"
  find "$CTXSTORE_BENCH_DIR/stores" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort |
    while read -r store; do
      echo "$store $(du -sb "$CTXSTORE_BENCH_DIR/stores/$store" | cut -f1)"
    done >>"$3"
}

# The side-by-side table of the runs in directory $1.  A table of a bench
# script is a header line of words, then rows "label value... [unit words]"
# with a value per column, the columns named by the header's words after
# the first.  The other lines of the first runs are shown once when both
# builds printed the same, else each build's.
compare() {
  awk '
    function is_num(t) { return t ~ /^-?[0-9]+(\.[0-9]+)?$/ }
    function is_header(  i) { for (i = 1; i <= NF; i++) if (is_num($i)) return 0; return NF >= 2 }
    # Values of a row: set nvals and val[]; the label is what precedes them.
    function parse_row(  e, s, i) {
      for (e = NF; e > 0 && !is_num($e); e--) ;
      for (s = e; s > 0 && is_num($s); s--) ;
      if (s == 0 || e == s) return ""
      nvals = e - s
      for (i = 1; i <= nvals; i++) val[i] = $(s + i)
      row = $1; for (i = 2; i <= s; i++) row = row " " $i
      return row
    }
    # Column names are one word each, the last maybe two ("vs batch").
    function fits(n) { return n == nhdr - 1 || n == nhdr - 2 }
    function column(j,  name, i) {
      if (j < ncols) return hdr[j + 1]
      name = hdr[ncols + 1]; for (i = ncols + 2; i <= nhdr; i++) name = name " " hdr[i]
      return name
    }
    function add(key, x) {
      if (!(key in seen)) { seen[key] = 1; keys[++nkeys] = key }
      cell[key, build] = cell[key, build] " " x
    }
    function median(list,  v, n, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n % 2 ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function spread(list,  v, n, i, lo, hi) {
      n = split(list, v, " "); lo = hi = v[1] + 0
      for (i = 2; i <= n; i++) { if (v[i] + 0 < lo) lo = v[i] + 0; if (v[i] + 0 > hi) hi = v[i] + 0 }
      return lo > 0 ? (hi - lo) / lo : 0
    }
    function keep(line) {
      if (!first) return
      other[build, ++nother] = line
      if (nother > nothers) nothers = nother
    }
    function fmt(x) { return x == int(x) ? sprintf("%d", x) : sprintf("%.2f", x) }
    BEGIN { ncols = -1 }
    FNR == 1 {
      if (ncols == 0) keep(header_line)
      n = split(FILENAME, p, "/"); split(p[n], q, "."); build = q[1]; first = q[2] == 1
      ncols = -1; nother = 0; tables = 0
    }
    {
      if (ncols >= 0 && (r = parse_row()) != "" && fits(nvals) && (ncols == 0 || nvals == ncols)) {
        if (ncols == 0) { tables++; add("T" tables, ""); title["T" tables] = hdr[1] }
        ncols = nvals
        for (j = 1; j <= nvals; j++) add(tables SUBSEP r SUBSEP column(j), val[j])
        next
      }
      if (ncols == 0) keep(header_line)  # a line of words that heads no table
      ncols = -1
      if (is_header()) { nhdr = NF; for (i = 1; i <= NF; i++) hdr[i] = $i; header_line = $0; ncols = 0 }
      else keep($0)
    }
    function print_others(  i) {
      for (i = 1; i <= nothers; i++)
        if (other["base", i] == other["candidate", i]) print other["base", i]
        else printf "base:      %s\ncandidate: %s\n", other["base", i], other["candidate", i]
    }
    function print_tables(  w, k, part, name, key, b, c, s) {
      w = 8
      for (k = 1; k <= nkeys; k++) {
        split(keys[k], part, SUBSEP)
        name[k] = part[1] ~ /^T/ ? title[part[1]] " / value" : part[2] ": " part[3]
        if (length(name[k]) > w) w = length(name[k])
      }
      for (k = 1; k <= nkeys; k++) {
        key = keys[k]
        if (key ~ /^T/) { printf "\n%-" w "s %12s %12s %9s %8s\n", name[k], "base", "candidate", "cand/base", "spread"; continue }
        b = median(cell[key, "base"]); c = median(cell[key, "candidate"])
        s = spread(cell[key, "base"]); if (spread(cell[key, "candidate"]) > s) s = spread(cell[key, "candidate"])
        printf "%-" w "s %12s %12s %9s %7.0f%%\n", name[k], fmt(b), fmt(c), b ? sprintf("%.2f", c / b) : "-", 100 * s
      }
    }
    END { if (ncols == 0) keep(header_line); print_others(); print_tables() }' "$1"/base.*.out "$1"/candidate.*.out
}

bash "$repo/scripts/install-deps.sh" >/dev/null
for b in base candidate; do
  label[$b]=$(describe "${source[$b]}")
  build "$b"
done
for script in "${scripts[@]}"; do
  out=$results/$(basename "$script" .sh)
  mkdir -p "$out"
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  for run in $(seq "$runs"); do
    order="base candidate"
    [ $((run % 2)) = 0 ] && order="candidate base"
    for b in $order; do
      echo "$(basename "$script") run $run of $runs: $b" >&2
      run_once "$script" "$b" "$out/$b.$run.out"
    done
  done
  echo
  echo "== $script, $runs runs per build alternated (ABBA), $(nproc) cores," \
    "load average $load_before before, $(cut -d' ' -f1 /proc/loadavg) after"
  echo "base:      ${label[base]} (${pgdir[base]})"
  echo "candidate: ${label[candidate]} (${pgdir[candidate]})"
  echo "median of the runs; cand/base = candidate / base; spread = largest (max - min) / min of one build's runs"
  compare "$out"
done
echo
echo "raw output of every run: $results"
