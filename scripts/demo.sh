#!/usr/bin/env bash
# Runs the product: builds and installs ctxstore, starts a local PostgreSQL 15
# cluster with ctxstore preloaded, and creates one foreign table for each
# workload ctxstore serves (docs/SQL.md, "Workloads"), each on its own store
# in the local filesystem and with sample rows:
#   context       agent context: conversation turns, visible at COMMIT, one row per id
#   rollouts      RL rollouts: append-only steps with rewards, sealed every 5 s
#   synthetic_qa  a generated dataset: a schema of its own, loaded in bulk
#
#   bash scripts/demo.sh          start (idempotent: reuses a running demo)
#   bash scripts/demo.sh stop     stop the demo cluster
#   bash scripts/demo.sh clean    stop it and delete its data and stores
#
#   CTXSTORE_DEMO_DIR   cluster, stores, socket and log (default /var/tmp/ctxstore-demo)
#   CTXSTORE_DEMO_PORT  the cluster's port (default 5499)
#   CTXSTORE_PGBIN      PostgreSQL's programs (default /usr/lib/postgresql/15/bin),
#                       e.g. a relocated copy, as for scripts/test.sh
#
# Run as root on Debian 12.  The cluster runs as the postgres OS user.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${CTXSTORE_DEMO_DIR:-/var/tmp/ctxstore-demo}
port=${CTXSTORE_DEMO_PORT:-5499}
default_pgbin=/usr/lib/postgresql/15/bin
pgbin=${CTXSTORE_PGBIN:-$default_pgbin}
data="$dir/data"
store="$dir/store"

say() { printf 'demo: %s\n' "$*"; }
# From /: PostgreSQL's programs return to their working directory after
# resolving their own path, and the caller's (a private checkout, say) may be
# closed to the postgres user.
as_pg() { (cd / && runuser -u postgres -- "$@"); }
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

say "checking system packages (installs what is missing with apt-get)"
bash "$repo/scripts/install-deps.sh"
say "building ctxstore and installing it into $("$pgbin/pg_config" --pkglibdir) (some 20 s on 2 cores the first time)"
make -C "$repo" -s PG_CONFIG="$pgbin/pg_config" all install

mkdir -p "$dir"
chown postgres: "$dir"
if [ ! -d "$data" ]; then
  say "creating a PostgreSQL cluster in $data"
  as_pg "$pgbin/initdb" -D "$data" --auth=trust -U postgres >/dev/null
  cat >> "$data/postgresql.conf" <<CONF
shared_preload_libraries = 'ctxstore'
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
CONF
fi
if ! running; then
  say "starting PostgreSQL on port $port (log: $dir/server.log)"
  as_pg "$pgbin/pg_ctl" -D "$data" -l "$dir/server.log" -w start >/dev/null
fi

psql_demo() { "$pgbin/psql" -X -q -h "$dir" -p "$port" -U postgres "$@"; }
psql_demo -d postgres -tc "SELECT 1 FROM pg_database WHERE datname = 'ctxdemo'" | grep -q 1 \
  || psql_demo -d postgres -c "CREATE DATABASE ctxdemo"

say "creating the demo tables that are missing, with their sample rows, in database ctxdemo"
# Each table is created, and given its sample rows, only if it is missing, so
# that running the demo again adds nothing.  Sample rows get created_at values
# a second apart, so ORDER BY created_at has one answer.
psql_demo -d ctxdemo -v ON_ERROR_STOP=1 \
  -v context_uri="file://$store/context" -v rollouts_uri="file://$store/rollouts" \
  -v synthetic_qa_uri="file://$store/synthetic_qa" <<'SQL'
SET client_min_messages = warning;  -- no notices for what a previous run created
CREATE EXTENSION IF NOT EXISTS ctxstore;
CREATE SERVER IF NOT EXISTS local_lake FOREIGN DATA WRAPPER ctxstore;

SELECT to_regclass('public.context') IS NULL AS missing \gset
\if :missing
CREATE FOREIGN TABLE context (
  id text NOT NULL, external_id text, bot_id text, session_id text, role text,
  content text, metadata jsonb, embedding real[], created_at timestamptz
) SERVER local_lake
  OPTIONS (uri :'context_uri', key 'id', unique_key 'true', seal_on_insert 'true');
