# Every path that opens a store uses the options and credentials resolved
# from the server and the user mapping: scans, writes through the writer
# worker, IMPORT FOREIGN SCHEMA, ctxstore.stats and ctxstore.versions, run
# by a non-superuser against authenticated stores (Azurite with the account
# key from the user mapping; s3rver with keys from it).  With the right
# credentials every path works; with a wrong one every path is refused by
# the store (28000), also in a session that wrote before the mapping
# changed.  Also: conditional_put 'on' refuses s3rver, which
# ignores If-None-Match, with a hint; TLS peers are verified unless a CA
# bundle vouches for them.
#
# Azurite refuses anonymous requests, so a write landing there proves that
# the writer worker signed it with the mapping's key.  s3rver accepts
# anonymous requests and does not check SigV4 signatures, only that the
# access key id exists, so on S3 the refusals below come from a wrong key id.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my %wrong = (
	s3 => { access_key_id => 'AKIAWRONGKEYID000000' },
	az => { account_key => 'd3Jvbmcta2V5LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWJjZGVm' });

my $node = PostgreSQL::Test::Cluster->new('store_auth_paths');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION ctxstore;
CREATE ROLE app LOGIN;
CREATE SCHEMA imported AUTHORIZATION app;
GRANT CREATE ON SCHEMA public TO app;
});

# Runs $sql as app (CxStores::psql_as).
sub as_app { return psql_as($node, 'app', @_); }

sub paths
{
	my ($kind) = @_;
	my $srv = "auth_$kind";
	my $uri = store_uri($kind, 'auth/items');
	(my $prefix = $uri) =~ s{/items$}{};

	$node->safe_psql('postgres',
		server_sql($kind, $srv, user => 'app')
		  . "GRANT USAGE ON FOREIGN SERVER $srv TO app;");
	as_app("CREATE FOREIGN TABLE items_$kind (id text NOT NULL, n int) SERVER $srv OPTIONS (uri '$uri')");

	is(as_app("INSERT INTO items_$kind VALUES ('a', 1), ('b', 2), ('c', 3)"), '',
		"$kind: rows written through the writer worker");
	is(as_app("SELECT string_agg(id, ',' ORDER BY id), sum(n) FROM items_$kind"),
		'a,b,c|6', "$kind: scan");
	is(as_app("SELECT s->>'uri', (s->>'version')::bigint > 0 FROM ctxstore.stats('items_$kind') s"),
		"$uri|t", "$kind: ctxstore.stats");
	is(as_app("SELECT count(*) > 0 FROM ctxstore.versions('items_$kind')"),
		't', "$kind: ctxstore.versions");
	is(as_app(qq{IMPORT FOREIGN SCHEMA x FROM SERVER $srv INTO imported OPTIONS (uri '$prefix');
	             SELECT string_agg(id, ',' ORDER BY id) FROM imported.items;
	             DROP FOREIGN TABLE imported.items;}),
		'a,b,c', "$kind: IMPORT FOREIGN SCHEMA, and a scan of the imported table");

	my $set = join(', ', map { "SET $_ '$wrong{$kind}{$_}'" } sort keys %{ $wrong{$kind} });
	# In one session of app's: a write (a DELETE of nothing, which leaves
	# the rows as they are), the mapping changed, a write.  The second
	# carries the new credentials: the backend drops what it cached of the
	# table's store options when a user mapping changes.
	like(as_app("DELETE FROM items_$kind WHERE id = 'none';
	             ALTER USER MAPPING FOR app SERVER $srv OPTIONS ($set);
	             INSERT INTO items_$kind VALUES ('y', 0);"),
		qr/^ERROR 28000: .*HINT:  Check the credentials in the user mapping/s,
		"$kind: a mapping changed in a session applies to its next write");
	my %refused = (
		scan => "SELECT * FROM items_$kind",
		insert => "INSERT INTO items_$kind VALUES ('d', 4)",
		stats => "SELECT ctxstore.stats('items_$kind')",
		versions => "SELECT * FROM ctxstore.versions('items_$kind')",
		import => "IMPORT FOREIGN SCHEMA x FROM SERVER $srv INTO imported OPTIONS (uri '$prefix')");
	for my $path (sort keys %refused)
	{
		like(as_app($refused{$path}),
			qr/^ERROR 28000: .*HINT:  Check the credentials in the user mapping/s,
			"$kind: $path with a wrong credential is refused by the store");
	}
	return;
}

paths('s3');
paths('az');

# conditional_put 'on' (the default) probes the server once and refuses
# one that silently overwrites, saying what to do.
$node->safe_psql('postgres',
	server_sql('s3', 'cond_on', user => 'app', server => { conditional_put => undef })
	  . 'GRANT USAGE ON FOREIGN SERVER cond_on TO app;');
my $cond_uri = store_uri('s3', 'conditional_on');
like(
	as_app(qq{CREATE FOREIGN TABLE cond_t (id text NOT NULL) SERVER cond_on OPTIONS (uri '$cond_uri');
	          INSERT INTO cond_t VALUES ('x')}),
	qr/^ERROR 0A000: .*ignores If-None-Match.*conditional_put 'off'/s,
	"conditional_put 'on' refuses a server that ignores If-None-Match, with the fix");
is(as_app('SELECT count(*) FROM cond_t'), '0', 'and writes nothing visible');

# TLS: verified by default; a CA bundle (ca_file) makes the peer trusted.
my $tls = server_sql('s3', 'tls', user => 'app',
	server => { endpoint => emu('S3_TLS_ENDPOINT'), retry_max_attempts => '1' });
my $tls_uri = store_uri('s3', 'auth/items');
$node->safe_psql('postgres', "$tls GRANT USAGE ON FOREIGN SERVER tls TO app;");
as_app("CREATE FOREIGN TABLE tls_t (id text NOT NULL, n int) SERVER tls OPTIONS (uri '$tls_uri')");
like(as_app('SELECT count(*) FROM tls_t'), qr/^ERROR 58030: .*certificate/s,
	'TLS peers are verified by default');
$node->safe_psql('postgres',
	"ALTER SERVER tls OPTIONS (ADD ca_file '" . emu('S3_TLS_CA') . "')");
is(as_app('SELECT count(*) FROM tls_t'), '3', 'ca_file names the CA that vouches for a peer');

$node->stop;
done_testing();
