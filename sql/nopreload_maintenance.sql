--
-- Without shared_preload_libraries there are no workers: the maintenance
-- functions that ask them fail with the hint; pending_wal_generations reads
-- the store itself; ctxstore.workers is empty; the GUCs still exist.
--
CREATE EXTENSION ctxstore;
CREATE SERVER nopreload_m_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE nopreload_m (id text, n int)
  SERVER nopreload_m_srv OPTIONS (uri 'file://@store_root@/nopreload_m');

SELECT ctxstore.flush('nopreload_m');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.merge_wal('nopreload_m');
SELECT ctxstore.cleanup_wal('nopreload_m');
SELECT ctxstore.pending_wal_generations('nopreload_m');
SELECT count(*) FROM ctxstore.workers;
SELECT current_setting('ctxstore.shard_id') ~ '^[A-Za-z0-9._-]+-[0-9]+$' AS shard_id_ok;
SHOW ctxstore.failpoints;

-- Ownership comes first.
CREATE ROLE nopreload_m_user;
GRANT SELECT ON nopreload_m TO nopreload_m_user;
SET ROLE nopreload_m_user;
SELECT ctxstore.pending_wal_generations('nopreload_m');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.flush('nopreload_m');
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP ROLE nopreload_m_user;
