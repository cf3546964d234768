/* ctxstore--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION ctxstore" to load this file. \quit

-- Everything the extension defines lives in schema ctxstore, which belongs to
-- the extension (DROP EXTENSION removes it).  Its functions check privileges
-- on the foreign table they are given, so everyone may look them up.
CREATE SCHEMA ctxstore;
GRANT USAGE ON SCHEMA ctxstore TO PUBLIC;

CREATE FUNCTION ctxstore.fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'ctxstore_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION ctxstore.fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'ctxstore_fdw_validator'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER ctxstore
  HANDLER ctxstore.fdw_handler
  VALIDATOR ctxstore.fdw_validator;

-- Every option the wrapper takes: its level (server, user mapping, foreign
-- table, column), whom a foreign-table option governs (table or store) and
-- the default a table that leaves it out gets (NULL: none, or for server
-- options the object-store backend's own).
CREATE FUNCTION ctxstore.options(
  OUT name text, OUT level text, OUT scope text, OUT default_value text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ctxstore_options'
LANGUAGE C STRICT IMMUTABLE ROWS 40;

-- The store behind a foreign table: its version, fragments and rows, every
-- shard's unmerged generations, the workers' counters for it (appends, WAL
-- entries, seals, merges, object-store requests) and this backend's read
-- requests.  Needs SELECT on the table.
CREATE FUNCTION ctxstore.stats(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_stats'
LANGUAGE C STRICT VOLATILE;

-- Every version of the store behind a foreign table, oldest first, and
-- whether ctxstore.gc(t) would retain it now (false: GC may already have
-- deleted objects only it names, and it may not read).
CREATE FUNCTION ctxstore.versions(t regclass,
  OUT version bigint, OUT committed_at timestamptz,
  OUT operation text, OUT rows bigint, OUT retained boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ctxstore_versions'
LANGUAGE C STRICT VOLATILE ROWS 100;

-- The base fragments of the store behind a foreign table, in the order its
-- version lists them: rows, rows deleted, the shard whose merge wrote each,
-- and the statistics bounds (min, max) of the table's order columns (its
-- sort_key, or its key) as text; a text min may be a prefix.  Reads only the
-- version's manifest.  Needs SELECT on the table.
CREATE FUNCTION ctxstore.fragments(t regclass,
  OUT fragment integer, OUT rows bigint, OUT deleted bigint,
  OUT origin_shard text, OUT min text[], OUT max text[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ctxstore_fragments'
LANGUAGE C STRICT VOLATILE ROWS 100;

-- Maintenance of the store behind a foreign table.  Each needs ownership of
-- the table; all but pending_wal_generations ask the writer worker (so they
-- need shared_preload_libraries) and wait for it, bounded by
-- statement_timeout and ctxstore.commit_timeout.  pg_cron can schedule them.

-- Seals this cluster's memtable of the store now: rows written with
-- seal_on_insert off become visible.
CREATE FUNCTION ctxstore.flush(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_flush'
LANGUAGE C STRICT VOLATILE;

-- Seals, merges every pending generation of this cluster's shard into the
-- base table and drains them; returns the number of generations merged.
CREATE FUNCTION ctxstore.merge_wal(t regclass)
RETURNS integer
AS 'MODULE_PATHNAME', 'ctxstore_merge_wal'
LANGUAGE C STRICT VOLATILE;

-- Seals, then merges as merge_wal does if at least cleanup_min_generations
-- are pending; returns the number of generations merged (0 if it did not).
CREATE FUNCTION ctxstore.cleanup_wal(t regclass)
RETURNS integer
AS 'MODULE_PATHNAME', 'ctxstore_cleanup_wal'
LANGUAGE C STRICT VOLATILE;

-- Unmerged generations of this cluster's shard (ctxstore.shard_id), read
-- from the store (works without the workers); stats() lists every shard's.
CREATE FUNCTION ctxstore.pending_wal_generations(t regclass)
RETURNS integer
AS 'MODULE_PATHNAME', 'ctxstore_pending_wal_generations'
LANGUAGE C STRICT VOLATILE;

-- Builds or extends the store's key index: indexes the key column (and the
-- upsert_key column, when the table sets one) of the base fragments no index
-- segment covers yet, merges a column's segments when there are more than
-- four, and commits one base version (operation "index").  Returns what it
-- did: segments_written, keys_indexed, fragments_covered, segments_merged,
-- base_version (0 when there was nothing to do).  Works without the workers;
-- the maintenance worker also runs it after each merge.
CREATE FUNCTION ctxstore.create_id_index(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_create_id_index'
LANGUAGE C STRICT VOLATILE;

-- Publishes the store's newest base version as an Iceberg v2 snapshot under
-- <store>/iceberg/ (docs/OPERATIONS.md "Reading a store from other
-- engines"); publishing a version already published adds nothing.  Returns
-- published, metadata_location, snapshot_id, metadata_version,
-- base_version, data_files, records, delete_files, position_deletes.  Works
-- without the workers (and so from pg_cron); the maintenance worker also
-- publishes after merges when the table sets iceberg_interval.
CREATE FUNCTION ctxstore.publish_iceberg(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_publish_iceberg'
LANGUAGE C STRICT VOLATILE;

-- Store lifecycle (fdw/cx_lifecycle.c), by the owner of the table, without
-- the workers (and so from pg_cron); the maintenance worker also runs them
-- when the table sets compact_interval or gc_interval.  compact rewrites
-- every small base fragment into fewer, larger ones; gc deletes the
-- objects no retained version references (dry_run: reports only).
CREATE FUNCTION ctxstore.compact(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_compact'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION ctxstore.gc(t regclass, dry_run boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_gc'
LANGUAGE C STRICT VOLATILE;

-- The workers: one row per worker (writer, maintenance).  Store URIs and
-- errors are shown to members of pg_read_all_stats only.  ring_batches and
-- dsm_batches (writer only): the batches it took from the request ring and
-- in DSM segments since the server started.  heap_bytes: the heap the
-- worker's malloc has handed out and not had back (its free heap excluded),
-- cache_bytes: the part of it the engine's caches hold, both as the worker
-- last published them, at most once a second and within a second of going
-- idle (NULL until it first did).
-- gathers and gather_sleeps (writer only): its waits after a round for the
-- sessions it acknowledged to commit again, and its sleeps in them.
CREATE FUNCTION ctxstore.worker_info(
  OUT pid integer, OUT kind text, OUT shard_id text, OUT stores integer,
  OUT store_uris text[], OUT queue_depth integer, OUT rounds bigint,
  OUT commits bigint, OUT last_error text, OUT last_error_at timestamptz,
  OUT phase text, OUT progress_done bigint, OUT progress_total bigint,
  OUT ring_batches bigint, OUT dsm_batches bigint, OUT heap_bytes bigint,
  OUT cache_bytes bigint, OUT gathers bigint, OUT gather_sleeps bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ctxstore_worker_info'
LANGUAGE C STRICT VOLATILE ROWS 2;

CREATE VIEW ctxstore.workers AS SELECT * FROM ctxstore.worker_info();
GRANT SELECT ON ctxstore.workers TO PUBLIC;

-- ALTER FOREIGN TABLE (or ALTER TABLE) on a ctxstore table changes its
-- store's columns (docs/SQL.md, "Changing a table's columns"): the start
-- trigger notes the table's columns, the end trigger commits the difference
-- to the store (ADD, DROP, RENAME COLUMN, widening ALTER COLUMN TYPE) and
-- refuses what the store cannot do, so that the command fails instead.
CREATE FUNCTION ctxstore.alter_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'ctxstore_alter_start'
LANGUAGE C;

CREATE FUNCTION ctxstore.alter_end()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'ctxstore_alter_end'
LANGUAGE C;

CREATE EVENT TRIGGER ctxstore_alter_start ON ddl_command_start
  WHEN TAG IN ('ALTER FOREIGN TABLE', 'ALTER TABLE')
  EXECUTE FUNCTION ctxstore.alter_start();

CREATE EVENT TRIGGER ctxstore_alter_end ON ddl_command_end
  WHEN TAG IN ('ALTER FOREIGN TABLE', 'ALTER TABLE')
  EXECUTE FUNCTION ctxstore.alter_end();

-- Distances between embedding vectors (docs/SQL.md, "Similarity search"):
-- Euclidean, 1 - cosine similarity (NaN for a zero vector) and the plain
-- inner product (larger is nearer: order it DESC).  Arrays of one dimension
-- without NULL elements, of the same length.  ORDER BY one of them LIMIT k
-- on a ctxstore table is answered by the scan.
CREATE FUNCTION ctxstore.l2_distance(real[], real[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_l2_distance'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ctxstore.l2_distance(float8[], float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_l2_distance'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ctxstore.cosine_distance(real[], real[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_cosine_distance'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ctxstore.cosine_distance(float8[], float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_cosine_distance'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ctxstore.inner_product(real[], real[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_inner_product'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION ctxstore.inner_product(float8[], float8[]) RETURNS float8
AS 'MODULE_PATHNAME', 'ctxstore_inner_product'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
