#!/usr/bin/env bash
# Independent Parquet and Avro readers for the tests (installed from npm into
# .readers/ of the repository, which git ignores): DuckDB's Node API, which
# reads Parquet with no extension download, hyparquet with
# hyparquet-compressors for ZSTD, and avsc for Avro; and node-postgres (pg),
# the plain SQL client of the chaos soak's sessions (t/soak_driver.mjs).
# Exact versions, so that every run compares ctxstore's files against the
# same readers.
#
#   scripts/readers.sh install   npm install into .readers/ unless done;
#                                prints the NODE_PATH that finds them
#
# The test servers and drivers run as the postgres user, which may not read
# the checkout: scripts/test-inputs.sh links the installed packages into the
# run's TEST_WORK for them.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
prefix="$repo/.readers"
packages=(@duckdb/node-api@1.5.6-r.1 hyparquet@1.33.0 hyparquet-compressors@1.1.2 avsc@5.7.9 pg@8.16.3)

# Whether every package is installed at its pinned version.
installed() {
  local p name version
  for p in "${packages[@]}"; do
    name=${p%@*}; version=${p##*@}
    [ "$(node -p "require('$prefix/node_modules/$name/package.json').version" 2>/dev/null)" = "$version" ] \
      || return 1
  done
}

install() {
  if ! installed; then
    echo "readers: installing ${packages[*]} into $prefix" >&2
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --silent --save-exact "${packages[@]}" \
      >"$prefix/npm.log" 2>&1 \
      || { cat "$prefix/npm.log" >&2; echo "readers: npm install failed" >&2; return 1; }
    installed || { echo "readers: npm installed other versions than ${packages[*]}" >&2; return 1; }
    # Test drivers running as another user read a copy (hard links).
    chmod -R a+rX "$prefix"
  fi
  echo "$prefix/node_modules"
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install"; exit 2 ;;
esac
