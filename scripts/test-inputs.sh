#!/usr/bin/env bash
# Copies the test inputs (sql/, expected/, specs/, t/, docs/, scripts/regress.conf,
# the readers scripts/readers.sh installs) into a scratch directory, with @store_root@ replaced by <dir>/stores, so
# that every run writes to stores of its own and expected output stays
# exact.  The servers and test drivers read only this copy, never the
# checkout: a checkout in a mode-700 directory is not readable by the
# postgres user they run as (.ci/run tests from one).  Run as root, it gives
# the copy to <user>.  The Makefile's REGRESS_PREP and scripts/test.sh use it.
#
#   scripts/test-inputs.sh <dir> [<user>]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: $0 <dir> [<user>]}
user=${2:-postgres}

# A fresh copy and fresh stores: tables of an earlier run must not be found.
rm -rf "$work/sql" "$work/expected" "$work/specs" "$work/t" "$work/docs" "$work/stores"
mkdir -p "$work/stores"
chmod 755 "$work"
cp "$repo/scripts/regress.conf" "$work/regress.conf"
for d in sql expected specs t docs; do
  [ -d "$repo/$d" ] || continue
  mkdir -p "$work/$d"
  for f in "$repo/$d"/*; do
    [ -f "$f" ] || continue
    sed "s|@store_root@|$work/stores|g" "$f" > "$work/$d/$(basename "$f")"
  done
done
# The independent Parquet readers t/078_parquet_readers.pl runs (installed by
# scripts/readers.sh; NODE_PATH names this copy), hard-linked when the
# checkout and the run share a file system.  Their files are world-readable
# (readers.sh sees to it), so the copy needs no chown.
rm -rf "$work/readers"
if [ -d "$repo/.readers/node_modules" ]; then
  mkdir -p "$work/readers"
  cp -al "$repo/.readers/node_modules" "$work/readers/" 2>/dev/null \
    || cp -a "$repo/.readers/node_modules" "$work/readers/"
  chmod 755 "$work/readers"
fi
if [ "$(id -u)" -eq 0 ]; then
  chown "$user:" "$work"
  for f in regress.conf sql expected specs t docs stores; do
    [ -e "$work/$f" ] && chown -R "$user:" "$work/$f"
  done
fi
exit 0
