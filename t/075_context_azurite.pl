# Every context operation on an authenticated Azurite store, run by a
# non-superuser whose user mapping holds the account key: INSERT with the
# uniqueness check, ON CONFLICT DO NOTHING, UPDATE, DELETE and TRUNCATE with
# RETURNING, ROLLBACK, a deleted key inserted again, upserts by external id,
# merges, the key index and point lookups through it.  Azurite refuses
# anonymous requests, so every write that lands proves the writer worker,
# the maintenance worker and the backend each signed with the mapping's key;
# the account key appears in no log line.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('context_azurite');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
log_min_messages = info
log_statement = 'all'
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION ctxstore;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
});
$node->safe_psql('postgres',
	server_sql('az', 'az', user => 'app') . 'GRANT USAGE ON FOREIGN SERVER az TO app;');

# Runs $sql as app (CxStores::psql_as).
sub as_app { return psql_as($node, 'app', @_); }

sub rows_of
{
	my ($table) = @_;
	return as_app("SELECT string_agg(id || '=' || coalesce(body, ''), ',' ORDER BY id) FROM $table");
}

my $turns = store_uri('az', 'ctx/turns');
my $memories = store_uri('az', 'ctx/memories');
as_app(qq{
CREATE FOREIGN TABLE turns (id text NOT NULL, session_id text, body text)
  SERVER az OPTIONS (uri '$turns');
CREATE FOREIGN TABLE memories (id text NOT NULL, external_id text, body text)
  SERVER az OPTIONS (uri '$memories', upsert_key 'external_id');
});

# ---- inserts and the uniqueness check ----
is(as_app(q{INSERT INTO turns VALUES ('a', 's1', 'one'), ('b', 's1', 'two'), ('c', 's2', 'three')}),
	'', 'rows inserted through the writer worker');
like(as_app(q{INSERT INTO turns VALUES ('b', 's9', 'again')}),
	qr/ERROR 23505: .*Key \(id\)=\(b\) already exists/s,
	'inserting a committed key fails with 23505 naming the key');
is(rows_of('turns'), 'a=one,b=two,c=three', 'the refused insert left nothing');
like(as_app(q{INSERT INTO turns VALUES ('d', 's2', 'x'), ('e', 's2', 'y') ON CONFLICT DO NOTHING RETURNING id}),
	qr/^d\ne$/, 'ON CONFLICT DO NOTHING inserts new keys, RETURNING lists them');
is(as_app(q{INSERT INTO turns VALUES ('a', 's1', 'dup'), ('f', 's3', 'new') ON CONFLICT DO NOTHING RETURNING id}),
	'f', 'ON CONFLICT DO NOTHING skips a committed key');

# ---- update, delete, rollback ----
is(as_app(q{UPDATE turns SET body = 'ONE' WHERE id = 'a' RETURNING id, body}),
	'a|ONE', 'UPDATE ... RETURNING');
is(as_app(q{BEGIN; DELETE FROM turns WHERE session_id = 's2'; ROLLBACK;
            SELECT count(*) FROM turns WHERE session_id = 's2'}),
	'3', 'a rolled-back DELETE leaves every row');
is(as_app(q{WITH d AS (DELETE FROM turns WHERE session_id = 's2' RETURNING id)
            SELECT string_agg(id, ',' ORDER BY id) FROM d}),
	'c,d,e', 'DELETE ... RETURNING');
is(as_app(q{INSERT INTO turns VALUES ('c', 's2', 'back')}), '',
	'a deleted key can be inserted again');
is(rows_of('turns'), 'a=ONE,b=two,c=back,f=new', 'the table after UPDATE, DELETE and re-insert');

# ---- upserts by external id ----
as_app(q{INSERT INTO memories VALUES ('m1', 'ext-1', 'first'), ('m2', 'ext-2', 'other')});
is(as_app(q{INSERT INTO memories VALUES ('m3', 'ext-1', 'replaced')}), '',
	'an insert with a known external id');
is(rows_of('memories'), 'm2=other,m3=replaced', 'the upsert superseded the row of that external id');

# ---- merge, key index, point lookups ----
is(as_app(q{SELECT ctxstore.merge_wal('turns') > 0, ctxstore.merge_wal('memories') > 0}),
	't|t', 'merged into the base by the maintenance worker');
like(as_app(q{SELECT ctxstore.create_id_index('turns')}), qr/\S/,
	'create_id_index reports what it did');
is(as_app(q{SELECT id, body FROM turns WHERE id = 'b'}), 'b|two', 'point lookup after the merge');
is(as_app(q{SELECT string_agg(id, ',' ORDER BY id) FROM turns WHERE id = ANY (ARRAY['a', 'c', 'zz'])}),
	'a,c', 'key = ANY lookup');
like(as_app(q{EXPLAIN (COSTS OFF) SELECT * FROM turns WHERE id = 'b'}),
	qr/Key Lookup: \(id = 'b'::text\)/, 'EXPLAIN shows the key path');
like(as_app(q{INSERT INTO turns VALUES ('b', 's1', 'dup')}),
	qr/ERROR 23505/, 'the uniqueness check finds a merged key');
is(rows_of('memories'), 'm2=other,m3=replaced', 'the merged upsert store');

# ---- truncate ----
is(as_app(q{BEGIN; TRUNCATE turns; ROLLBACK; SELECT count(*) FROM turns}), '4',
	'a rolled-back TRUNCATE hides nothing');
is(as_app(q{TRUNCATE turns; INSERT INTO turns VALUES ('z', 's9', 'after'); SELECT string_agg(id, ',') FROM turns}),
	'z', 'TRUNCATE hides every row; rows inserted after it stay');
is(as_app(q{SELECT ctxstore.merge_wal('turns') > 0; SELECT string_agg(id, ',') FROM turns}),
	"t\nz", 'and so after the merge');

my $log = slurp_file($node->logfile);
my $key = emu('AZ_KEY');
unlike($log, qr/\Q$key\E/, 'the account key appears in no log line');

done_testing();
