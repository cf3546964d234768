# Object-store faults as SQL sees them, injected by the fault proxy in front
# of Azurite and of s3rver (whose proxy also enforces If-None-Match, so the
# S3 store runs with conditional_put 'on' as against a real S3):
#   - 503s, then success: the COMMIT succeeds (the requests were retried);
#   - 503 for good: the COMMIT fails within the retry bounds, with an error
#     naming the operation, the object and the status, and no secret; none of
#     its rows appear;
#   - the answer to the write that commits the rows (the put-if-absent of a
#     base manifest, shard manifest or WAL entry, whichever the write path
#     commits with) is lost after the write landed: the COMMIT succeeds, and
#     its rows appear once.  (Reads de-duplicate by key whatever unique_key
#     says, so a commit applied twice would also show its rows once; the
#     unit tests check the stored objects for that.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('store_faults');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ctxstore');

my %which = (az => 'AZ', s3 => 'S3');
my $retry_max_seconds = 2;

# Runs $sql; returns (stderr, elapsed seconds).
sub timed
{
	my ($sql) = @_;
	my $start = time;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($err, time - $start);
}

sub query { return $node->safe_psql('postgres', $_[0]) }

sub faults
{
	my ($kind) = @_;
	my $proxy = $which{$kind};
	my $t = "f_$kind";
	my $uri = store_uri($kind, 'faults');

	proxy_clear($proxy);
	query(server_sql($kind, "srv_$kind",
			server => {
				endpoint => proxy_endpoint($proxy),
				conditional_put => undef,
				retry_max_attempts => '4',
				retry_max_seconds => $retry_max_seconds,
				request_timeout => '5s'
			})
		  . "CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER srv_$kind"
		  . " OPTIONS (uri '$uri', unique_key 'false');"
		  . "INSERT INTO $t VALUES ('warm', 0);");

	proxy_clear($proxy);
	proxy_fault($proxy, action => 'status', status => 503, method => 'PUT', count => 2);
	my ($err) = timed("INSERT INTO $t VALUES ('retried', 1)");
	is($err, '', "$kind: a COMMIT meeting two 503s succeeds");
	is(proxy_stat($proxy, 'fired'), 2, "$kind: both 503s were answered");
	is(query("SELECT count(*) FROM $t WHERE id = 'retried'"), '1',
		"$kind: its row is there once");

	proxy_clear($proxy);
	proxy_fault($proxy, action => 'status', status => 503, method => 'PUT', count => 100000);
	my $elapsed;
	($err, $elapsed) = timed("INSERT INTO $t VALUES ('refused', 2)");
	like($err,
		qr/ERROR:  58030: .*DETAIL:  [^\n]*\Q$uri\E\/\S+: PUT http\S+: HTTP 503 \(ServiceUnavailable\) after \d+ attempts/s,
		"$kind: a COMMIT meeting only 503s fails, naming the operation, object and status");
	cmp_ok($elapsed, '<', $retry_max_seconds + 8, "$kind: ... within the retry bounds");
	unlike($err, qr/\Q${\ emu('AZ_KEY')}\E|S3RVER/, "$kind: ... and no credential");
	proxy_clear($proxy);
	is(query("SELECT count(*) FROM $t WHERE id = 'refused'"), '0',
		"$kind: none of its rows appear");

	proxy_fault($proxy, action => 'drop_response', method => 'PUT',
		path => '\\.(manifest|shard|wal)$');
	($err) = timed("INSERT INTO $t VALUES ('lost ack', 3)");
	is($err, '', "$kind: a COMMIT whose commit write lost its answer succeeds");
	is(proxy_stat($proxy, 'fired'), 1, "$kind: the answer was dropped");
	is(query("SELECT string_agg(id, ',' ORDER BY n) FROM $t"), 'warm,retried,lost ack',
		"$kind: every acknowledged row exactly once");
	proxy_clear($proxy);
	return;
}

faults('az');
faults('s3');

$node->stop;
done_testing();
