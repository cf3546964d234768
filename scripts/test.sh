#!/usr/bin/env bash
# Runs every ctxstore test suite: storage unit tests (plain and under
# ASan/UBSan), pg_regress, isolation specs, TAP tests and scripts/demo.sh.  Installs what it
# needs first.  Run as root on Debian 12 (servers run as the postgres user,
# since initdb refuses root).  Ends with one line "N passed, N failed".
#
#   scripts/test.sh                 everything
#   SUITES="unit regress" scripts/test.sh   a subset (layers unit sanitize regress isolation tap demo)
#   TAP_TESTS="t/050_maintenance.pl" SUITES=tap scripts/test.sh   some TAP files
#   REGRESS_TESTS="scan options" SUITES=regress scripts/test.sh   some regress tests
#   CTXSTORE_PGBIN=/opt/pg/usr/lib/postgresql/15/bin scripts/test.sh
#                                   against a relocated copy of PostgreSQL
#                                   (so two checkouts can test side by side)
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
suites=${SUITES:-"layers unit sanitize regress isolation tap demo"}
pgbin=${CTXSTORE_PGBIN:-/usr/lib/postgresql/15/bin}
pgxs_test=$(dirname "$("$pgbin/pg_config" --pgxs)")/../test
export PATH="$pgbin:$PATH"

passed=0
failed=0
skipped=0
log() { printf '== %s\n' "$*"; }
count() { passed=$((passed + $1)); failed=$((failed + $2)); }

bash "$repo/scripts/install-deps.sh" || { echo "dependency installation failed"; exit 1; }
# s3rver and Azurite for the object-store tests; the unit suites start private
# instances around each run (storage/Makefile, scripts/with-emulators.sh), the
# TAP suite through start_emulators below.
bash "$repo/scripts/emulators.sh" install || { echo "emulator installation failed"; exit 1; }

# Private emulators for the suites that run servers against object stores:
# free loopback ports, a run directory of their own, stopped on exit.  Their
# CX_TEST_* endpoints end up in emu_env, for the tests' environment.
emu_run=""
emu_env=()
start_emulators() {
  [ -n "$emu_run" ] && return 0
  emu_run=$(mktemp -d /tmp/ctxstore-emu.XXXXXX)
  # The servers (user postgres) read the test CA for ca_file.
  chmod 755 "$emu_run"
  if ! CX_EMU_RUN="$emu_run" CX_EMU_PORTS=auto bash "$repo/scripts/emulators.sh" start; then
    echo "emulators did not start; the tests that need them will fail"
    return 1
  fi
  chmod -R a+rX "$emu_run/tls"
  mapfile -t emu_env < <(. "$emu_run/env"; env | grep '^CX_TEST_')
  emu_env+=(CX_TEST_REQUIRE_EMULATORS=1)
}
stop_emulators() {
  [ -n "$emu_run" ] || return 0
  CX_EMU_RUN="$emu_run" bash "$repo/scripts/emulators.sh" stop
  rm -rf "$emu_run"
}
trap stop_emulators EXIT

