# The chaos soak (docs/RELIABILITY.md, "Chaos soak"): two clusters on
# distinct shards write three stores (file://, Azurite and s3rver, the object
# stores through the fault proxies) from 8 sessions each for SOAK_SECONDS
# (default 180), mixing inserts, upserts, updates and deletes over a small
# shared key space, while merges, compaction, GC and Iceberg publishing run,
# a fault thread arms 5xx, throttling, resets, delays beyond the timeouts
# and lost acknowledgements, and a killer kills -9 the writer, the
# maintenance worker or a whole cluster.  t/soak_driver.mjs does the load
# and the chaos; t/soak_check.mjs, which shares no code with ctxstore,
# checks the final reads against the clients' logs.  The test passes only
# with zero violations.
#
#   SOAK_SECONDS=600 SOAK_SEED=7 ... (through scripts/test.sh, TAP_TESTS=t/110_chaos_soak.pl)
use strict;
use warnings;

use File::Path;
use FindBin;
use lib $FindBin::RealBin;

use CxMemwal qw(memwal_node);
use CxStores;
use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

for my $v (qw(S3_PROXY_CTL AZ_PROXY_CTL))
{
	plan skip_all => "the object-store emulators are not running (CX_TEST_$v is not set): "
	  . 'run the TAP tests through scripts/test.sh, which starts them'
	  unless $ENV{"CX_TEST_$v"};
}
die "NODE_PATH names no node-postgres: run bash scripts/readers.sh install (scripts/test.sh does)\n"
  unless -d ($ENV{NODE_PATH} // '') . '/pg';

my $seconds = $ENV{SOAK_SECONDS} // 180;
my $seed = $ENV{SOAK_SEED} // int(rand(1_000_000));
# SOAK_KILLS=0: no kills, so that each worker lives the whole run and the
# RSS judgment sees a leak that a restart would hide.
my $kill = ($ENV{SOAK_KILLS} // 1) ? 1 : 0;
note("soak: $seconds s, seed $seed (SOAK_SEED=$seed repeats the choices)"
	  . ($kill ? '' : ', no kills'));

# Small intervals, so that merges, compactions, GC and publishing all run
# many times within the soak; GC keeps few versions, and not for long.
my %lifecycle = (
	merge_after_generations => '2',
	compact_interval => '3s',
	compact_min_fragments => '2',
	gc_interval => '5s',
	gc_grace => '5s',
	retain_versions => '4',
	retain_interval => '5s',
	iceberg_interval => '5s');
# Requests give up within a few seconds, so that a delay of 3 s is a timeout.
my %request = (
	retry_max_attempts => '3',
	retry_max_seconds => '3s',
	request_timeout => '2s',
	connect_timeout => '1s');

my %stores = (
	file => { replace => JSON::PP::true },
	az => { proxy => 'AZ', replace => JSON::PP::false },
	s3 => { proxy => 'S3', replace => JSON::PP::false });

my @nodes = map { memwal_node("soak_$_", "ctxstore.commit_timeout = '30s'\n") } qw(A B);
isnt($nodes[0]->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	$nodes[1]->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	'the two clusters write distinct shards');

proxy_clear($_) for qw(S3 AZ);
for my $kind (sort keys %stores)
{
	my $s = $stores{$kind};
	@$s{qw(kind table server uri)} = ($kind, "soak_$kind", "srv_$kind", store_uri($kind, 'soak'));
	my $server = $kind eq 'file'
	  ? "CREATE SERVER srv_file FOREIGN DATA WRAPPER ctxstore;\n"
	  : server_sql($kind, "srv_$kind",
		server => { endpoint => proxy_endpoint($s->{proxy}), conditional_put => undef, %request });
	my %opt = (%lifecycle, uri => $s->{uri}, unique_key => $s->{replace} ? 'false' : 'true');
	my $opts = join(', ', map { "$_ '$opt{$_}'" } sort keys %opt);
	$_->safe_psql('postgres', "$server CREATE FOREIGN TABLE soak_$kind (id text NOT NULL, v text)"
		  . " SERVER srv_$kind OPTIONS ($opts);")
	  for @nodes;
}

# Kept after the run (tmp_check is), for the logs and the final reads.
my $dir = "$PostgreSQL::Test::Utils::tmp_check/soak";
File::Path::rmtree($dir);    # an earlier run's, in the same test directory
mkdir $dir or die "$dir: $!";
my %config = (
	dir => $dir,
	seconds => 0 + $seconds,
	seed => 0 + $seed,
	sessions => 8,
	keys => 24,
	kills => $kill ? JSON::PP::true : JSON::PP::false,
	user => scalar(getpwuid($<)),
	clusters => [
		map {
			{
				name => substr($_->name, length 'soak_'),
				host => $_->host,
				port => 0 + $_->port,
				datadir => $_->data_dir,
				logfile => $_->logfile,
				pgctl => $_->config_data('--bindir') . '/pg_ctl',
			}
		} @nodes
	],
	stores => \%stores,
	proxies => { map { $_ => emu("${_}_PROXY_CTL") } qw(S3 AZ) });
PostgreSQL::Test::Utils::append_to_file("$dir/config.json", encode_json(\%config));

# ---- the checker's own rules, on hand-made logs ----

my ($out, $err) = run_node('soak_check.mjs', '--self-test');
like($out, qr/^self-test: all \d+ passed$/m, "the checker flags each rule's violating log and passes the good one")
  or diag($out . $err);

# ---- the proxy's put-if-absent, which both clusters rely on for s3rver ----

# A conditional PUT whose client leaves mid-body must neither land (S3
# applies no partial write) nor hold up the next conditional PUT of the path.
{
	my ($host, $port) = emu('S3_PROXY') =~ m{^http://([^:/]+):(\d+)};
	my $path = '/' . emu('S3_BUCKET') . "/soak-proxy-check-$$";
	my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port)
	  or die "connecting to the S3 proxy: $!";
	print $sock "PUT $path HTTP/1.1\r\nHost: $host:$port\r\nIf-None-Match: *\r\n"
	  . "Content-Length: 100\r\n\r\n0123456789";
	close $sock;
	my $r = HTTP::Tiny->new(timeout => 5)->request('PUT', "http://$host:$port$path",
		{ headers => { 'If-None-Match' => '*' }, content => 'whole' });
	is($r->{status}, 200,
		'the proxy forwards no partial write, and the next conditional PUT of its path is not held up');
}

# ---- the soak ----

my $ok;
($out, $err, $ok) = run_node('soak_driver.mjs', "$dir/config.json");
PostgreSQL::Test::Utils::append_to_file("$dir/driver.log", $out . $err);
ok($ok, 'the driver ran the soak to its quiet end') or diag(substr($out . $err, -4000));
$_->_update_pid(1) for @nodes;    # the killer restarted them

my $summary = decode_json(slurp_file("$dir/summary.json"));
my $c = $summary->{counts};
note("operations $c->{operations}: acknowledged $c->{ack}, failed $c->{fail}, unknown $c->{unknown}, "
	  . "client-side timeouts $c->{hung}");
note('faults armed by kind: ' . kv($summary->{faults_armed})
	  . '; fired by proxy: ' . kv($summary->{faults_fired}));
note('kills by kind: ' . kv($summary->{kills}));
cmp_ok($c->{ack}, '>', 0, 'operations were acknowledged');
is($c->{hung}, 0, 'no statement waited longer than the clients\' 60 s bound');
my $kills = 0;
$kills += $_ for values %{ $summary->{kills} };
cmp_ok($kills, '>', 0, 'the killer killed') if $kill && $seconds >= 60;

($out, $err) = run_node('soak_check.mjs', $dir);
note($out);
like($out, qr/^violations: 0$/m, 'the checker finds zero violations') or diag($err);

$_->stop for @nodes;
done_testing();

# Runs node on a script of t/; returns stdout, stderr and success.
sub run_node
{
	my ($script, @args) = @_;
	my ($o, $e) = ('', '');
	my $ok = IPC::Run::run([ 'node', "$FindBin::RealBin/$script", @args ],
		'>', \$o, '2>', \$e, IPC::Run::timeout($seconds + 600));
	return ($o, $e, $ok);
}

sub kv
{
	my ($h) = @_;
	return join(', ', map { "$_ $h->{$_}" } sort keys %$h);
}
