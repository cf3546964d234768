#!/usr/bin/env bash
# Checks the engine's shape (docs/ARCHITECTURE.md):
#   - storage/ has one folder per subsystem, in a strictly downward order:
#       util < objstore < format < table < memwal < merge < scan < maintenance
#     a file includes headers of its own folder and of folders before it
#     only; tests/ and tools/ may include any of them;
#   - no include climbs with "../";
#   - the public headers (storage/include/ctxstore/) include one another
#     and system headers only, never an internal one;
#   - fdw/, bgworker/ and shared/ include the engine through "ctxstore/..."
#     only;
#   - the PostgreSQL side points one way: fdw/ and bgworker/ include headers
#     of their own folder and of shared/, never one of each other's (the
#     writer protocol they both speak is in shared/), and shared/ includes
#     neither's;
#   - no folder of the PostgreSQL side has the name of a PostgreSQL header
#     folder;
#   - storage/ includes no PostgreSQL header;
#   - no file of ours can be found under a name PostgreSQL's headers use
#     (PGXS puts the repository root on the include path, so storage/x.h
#     would shadow PostgreSQL's own storage/x.h).
# Prints each violation and ends with "N passed, N failed" like the other
# suites (one check per file).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
pgbin=${CTXSTORE_PGBIN:-/usr/lib/postgresql/15/bin}
pg_include=$("$pgbin/pg_config" --includedir-server)
layers=(util objstore format table memwal merge scan maintenance)

rank() {  # position of a storage folder in the order; 99 for tests/tools
  local i
  for i in "${!layers[@]}"; do
    [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }
  done
  echo 99
}

# PostgreSQL's header folders and top-level headers: what storage/ must not
# include.
pg_names=$(cd "$pg_include" && ls)

passed=0
failed=0
fail() { echo "layers: $*"; bad=1; }

check_file() {  # $1 = path relative to storage/
  local f=$1 own inc dir
  own=$(rank "${f%%/*}")
  while read -r kind inc; do
    case "$inc" in
      *../*) fail "storage/$f includes \"$inc\", which climbs out of its folder" ;;
    esac
    dir=${inc%%/*}
    if [ "$dir" != "$inc" ] && [ -d "$repo/storage/$dir" ] && [ "$dir" != tests ]; then
      [ "$(rank "$dir")" -le "$own" ] ||
        fail "storage/$f includes \"$inc\": ${f%%/*}/ comes before $dir/ and may not use it"
    elif [ "$kind" = q ] && [ "$dir" = "$inc" ] &&
         [ ! -e "$repo/storage/${f%/*}/$inc" ] && [ "${f%%/*}" != tests ]; then
      fail "storage/$f includes \"$inc\", which is no file of its folder (name the folder: \"util/cx_buf.h\")"
    fi
    if [ "${f%%/*}" = include ] && [ "$kind" = q ] && [ "$dir" != ctxstore ]; then
      fail "storage/$f includes \"$inc\": a public header includes public headers only"
    fi
    if echo "$pg_names" | grep -qxF "$dir"; then
      fail "storage/$f includes \"$inc\", a PostgreSQL header"
    fi
  done < <(sed -n -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/q \1/p' \
                  -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/a \1/p' "$repo/storage/$f")
  # Reachable through -I<repo root> as storage/<f>, or through -Istorage as <f>.
  if [ -e "$pg_include/storage/$f" ] || [ -e "$pg_include/$f" ]; then
    fail "storage/$f has the name of a PostgreSQL header"
  fi
}

cd "$repo/storage" || exit 1
for f in $(find . -name '*.[ch]' -not -path './build*' | sed 's|^\./||' | sort); do
  case "$f" in
    */*) ;;
    *) echo "layers: storage/$f is outside every subsystem folder"; failed=$((failed + 1)); continue ;;
  esac
  bad=0
  check_file "$f"
  if [ "$bad" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
pg_side=(fdw bgworker shared)
for side in "${pg_side[@]}"; do
  if echo "$pg_names" | grep -qxF "$side"; then
    echo "layers: $side/ has the name of a PostgreSQL header folder"; failed=$((failed + 1))
  fi
done

# The folders of the PostgreSQL side whose headers a file of folder $1 must
# not include.
forbidden_sides() {
  case "$1" in
    fdw) echo bgworker ;;
    bgworker) echo fdw ;;
    shared) echo fdw bgworker ;;
  esac
}

for f in $(for side in "${pg_side[@]}"; do ls "$repo/$side"/*.[ch]; done); do
  bad=0
  side=$(basename "$(dirname "$f")")
  if grep -q '#include "\.\./' "$f"; then fail "${f#$repo/} includes a path that climbs with ../"; fi
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    case "$inc" in
      */*) [ -d "$repo/storage/${inc%%/*}" ] &&
             fail "${f#$repo/} includes \"$inc\", an engine header that is not public (use \"ctxstore/engine.h\")" ;;
      cx_*) [ -n "$(find "$repo/storage" -name "$inc" -not -path '*/build*')" ] &&
             fail "${f#$repo/} includes \"$inc\", an engine header that is not public" ;;
    esac
    for other in $(forbidden_sides "$side"); do
      [ -e "$repo/$other/${inc##*/}" ] &&
        fail "${f#$repo/} includes \"$inc\", a header of $other/ (what $side/ and $other/ share goes in shared/)"
    done
  done
  if [ "$bad" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
