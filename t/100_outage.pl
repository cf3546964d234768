# An object store that stops answering for 30 s, on Azurite and on s3rver:
# the fault proxy in front of each reads every request and answers none for
# 30 s (action hang, for_ms), so every attempt runs into request_timeout.
#   - during the outage an INSERT and a SELECT each fail within the bound
#     the request options give (retry_max_seconds + request_timeout per
#     request, a few requests), with SQLSTATE 58000 (a timeout: the existing
#     mapping), the store's URI in the message, the hint for a timeout and
#     no secret;
#   - once the store answers again both work in the same sessions' server,
#     without a restart;
#   - nothing acknowledged is lost and the failed INSERT left no row.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $outage_ms = 30_000;
my $request_timeout = 2;
my $retry_max_seconds = 2;

my $node = PostgreSQL::Test::Cluster->new('outage');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ctxstore');
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my %which = (az => 'AZ', s3 => 'S3');

sub query { return $node->safe_psql('postgres', $_[0]) }

# Runs $sql; returns (stderr, elapsed seconds).
sub timed
{
	my ($sql) = @_;
	my $start = time;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($rc == 0 ? '' : $err, time - $start);
}

sub outage
{
	my ($kind) = @_;
	my $proxy = $which{$kind};
	my $t = "o_$kind";
	my $uri = store_uri($kind, 'outage');

	proxy_clear($proxy);
	query(server_sql($kind, "srv_$kind",
			server => {
				endpoint => proxy_endpoint($proxy),
				conditional_put => undef,
				retry_max_attempts => '3',
				retry_max_seconds => "${retry_max_seconds}s",
				request_timeout => "${request_timeout}s",
				connect_timeout => '1s'
			})
		  . "CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER srv_$kind"
		  . " OPTIONS (uri '$uri');"
		  . "INSERT INTO $t VALUES ('before', 1);");

	proxy_fault($proxy, action => 'hang', for_ms => $outage_ms);
	my $outage_end = time + $outage_ms / 1000;

	# One request gives up after about retry_max_seconds + request_timeout;
	# a COMMIT or a scan makes a few in a row.
	my $bound = 4 * ($retry_max_seconds + $request_timeout);
	my ($err, $elapsed) = timed("INSERT INTO $t VALUES ('during', 2)");
	like($err, qr/ERROR:  58000: .*\Q$uri\E.*DETAIL:  .*\Q$uri\E\/\S+: .*timed out/s,
		"$kind: an INSERT during the outage fails with 58000 naming the store");
	like($err, qr/HINT:  The store did not answer within the server's request_timeout/,
		"$kind: ... with the hint for a timeout");
	cmp_ok($elapsed, '<', $bound, "$kind: ... within the retry bounds ($elapsed s)");
	unlike($err, qr/\Q${\ emu('AZ_KEY')}\E|S3RVER/, "$kind: ... and no credential");

	($err, $elapsed) = timed("SELECT count(*) FROM $t");
	like($err, qr/ERROR:  58000: .*\Q$uri\E/s,
		"$kind: a SELECT during the outage fails with 58000 naming the store");
	cmp_ok($elapsed, '<', $bound, "$kind: ... within the retry bounds ($elapsed s)");

	sleep($outage_end - time + 0.5) if time < $outage_end + 0.5;
	($err) = timed("INSERT INTO $t VALUES ('after', 3)");
	is($err, '', "$kind: once the store answers again an INSERT succeeds");
	is(query("SELECT string_agg(id, ',' ORDER BY n) FROM $t"), 'before,after',
		"$kind: ... a SELECT too: every acknowledged row once, none of the failed one");
	is(query('SELECT pg_postmaster_start_time()'), $started, "$kind: ... without a restart");
	proxy_clear($proxy);
	return;
}

outage('az');
outage('s3');

$node->stop;
done_testing();
