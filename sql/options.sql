--
-- Options are checked at CREATE / ALTER time, each at its own level.
--
CREATE EXTENSION ctxstore;

-- The wrapper itself takes no options.
ALTER FOREIGN DATA WRAPPER ctxstore OPTIONS (endpoint 'https://example.com');

-- Server level.
CREATE SERVER opt_srv FOREIGN DATA WRAPPER ctxstore OPTIONS (
  endpoint 'https://s3.eu-west-1.amazonaws.com', region 'eu-west-1',
  url_style 'virtual', conditional_put 'off', connect_timeout '500ms',
  request_timeout '2min', retry_max_attempts '3', retry_max_seconds '1.5',
  ca_file '/etc/ssl/certs/ca-certificates.crt', tls_verify 'on',
  list_page_size '500', allow_env_credentials 'off');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (bucket 'x');
\echo :LAST_ERROR_SQLSTATE
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (uri 'file:///tmp/x');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (endpoint 's3.amazonaws.com');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (url_style 'host');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (conditional_put 'maybe');
-- Values the engine reads are checked by the engine's own parsers: what the
-- validator accepts, opening a store accepts.
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (conditional_put 't');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (connect_timeout '0');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (request_timeout '-1');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (request_timeout 'soon');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (request_timeout '1d');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (retry_max_seconds '-1');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (retry_max_attempts '0');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (retry_max_attempts '101');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (tls_verify 'perhaps');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (ca_file 'certs/ca.pem');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (list_page_size '0');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (list_page_size '5001');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (allow_env_credentials 'sure');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (region '');
-- Endpoints are readable by everyone: no user-info (not repeated back) and
-- no query string (where a SAS token would go).
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore
  OPTIONS (endpoint 'https://AKIAEXAMPLE:hunter2@s3.example.com');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore
  OPTIONS (endpoint 'https://acct.blob.core.windows.net/?sv=2022-11-02&sig=hunter2');
ALTER SERVER opt_srv OPTIONS (SET url_style 'sideways');
ALTER SERVER opt_srv OPTIONS (ADD compression_level '3');

-- Secrets are refused anywhere but in a user mapping, without echoing them.
CREATE SERVER opt_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (secret_access_key 'hunter2');
\echo :LAST_ERROR_SQLSTATE
ALTER SERVER opt_srv OPTIONS (ADD access_key_id 'AKIAEXAMPLE');
CREATE FOREIGN TABLE opt_bad (id text) SERVER opt_srv
  OPTIONS (uri 's3://bucket/x', sas_token 'sv=2020&sig=abc');
CREATE FOREIGN TABLE opt_bad (id text OPTIONS (account_key 'abc')) SERVER opt_srv
  OPTIONS (uri 's3://bucket/x');

-- User-mapping level.
CREATE USER MAPPING FOR PUBLIC SERVER opt_srv OPTIONS (
  access_key_id 'AKIAEXAMPLE', secret_access_key 'hunter2', session_token 't');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (endpoint 'https://x');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (
  account_name 'acct', account_key 'a2V5');
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (ADD password 'x');
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (ADD sas_token 'sv=1');
-- A bad credential value is refused without being repeated.
ALTER USER MAPPING FOR PUBLIC SERVER opt_srv OPTIONS (SET secret_access_key '');
-- Half a credential is refused when the mapping is made, not at first use.
CREATE SERVER opt_half FOREIGN DATA WRAPPER ctxstore;
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (access_key_id 'AKIAEXAMPLE');
\echo :LAST_ERROR_SQLSTATE
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (secret_access_key 'hunter2');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (session_token 't');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (account_key 'a2V5');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (account_name 'acct');
ALTER USER MAPPING FOR PUBLIC SERVER opt_srv OPTIONS (DROP secret_access_key);
-- A SAS token alone is whole (an endpoint may name the account).
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_half OPTIONS (sas_token 'sv=1');
DROP SERVER opt_half CASCADE;

-- Foreign-table level: every option with a valid value.
CREATE FOREIGN TABLE opt_ft (id text, v text OPTIONS (column_name 'value'))
  SERVER opt_srv OPTIONS (
    uri 's3://agents/context', key 'id', seal_on_insert 'false',
    unique_key 'true', flush_interval '30s',
    merge_after_generations '0', merge_max_generations '8',
    merge_max_bytes '1GB', cleanup_interval '0', cleanup_min_generations '1',
    pending_generations_warn '256', pending_generations_max '4096',
    target_rows_per_fragment '1048576',
    compression_level '22', version '3');
