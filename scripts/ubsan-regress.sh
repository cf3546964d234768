#!/usr/bin/env bash
# Builds the extension itself with UBSan and runs the pg_regress suite (make
# installcheck-regress) against that build.  Not ASan: the server binary is
# not instrumented, and with the ASan runtime preloaded into it (which
# loading an ASan-built module needs) Debian's postgres, psql and initdb hang
# in glibc's bindtextdomain() before main does anything.  Sanitizer reports
# go to files, since a backend's stderr is the server log; any report fails
# the run.  The build happens in a copy of
# the sources and installs into a copy of the PostgreSQL installation (it is
# relocatable), so neither the checkout's objects nor the installed
# ctxstore.so are replaced.  Run as root or as the user the servers run as.
#
#   scripts/asan-regress.sh <scratch dir>     (CTXSTORE_PGBIN as for test.sh)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: $0 <scratch dir>}
pgbin=${CTXSTORE_PGBIN:-/usr/lib/postgresql/15/bin}
sanitize="-fsanitize=undefined -fno-omit-frame-pointer"

# The Debian layout: usr/lib/postgresql/15 (bin, lib), usr/share/postgresql/15,
# usr/include.
pg="$work/pg"
mkdir -p "$pg/usr/lib/postgresql" "$pg/usr/share/postgresql"
cp -a "$(cd "$pgbin/.." && pwd)" "$pg/usr/lib/postgresql/"
cp -a "$("$pgbin/pg_config" --sharedir)" "$pg/usr/share/postgresql/"
ln -sfn "$(readlink -f "$("$pgbin/pg_config" --includedir)/..")" "$pg/usr/include"
pg_config="$pg/usr/lib/postgresql/$(basename "$(cd "$pgbin/.." && pwd)")/bin/pg_config"

src="$work/src"
mkdir -p "$src"
tar -C "$repo" --exclude=.git --exclude=.emulators --exclude=.deps --exclude='*.o' \
  --exclude='*.so' --exclude='*.a' --exclude='./storage/build*' -cf - . | tar -C "$src" -xf -
make -C "$src" -s -j2 PG_CONFIG="$pg_config" COPT="$sanitize" all install

reports="$work/reports"
mkdir -p "$reports"
chmod 1777 "$reports"
# A name of the length expected output needs (see TEST_WORK in the Makefile).
tests=$(mktemp -d /tmp/ctxstore-test.XXXXXX)
rc=0
UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan" \
  make -C "$src" -s PG_CONFIG="$pg_config" TEST_WORK="$tests" installcheck-regress || rc=$?
if [ -n "$(ls -A "$reports")" ]; then
  head -c 20000 "$reports"/*
  echo "ubsan-regress: sanitizer reports above"
  rc=1
fi
if [ "$rc" -ne 0 ]; then
  head -c 20000 "$tests"/*/regression.diffs 2>/dev/null
  echo "ubsan-regress: test files kept in $tests"
  exit "$rc"
fi
rm -rf "$tests"
