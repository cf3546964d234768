#!/usr/bin/env bash
# Runs every ctxstore test suite: the engine's layering, storage unit tests
# (plain and under ASan/UBSan), the libFuzzer harnesses (15 s each), cppcheck,
# pg_regress (also against a UBSan build of the extension), isolation specs,
# TAP tests and scripts/demo.sh.
# Installs what is missing first (nothing when all is there).  Run as root on
# Debian 12 (servers run as the postgres user, since initdb refuses root).
# A suite that runs no test fails.  Ends with one line "N passed, N failed".
# The PostgreSQL-side suites are the Makefile's installcheck targets.
#
#   scripts/test.sh                 everything
#   SUITES="unit regress" scripts/test.sh   a subset (layers links unit sanitize
#                                   fuzz cppcheck regress ubsan isolation tap demo)
#   TAP_TESTS="t/050_maintenance.pl" SUITES=tap scripts/test.sh   some TAP files
#   REGRESS_TESTS="scan options" SUITES=regress scripts/test.sh   some regress tests
#   ISOLATION_TESTS="read_your_writes" SUITES=isolation scripts/test.sh   some specs
#   CTXSTORE_PGBIN=/opt/pg/usr/lib/postgresql/15/bin scripts/test.sh
#                                   against a relocated copy of PostgreSQL
#                                   (so two checkouts can test side by side)
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
suites=${SUITES:-"layers links unit sanitize fuzz cppcheck regress ubsan isolation tap demo"}
pgbin=${CTXSTORE_PGBIN:-/usr/lib/postgresql/15/bin}
export PATH="$pgbin:$PATH"

passed=0
failed=0
skipped=0
log() { printf '== %s\n' "$*"; }
count() { passed=$((passed + $1)); failed=$((failed + $2)); }

bash "$repo/scripts/install-deps.sh" || { echo "dependency installation failed"; exit 1; }
# s3rver and Azurite for the object-store tests (storage/Makefile and the
# TAP target start private instances through scripts/with-emulators.sh).
bash "$repo/scripts/emulators.sh" install || { echo "emulator installation failed"; exit 1; }
# DuckDB and hyparquet, which t/078_parquet_readers.pl reads fragments with.
bash "$repo/scripts/readers.sh" install >/dev/null || { echo "reader installation failed"; exit 1; }