log "build and install the extension"
build_out=$(make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" all install 2>&1)
if [ $? -ne 0 ] || grep -q 'warning:' <<<"$build_out"; then
  echo "$build_out"
  echo "build failed or produced warnings"
  echo "0 passed, 1 failed"
  exit 1
fi

# A scratch directory the postgres user owns, holding copies of the test
# inputs with @store_root@ replaced by a directory unique to this run, so
# concurrent runs never share a store and expected output stays exact.
# Everything the servers and test scripts (user postgres) read comes from
# here or from the installation, never from the checkout: a checkout in a
# mode-700 directory is not readable by them (.ci/run tests from one).
work=$(mktemp -d /tmp/ctxstore-test.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/stores"
regress_conf="$work/regress.conf"
cp "$repo/scripts/regress.conf" "$regress_conf"
for d in sql expected specs t docs; do
  [ -d "$repo/$d" ] || continue
  mkdir -p "$work/$d"
  for f in "$repo/$d"/*; do
    [ -f "$f" ] || continue
    sed "s|@store_root@|$work/stores|g" "$f" > "$work/$d/$(basename "$f")"
  done
done
chown -R postgres: "$work"
as_pg() { runuser -u postgres -- env PATH="$PATH" "$@"; }

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
  count "$p" "$f"
}

# pg_regress / pg_isolation_regress summary: "All N tests passed." or
# "M of N tests failed."
run_pg_regress() {
  local name=$1; shift
  local out rc
  out=$(cd "$work" && as_pg "$@" 2>&1); rc=$?
  echo "$out"
  local all some
  all=$(echo "$out" | sed -n 's/.*All \([0-9]*\) tests passed.*/\1/p' | tail -1)
  some=$(echo "$out" | sed -n 's/.* \([0-9]*\) of \([0-9]*\) tests failed.*/\1 \2/p' | tail -1)
  if [ -n "$all" ]; then count "$all" 0
  elif [ -n "$some" ]; then set -- $some; count $(($2 - $1)) "$1"
  else count 0 1
  fi
  if [ "$rc" -ne 0 ]; then
    [ -f "$work/$name/regression.diffs" ] && head -c 20000 "$work/$name/regression.diffs"
  fi
}

regress_tests() {  # $1 = 1 for tests that need the preload, 0 for the others
  local f n
  for f in "$work"/sql/*.sql; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .sql)
    if [ -n "${REGRESS_TESTS:-}" ] && ! [[ " $REGRESS_TESTS " == *" $n "* ]]; then continue; fi
    case "$n" in nopreload_*) [ "$1" = 0 ] && echo "$n" ;; *) [ "$1" = 1 ] && echo "$n" ;; esac
  done
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
  case "$suite" in
  layers)
    log "engine layering (scripts/check-layers.sh)"
    out=$(CTXSTORE_PGBIN="$pgbin" bash "$repo/scripts/check-layers.sh" 2>&1)
    echo "$out" | grep -v ' passed, '
    line=$(echo "$out" | tail -1)
    if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
      count "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    else count 0 1
    fi ;;
  unit)
    log "storage unit tests"
    run_unit check ;;
  sanitize)
    log "storage unit tests under ASan + UBSan"
    run_unit check-sanitize ;;
  regress)
    log "pg_regress (shared_preload_libraries = ctxstore)"
    tests=$(regress_tests 1)
    if [ -n "$tests" ]; then
      mkdir -p "$work/regress" && chown postgres: "$work/regress"
      run_pg_regress regress "$pgxs_test/regress/pg_regress" \
        --temp-instance="$work/regress/tmp_check" --temp-config="$regress_conf" \
        --inputdir="$work" --outputdir="$work/regress" --bindir="$pgbin" $tests
    fi
    tests=$(regress_tests 0)
    if [ -n "$tests" ]; then
      log "pg_regress (without shared_preload_libraries)"
      mkdir -p "$work/nopreload" && chown postgres: "$work/nopreload"
      run_pg_regress nopreload "$pgxs_test/regress/pg_regress" \
        --temp-instance="$work/nopreload/tmp_check" \
        --inputdir="$work" --outputdir="$work/nopreload" --bindir="$pgbin" $tests
    fi ;;
  isolation)
    specs=$(cd "$work" && ls specs/*.spec 2>/dev/null | xargs -rn1 basename | sed 's/\.spec$//')
    if [ -n "$specs" ]; then
      log "isolation specs"
      mkdir -p "$work/isolation" && chown postgres: "$work/isolation"
      run_pg_regress isolation "$pgxs_test/isolation/pg_isolation_regress" \
        --temp-instance="$work/isolation/tmp_check" --temp-config="$regress_conf" \
        --inputdir="$work" --outputdir="$work/isolation" --bindir="$pgbin" $specs
    fi ;;
  tap)
    if ls "$work"/t/*.pl >/dev/null 2>&1; then
      log "TAP tests (with s3rver and Azurite)"
      start_emulators
      out=$(cd "$work" && as_pg env TESTDIR="$work" PG_REGRESS="$pgxs_test/regress/pg_regress" \
              CTXSTORE_STORE_ROOT="$work/stores" "${emu_env[@]}" \
              prove -I "$pgxs_test/perl" -I "$work/t" ${TAP_TESTS:-t/*.pl} 2>&1); rc=$?
      echo "$out"
      tfail=$(echo "$out" | sed -n 's/^Failed \([0-9]*\)\/\([0-9]*\) subtests.*/\1/p' | awk '{s+=$1} END {print s+0}')
      ttotal=$(echo "$out" | sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' | tail -1)
      if [ -z "$ttotal" ]; then count 0 1
      else
        [ "$rc" -ne 0 ] && [ "$tfail" -eq 0 ] && tfail=1
        count $((ttotal - tfail)) "$tfail"
      fi
    fi ;;
  demo)
    log "scripts/demo.sh"
    run_demo ;;
  *) echo "unknown suite $suite"; count 0 1 ;;
  esac
done

[ "$failed" -eq 0 ] && [ -z "${KEEP_TEST_DIR:-}" ] && rm -rf "$work"
[ "$failed" -ne 0 ] && echo "test files kept in $work"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
