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

-- The store behind a foreign table: its version, fragments and rows, the
-- writer worker's counters for it and this backend's read requests.
CREATE FUNCTION ctxstore.stats(t regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'ctxstore_stats'
LANGUAGE C STRICT VOLATILE;

-- Every version of the store behind a foreign table, oldest first.
CREATE FUNCTION ctxstore.versions(t regclass,
  OUT version bigint, OUT committed_at timestamptz,
  OUT operation text, OUT rows bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'ctxstore_versions'
LANGUAGE C STRICT VOLATILE ROWS 100;