log "build and install the extension"
build_out=$(make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" all install 2>&1)
if [ $? -ne 0 ] || grep -q 'warning:' <<<"$build_out"; then
  echo "$build_out"
  echo "build failed or produced warnings"
  echo "0 passed, 1 failed"
  exit 1
fi

# A scratch directory of this run (TEST_WORK of the installcheck targets,
# which copy the test inputs there for the postgres user: see
# scripts/test-inputs.sh); mktemp's name has the length expected output needs.
work=$(mktemp -d /tmp/ctxstore-test.XXXXXX)
chmod 755 "$work"
as_pg() { runuser -u postgres -- env PATH="$PATH" "$@"; }
pg_make() { make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" TEST_WORK="$work" "$@"; }

# A script of scripts/ that checks the tree and ends with "N passed, N failed".
run_check() {
  local out line
  out=$(CTXSTORE_PGBIN="$pgbin" bash "$repo/scripts/$1" 2>&1)
  echo "$out" | grep -v ' passed, '
  line=$(echo "$out" | tail -1)
  if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    count "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
  else count 0 1
  fi
}

# Runner output "N passed, N failed[, N skipped]" (storage unit tests).
run_unit() {
  local target=$1 out
  out=$(make -C "$repo/storage" -s "$target" 2>&1); local rc=$?
  echo "$out" | grep -v '^ok ' 
  local line p f s
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' | tail -1)
  if [ -z "$line" ]; then count 0 1; return; fi
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
  s=$(echo "$line" | sed -n 's/.*, \([0-9]*\) skipped$/\1/p')
  skipped=$((skipped + ${s:-0}))
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  # Its build is warning-free too (the sanitizer build's -O1 warns apart).
  if grep -qE '^[^ ]+:[0-9]+:[0-9]+: warning:' <<<"$out"; then
    echo "the build of make -C storage $target produced warnings"
    f=$((f + 1))
  fi
  count "$p" "$f"
}

# pg_regress / pg_isolation_regress summaries, one per instance run: "All N
# tests passed." or "M of N tests failed."  A failure that no summary counts
# (a build error, a sanitizer report) counts as one.  Shows the differences
# of the runs that failed.
count_pg_regress() {
  local out=$1 rc=$2 n m fails=0 line
  while read -r line; do
    if [[ "$line" =~ All\ ([0-9]+)\ tests\ passed ]]; then
      count "${BASH_REMATCH[1]}" 0
    elif [[ "$line" =~ ([0-9]+)\ of\ ([0-9]+)\ tests\ failed ]]; then
      m=${BASH_REMATCH[1]}; n=${BASH_REMATCH[2]}
      count $((n - m)) "$m"; fails=$((fails + m))
    fi
  done <<<"$out"
  if [ "$rc" -ne 0 ]; then
    [ "$fails" -eq 0 ] && count 0 1
    head -c 20000 "$work"/*/regression.diffs 2>/dev/null
  fi
}

# make <target> [VAR=value...]: its output, then its pg_regress summaries.
run_pg_target() {
  local out rc
  out=$(pg_make "$@" 2>&1); rc=$?
  echo "$out"
  count_pg_regress "$out" "$rc"
}

# TAP summary: "Files=N, Tests=N, ..." and "Failed N/N subtests".
count_prove() {
  local out=$1 rc=$2 tfail ttotal
  tfail=$(echo "$out" | sed -n 's/^Failed \([0-9]*\)\/\([0-9]*\) subtests.*/\1/p' | awk '{s+=$1} END {print s+0}')
  ttotal=$(echo "$out" | sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' | tail -1)
  if [ -z "$ttotal" ]; then count 0 1
  else
    [ "$rc" -ne 0 ] && [ "$tfail" -eq 0 ] && tfail=1
    count $((ttotal - tfail)) "$tfail"
  fi
}

# One check of the demo suite: passes when the command does.
check() {
  local what=$1; shift
  if "$@"; then echo "ok - $what"; count 1 0; else echo "not ok - $what"; count 0 1; fi
}

# What the demo's closing message $2 prints after "$1:".
printed() { sed -n "s/^$1: *//p" <<<"$2"; }

# The README's first command, scripts/demo.sh, in a directory of this run:
# the statements its closing message suggests run through the connect
# command it prints, every table's sample rows have an order, and the stop
# and clean commands it prints work as printed.  Printed commands run from /,
# so that none depends on the directory the demo was started from.
run_demo() {
  local dir="$work/demo" out rc
  out=$(CTXSTORE_DEMO_DIR="$dir" CTXSTORE_PGBIN="$pgbin" bash "$repo/scripts/demo.sh" 2>&1); rc=$?
  echo "$out"
  check "demo starts" test "$rc" -eq 0
  if [ "$rc" -eq 0 ]; then
    local connect ordered="SELECT count(*) > 1 AND count(DISTINCT created_at) = count(*) FROM"
    connect="$(printed Connect "$out") -X -v ON_ERROR_STOP=1"
    check "demo says what it builds" grep -q '^demo: building' <<<"$out"
    check "demo sample rows have distinct created_at" grep -qx 't t t' <<<"$( (cd / && eval "$connect -At") \
      <<<"$ordered context; $ordered rollouts; $ordered synthetic_qa;" | paste -sd' ')"
    check "demo's suggested statements run" eval "(cd / && $connect)" \
      <<<"$(sed -n '/^Try:/,/^Stop:/s/^  //p' <<<"$out")"
    check "demo's printed stop command stops it" \
      eval "(cd / && $(printed Stop "$out") && ! as_pg pg_ctl -D '$dir/data' status >/dev/null)"
    check "demo's printed clean command removes it" \
      eval "(cd / && $(printed 'Delete everything' "$out") && [ ! -e '$dir' ])"
  fi
  # Whatever failed above, no demo cluster outlives the run.
  (cd / && CTXSTORE_DEMO_DIR="$dir" CTXSTORE_PGBIN="$pgbin" bash "$repo/scripts/demo.sh" clean >/dev/null)
}

for suite in $suites; do
  ran_before=$((passed + failed))
  case "$suite" in
  layers)
    log "engine layering (scripts/check-layers.sh)"
    run_check check-layers.sh ;;
  links)
    log "links in README.md and docs/ (scripts/check-links.sh)"
    run_check check-links.sh ;;
  unit)
    log "storage unit tests"
    run_unit check ;;
  sanitize)
    log "storage unit tests under ASan + UBSan"
    run_unit check-sanitize ;;
  fuzz)
    log "libFuzzer harnesses, 15 s each under ASan + UBSan (make -C storage fuzz-check)"
    run_unit fuzz-check ;;
  cppcheck)
    log "cppcheck (make cppcheck)"
    check "cppcheck finds nothing" pg_make cppcheck ;;
  regress)
    log "pg_regress (make installcheck-regress)"
    run_pg_target installcheck-regress ${REGRESS_TESTS:+REGRESS="$REGRESS_TESTS"} ;;
  ubsan)
    log "pg_regress against the extension built with UBSan (scripts/ubsan-regress.sh)"
    out=$(CTXSTORE_PGBIN="$pgbin" bash "$repo/scripts/ubsan-regress.sh" "$work/ubsan" 2>&1); rc=$?
    echo "$out"
    count_pg_regress "$out" "$rc" ;;
  isolation)
    log "isolation specs (make installcheck-isolation)"
    run_pg_target installcheck-isolation ${ISOLATION_TESTS:+ISOLATION="$ISOLATION_TESTS"} ;;
  tap)
    log "TAP tests with s3rver and Azurite (make prove_installcheck)"
    out=$(pg_make prove_installcheck ${TAP_TESTS:+PROVE_TESTS="$TAP_TESTS"} 2>&1); rc=$?
    echo "$out"
    count_prove "$out" "$rc" ;;
  demo)
    log "scripts/demo.sh"
    run_demo ;;
  *) echo "unknown suite $suite"; count 0 1 ;;
  esac
  if [ $((passed + failed)) -eq "$ran_before" ]; then
    echo "not ok - suite $suite ran no test"
    count 0 1
  fi
done

[ "$failed" -eq 0 ] && [ -z "${KEEP_TEST_DIR:-}" ] && rm -rf "$work"
[ "$failed" -ne 0 ] && echo "test files kept in $work"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