INSERT INTO context VALUES
  ('m1', NULL, 'helpdesk', 's1', 'user', 'My order has not arrived.', '{"lang": "en"}', '{0.1,0.2,0.3}', now() - interval '4 s'),
  ('m2', NULL, 'helpdesk', 's1', 'assistant', 'Sorry to hear that. What is the order number?', '{"lang": "en"}', '{0.2,0.1,0.4}', now() - interval '3 s'),
  ('m3', NULL, 'helpdesk', 's1', 'user', 'It is 4711.', '{"lang": "en"}', '{0.3,0.3,0.1}', now() - interval '2 s'),
  ('m4', NULL, 'coder', 's2', 'user', 'Write a haiku about object storage.', '{"lang": "en"}', NULL, now() - interval '1 s');
\endif

SELECT to_regclass('public.rollouts') IS NULL AS missing \gset
\if :missing
CREATE FOREIGN TABLE rollouts (
  id text NOT NULL, rollout_id text, env text, policy text, step int,
  observation jsonb, action text, reward float8, done bool, created_at timestamptz
) SERVER local_lake
  OPTIONS (uri :'rollouts_uri', key 'id', unique_key 'false',
           seal_on_insert 'false', flush_interval '5s');
INSERT INTO rollouts
SELECT 'r' || r || ':' || s, 'r' || r, 'gridworld-v1', 'ppo-7', s,
       jsonb_build_object('x', s, 'y', r), (ARRAY['up', 'left', 'up', 'right'])[s + 1],
       CASE WHEN s = 3 THEN 2 * r - 1.0 ELSE -0.1 END, s = 3,
       now() - interval '10 s' + (r * 4 + s) * interval '1 s'
FROM generate_series(0, 1) r, generate_series(0, 3) s;
-- Sealed now rather than by the sweeper, so the rows show at once.
DO $$ BEGIN PERFORM ctxstore.flush('rollouts'); END $$;
\endif

SELECT to_regclass('public.synthetic_qa') IS NULL AS missing \gset
\if :missing
CREATE FOREIGN TABLE synthetic_qa (
  id bigint NOT NULL, prompt text, answer text, topic text, difficulty int2,
  score real, labels text[], generator jsonb, created_at timestamptz
) SERVER local_lake
  OPTIONS (uri :'synthetic_qa_uri', key 'id', merge_after_generations '1');
INSERT INTO synthetic_qa
SELECT g, format('What is %s times %s?', g % 97, g % 89), ((g % 97) * (g % 89))::text,
       (ARRAY['arithmetic', 'algebra', 'geometry'])[g % 3 + 1], (g % 5 + 1)::int2,
       (g % 100) / 100.0, ARRAY['generated', 'v1'], '{"model": "demo-gen", "seed": 42}',
       now() - interval '1 h' + g * interval '1 ms'
FROM generate_series(1, 10000) g;
\endif
SQL

demo_env="CTXSTORE_DEMO_DIR=$(printf %q "$dir") CTXSTORE_DEMO_PORT=$port"
[ "$pgbin" != "$default_pgbin" ] && demo_env+=" CTXSTORE_PGBIN=$(printf %q "$pgbin")"
demo_cmd="$demo_env bash $(printf %q "$repo/scripts/demo.sh")"
cat <<MSG
ctxstore demo is running (PostgreSQL 15, port $port, stores in $store).
Connect:   psql -h $dir -p $port -U postgres ctxdemo
Tables (recipes in docs/SQL.md, "Workloads"):
  context       agent context: a turn is visible to every session when COMMIT returns
  rollouts      RL rollouts: steps are durable at COMMIT, visible within flush_interval (5 s)
  synthetic_qa  a generated dataset of 10000 rows, loaded by one INSERT ... SELECT
Try:
  SELECT session_id, role, content FROM context WHERE session_id = 's1' ORDER BY created_at;
  INSERT INTO context (id, session_id, role, content, created_at) VALUES ('m5', 's2', 'assistant', 'Buckets hold our words', now());
  SELECT rollout_id, count(*) AS steps, sum(reward) AS return FROM rollouts GROUP BY rollout_id ORDER BY rollout_id;
  INSERT INTO rollouts (id, rollout_id, step, reward, done, created_at) VALUES ('r2:0', 'r2', 0, 0.5, false, now());
  SELECT ctxstore.flush('rollouts');    -- or wait 5 s: then r2 shows up
  SELECT topic, count(*), round(avg(score)::numeric, 3) AS avg_score FROM synthetic_qa GROUP BY topic ORDER BY topic;
  SELECT s->'rows' AS rows, s->'fragments' AS fragments, s->'merge'->'merges' AS merges FROM ctxstore.stats('synthetic_qa') s;
Stop:      $demo_cmd stop
Delete everything:  $demo_cmd clean
MSG
