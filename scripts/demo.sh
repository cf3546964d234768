#!/usr/bin/env bash
# Runs the product: builds and installs ctxstore, starts a local PostgreSQL 15
# cluster with ctxstore preloaded, and creates a demo foreign table on a store
# in the local filesystem, with a few sample conversation rows.
#
#   bash scripts/demo.sh          start (idempotent: reuses a running demo)
#   bash scripts/demo.sh stop     stop the demo cluster
#   bash scripts/demo.sh clean    stop it and delete its data and store
#
# Run as root on Debian 12.  The cluster runs as the postgres OS user.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${CTXSTORE_DEMO_DIR:-/var/tmp/ctxstore-demo}
port=${CTXSTORE_DEMO_PORT:-5499}
pgbin=/usr/lib/postgresql/15/bin
data="$dir/data"
store="$dir/store"

as_pg() { runuser -u postgres -- "$@"; }
running() { [ -f "$data/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

case "${1:-start}" in
stop)
  running && as_pg "$pgbin/pg_ctl" -D "$data" -m fast stop
  exit 0 ;;
clean)
  running && as_pg "$pgbin/pg_ctl" -D "$data" -m fast stop
  rm -rf "$dir"
  exit 0 ;;
start) ;;
*) echo "usage: $0 [start|stop|clean]" >&2; exit 2 ;;
esac

bash "$repo/scripts/install-deps.sh"
make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" all install

mkdir -p "$dir"
chown postgres: "$dir"
if [ ! -d "$data" ]; then
  as_pg "$pgbin/initdb" -D "$data" --auth=trust -U postgres >/dev/null
  cat >> "$data/postgresql.conf" <<CONF
shared_preload_libraries = 'ctxstore'
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
CONF
fi
running || as_pg "$pgbin/pg_ctl" -D "$data" -l "$dir/server.log" -w start >/dev/null

psql_demo() { "$pgbin/psql" -X -q -h "$dir" -p "$port" -U postgres "$@"; }
psql_demo -d postgres -tc "SELECT 1 FROM pg_database WHERE datname = 'ctxdemo'" | grep -q 1 \
  || psql_demo -d postgres -c "CREATE DATABASE ctxdemo"

psql_demo -d ctxdemo -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS ctxstore;
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = 'local_lake') THEN
    CREATE SERVER local_lake FOREIGN DATA WRAPPER ctxstore;
  END IF;
  IF to_regclass('public.context') IS NULL THEN
    CREATE FOREIGN TABLE context (
      id text NOT NULL, external_id text, bot_id text, session_id text, role text,
      content text, metadata jsonb, embedding real[], created_at timestamptz
    ) SERVER local_lake OPTIONS (uri 'file://$store/context', key 'id');
    INSERT INTO context VALUES
      ('m1', NULL, 'helpdesk', 's1', 'user', 'My order has not arrived.', '{"lang": "en"}', '{0.1,0.2,0.3}', now()),
      ('m2', NULL, 'helpdesk', 's1', 'assistant', 'Sorry to hear that. What is the order number?', '{"lang": "en"}', '{0.2,0.1,0.4}', now()),
      ('m3', NULL, 'helpdesk', 's1', 'user', 'It is 4711.', '{"lang": "en"}', '{0.3,0.3,0.1}', now()),
      ('m4', NULL, 'coder', 's2', 'user', 'Write a haiku about object storage.', '{"lang": "en"}', NULL, now());
  END IF;
END
\$\$;
SQL

cat <<MSG
ctxstore demo is running (PostgreSQL 15, port $port, store in $store).
Connect:   psql -h $dir -p $port -U postgres ctxdemo
Try:       SELECT session_id, role, content FROM context WHERE session_id = 's1' ORDER BY created_at;
           INSERT INTO context (id, session_id, role, content, created_at) VALUES ('m5', 's2', 'assistant', 'Buckets hold our words', now());
           SELECT ctxstore.stats('context');
Stop:      bash scripts/demo.sh stop      (delete everything: bash scripts/demo.sh clean)
MSG
