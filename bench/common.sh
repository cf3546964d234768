# bench/common.sh — shared by the benchmarks: a throw-away PostgreSQL 15
# cluster with ctxstore preloaded, run as the postgres OS user.
# Source it; call bench_start, then psql_b / pgbench_b, then bench_stop.
# CTXSTORE_BENCH_CONF: more postgresql.conf lines (e.g. a GUC to compare).
# CTXSTORE_BENCH_STORES: a directory to hold the stores (e.g. on /dev/shm, to
# see what the device's fsyncs and inode allocation cost): its subdirectory
# ctxstore-bench-stores is made afresh and linked as $bench_dir/stores; the
# cluster's own files stay in $bench_dir.

pgbin=${CTXSTORE_PGBIN:-/usr/lib/postgresql/15/bin}  # a relocated copy: CTXSTORE_PGBIN
bench_dir=${CTXSTORE_BENCH_DIR:-/var/tmp/ctxstore-bench}
bench_port=${CTXSTORE_BENCH_PORT:-5498}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

as_pg() { runuser -u postgres -- "$@"; }
psql_b() { "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$bench_dir" -p "$bench_port" -U postgres -d bench "$@"; }
pgbench_b() { "$pgbin/pgbench" -h "$bench_dir" -p "$bench_port" -U postgres "$@" bench; }

bench_start() {
  bash "$repo/scripts/install-deps.sh" >/dev/null
  # CTXSTORE_BENCH_INSTALL=0: CTXSTORE_PGBIN's tree already holds the build
  # to measure (bench/compare.sh installs one build per PostgreSQL copy).
  [ "${CTXSTORE_BENCH_INSTALL:-1}" = 0 ] ||
    make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" all install >/dev/null
  [ -f "$bench_dir/data/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" -D "$bench_dir/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$bench_dir"
  mkdir -p "$bench_dir"
  if [ -n "${CTXSTORE_BENCH_STORES:-}" ]; then
    local stores="$CTXSTORE_BENCH_STORES/ctxstore-bench-stores"
    rm -rf "$stores"
    mkdir -p "$stores"
    chown postgres: "$stores"
    ln -s "$stores" "$bench_dir/stores"
  else
    mkdir "$bench_dir/stores"
  fi
  chown -R postgres: "$bench_dir"
  as_pg "$pgbin/initdb" -D "$bench_dir/data" --auth=trust -U postgres >/dev/null
  cat >> "$bench_dir/data/postgresql.conf" <<CONF
shared_preload_libraries = 'ctxstore'
port = $bench_port
listen_addresses = ''
unix_socket_directories = '$bench_dir'
max_connections = 64
shared_buffers = 1GB
${CTXSTORE_BENCH_CONF:-}
CONF
  as_pg "$pgbin/pg_ctl" -D "$bench_dir/data" -l "$bench_dir/server.log" -w start >/dev/null
  "$pgbin/psql" -X -q -h "$bench_dir" -p "$bench_port" -U postgres -d postgres -c "CREATE DATABASE bench"
  psql_b -c "CREATE EXTENSION ctxstore; CREATE SERVER local FOREIGN DATA WRAPPER ctxstore;"
}

bench_stop() {
  as_pg "$pgbin/pg_ctl" -D "$bench_dir/data" -m fast stop >/dev/null
}

# The wide agent-context table, as a foreign table and as a heap.
context_columns="id text NOT NULL, external_id text, bot_id text, session_id text, role text,
  content text, metadata jsonb, embedding real[], created_at timestamptz"

create_context_tables() {  # $1 = name suffix, $2 = more table options
  psql_b <<SQL
CREATE TABLE heap_$1 ($context_columns, PRIMARY KEY (id));
CREATE FOREIGN TABLE ctx_$1 ($context_columns)
  SERVER local OPTIONS (uri 'file://$bench_dir/stores/$1', key 'id'${2:+, $2});
SQL
}

# A server named $1 on the emulators' Azurite at endpoint $2 (Azurite itself
# or its fault proxy: CX_TEST_AZ_ENDPOINT or CX_TEST_AZ_PROXY, exported by
# scripts/with-emulators.sh), with its user mapping and a container "bench".
create_az_server() {
  perl -I"$repo/t" -MCxStores -e 'CxStores::az_create_container("bench")'
  psql_b <<SQL
CREATE SERVER $1 FOREIGN DATA WRAPPER ctxstore OPTIONS (endpoint '$2');
CREATE USER MAPPING FOR CURRENT_USER SERVER $1
  OPTIONS (account_name '$CX_TEST_AZ_ACCOUNT', account_key '$CX_TEST_AZ_KEY');
SQL
}

# One single-row INSERT of a context row into table $1 (a pgbench script:
# :client_id is pgbench's).
single_row_insert() {
  cat <<SQL
INSERT INTO $1 (id, bot_id, session_id, role, content, metadata, created_at)
VALUES (gen_random_uuid()::text, 'bot', 's' || :client_id, 'user',
        'a short agent message of a few words', '{"k": 1}', now());
SQL
}

# Best wall time of $repeat runs of query $1, in ms.
best_ms() {
  local best="" t
  for _ in $(seq "${repeat:-5}"); do
    t=$(psql_b -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}

# tps from pgbench output
tps_of() { sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
ticks() {  # $1 = pid, $2 = first field (14: utime+stime, 16: cutime+cstime)
  awk -v f="$2" '{ sub(/^.*\) /, ""); print $(f - 2) + $(f - 1) }' "/proc/$1/stat"
}
worker_pid() { psql_b -tAc "SELECT pid FROM ctxstore.workers WHERE kind = '$1'"; }
# CPU ticks of the sessions (through the postmaster's cutime+cstime, which
# collects its children's CPU as they exit), the writer and the maintenance
# worker, as "sessions writer maintenance".
cpu_ticks() {
  echo "$(ticks "$(head -1 "$bench_dir/data/postmaster.pid")" 16)" \
    "$(ticks "$(worker_pid writer)" 14)" "$(ticks "$(worker_pid maintenance)" 14)"
}
# Microseconds of CPU per transaction of each process between two
# cpu_ticks ($1, $2), for $3 transactions: "sessions writer maintenance".
cpu_per_txn() {
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    for (i = 1; i <= 3; i++) printf "%s%.1f", (i > 1 ? " " : ""), (y[i] - x[i]) * 1e6 / hz / n }'
}

# Median wall time in ms of $repeat runs of statement $2 in one session, after
# statements $1 (e.g. a PREPARE) and a warm-up run (the session's first read
# of a store loads its snapshot).
median_ms() {
  { echo "$1"
    echo '\o /dev/null'
    echo '\timing on'
    for _ in $(seq $((${repeat:-5} + 1))); do echo "$2;"; done
  } | psql_b | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n +2 | sort -n |
    awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'
}

# LanceDB for the side-by-side benchmarks, pinned, in a project-local folder.
lance_prefix=$repo/bench/.node	# gitignored
lance_packages=(@lancedb/lancedb@0.31.0 apache-arrow@18.1.0)
install_lance() {
  local v
  v=$(node -p "require('$lance_prefix/node_modules/@lancedb/lancedb/package.json').version" 2>/dev/null || true)
  [ "$v" = "${lance_packages[0]##*@}" ] && return
  echo "installing ${lance_packages[*]} into $lance_prefix" >&2
  mkdir -p "$lance_prefix"
  npm install --prefix "$lance_prefix" --no-audit --no-fund --silent --save-exact "${lance_packages[@]}" >&2
}