-- uri is required, and stays required.
CREATE FOREIGN TABLE opt_bad (id text) SERVER opt_srv;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE opt_ft OPTIONS (DROP uri);
-- Unknown table option.
ALTER FOREIGN TABLE opt_ft OPTIONS (ADD bucket 'x');
\echo :LAST_ERROR_SQLSTATE
-- Store URIs.
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'gs://bucket/x');
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri '/var/lib/ctxstore');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'file://');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'file://relative/path');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 's3://');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'az:///prefix');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 's3://AKIA:secret@bucket/x');
-- ".." walks out of a place and the root is no store's directory (22023).
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'file:///var/lib/../ctx');
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'file:///');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'file:////./');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 's3://bucket/a/../b');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'az://container/prefix');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET uri 'FILE:///var/lib/ctxstore');
-- Values.
ALTER FOREIGN TABLE opt_ft OPTIONS (SET key '');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET seal_on_insert 'sometimes');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET unique_key '2');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET flush_interval '-5');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET flush_interval '10 parsecs');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET cleanup_interval '-1s');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET merge_after_generations '-1');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET merge_max_generations '1');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET merge_max_bytes '0');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET merge_max_bytes '1.5 bytes');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET merge_max_bytes '64 apples');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET cleanup_min_generations '0');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET pending_generations_warn 'many');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET pending_generations_max '0');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET target_rows_per_fragment '1e6');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET compression_level '0');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET compression_level '23');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET version '0');
ALTER FOREIGN TABLE opt_ft OPTIONS (SET version '99999999999999999999');
-- Column level.
ALTER FOREIGN TABLE opt_ft ALTER COLUMN id OPTIONS (ADD name 'x');
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE opt_ft ALTER COLUMN id OPTIONS (ADD column_name '');
ALTER FOREIGN TABLE opt_ft ALTER COLUMN id OPTIONS (ADD uri 'file:///x');

-- What was accepted is stored as given; nothing else got in.
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'opt_srv';
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'opt_ft'::regclass;
SELECT attname, attfdwoptions FROM pg_attribute
  WHERE attrelid = 'opt_ft'::regclass AND attnum > 0 ORDER BY attnum;
SELECT count(*) AS mappings FROM pg_user_mappings WHERE srvname = 'opt_srv';

-- Two table columns may not name one store column.
CREATE FOREIGN TABLE opt_dup (a text, b text OPTIONS (column_name 'a'))
  SERVER opt_srv OPTIONS (uri 'file://@store_root@/options_dup');
INSERT INTO opt_dup VALUES ('x', 'y');

-- Credentials are shown to their user and to superusers only, as for
-- postgres_fdw: another role sees no options, and cannot read the catalog.
CREATE ROLE regress_cx_other;
GRANT USAGE ON FOREIGN SERVER opt_srv TO regress_cx_other;
SET ROLE regress_cx_other;
SELECT umuser = 0 AS public_mapping, umoptions FROM pg_user_mappings
  WHERE srvname = 'opt_srv' ORDER BY 1;
SELECT umoptions FROM pg_user_mapping;
RESET ROLE;

-- Who may reach an object store, and with which credentials.
CREATE ROLE regress_cx_opt_user;
GRANT USAGE ON FOREIGN DATA WRAPPER ctxstore TO regress_cx_opt_user;
-- Only a superuser may let a server use the environment's credentials.
SET ROLE regress_cx_opt_user;
CREATE SERVER opt_env FOREIGN DATA WRAPPER ctxstore OPTIONS (allow_env_credentials 'true');
\echo :LAST_ERROR_SQLSTATE
CREATE SERVER opt_env FOREIGN DATA WRAPPER ctxstore OPTIONS (allow_env_credentials 'off');
ALTER SERVER opt_env OPTIONS (SET allow_env_credentials 'on');
RESET ROLE;

-- A non-superuser without credentials is refused on every path, before
-- anything is sent (the endpoint does not answer).
CREATE SERVER opt_cloud FOREIGN DATA WRAPPER ctxstore OPTIONS (
  endpoint 'http://127.0.0.1:9', connect_timeout '200ms', retry_max_attempts '1');
GRANT USAGE ON FOREIGN SERVER opt_cloud TO regress_cx_opt_user;
CREATE FOREIGN TABLE opt_s3_ft (id text) SERVER opt_cloud
  OPTIONS (uri 's3://bucket/prefix');
CREATE FOREIGN TABLE opt_az_ft (id text) SERVER opt_cloud
  OPTIONS (uri 'az://container/prefix');
GRANT SELECT, INSERT ON opt_s3_ft, opt_az_ft TO regress_cx_opt_user;
GRANT CREATE ON SCHEMA public TO regress_cx_opt_user;
SET ROLE regress_cx_opt_user;
SELECT * FROM opt_s3_ft;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM opt_az_ft;
INSERT INTO opt_az_ft VALUES ('x');
SELECT ctxstore.stats('opt_s3_ft');
SELECT * FROM ctxstore.versions('opt_az_ft');
IMPORT FOREIGN SCHEMA "s3://bucket/prefix" FROM SERVER opt_cloud INTO public;
RESET ROLE;
-- Without a mapping of its own the role has no credential (an account name
-- alone is refused as a mapping, above).
SET ROLE regress_cx_opt_user;
SELECT * FROM opt_az_ft;
RESET ROLE;
-- With allow_env_credentials set by a superuser the request goes out (and
-- finds nobody listening).
ALTER SERVER opt_cloud OPTIONS (ADD allow_env_credentials 'on');
SET ROLE regress_cx_opt_user;
\set VERBOSITY terse
SELECT * FROM opt_az_ft;
\set VERBOSITY default
RESET ROLE;
-- Not once the server belongs to someone else: the option is then ignored,
-- and its new owner cannot change the server without a superuser.
ALTER SERVER opt_cloud OWNER TO regress_cx_opt_user;
SET ROLE regress_cx_opt_user;
SELECT * FROM opt_az_ft;
ALTER SERVER opt_cloud OPTIONS (SET connect_timeout '1s');
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_cx_opt_user;
DROP ROLE regress_cx_opt_user;
DROP ROLE regress_cx_other;
