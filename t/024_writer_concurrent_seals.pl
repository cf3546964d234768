# A writer round seals its stores concurrently (docs/design/workers.md,
# "Concurrent seals"): with every PUT held 300 ms by the fault proxy in
# front of Azurite (3 s for the store that holds the writer while the round
# under test queues), two stores committed in one round have PUTs in flight at
# the same time, and with ctxstore.writer_concurrent_seals = 1 they never do.
# The proxy's trace gives each request's start and end: this is an ordering
# assertion, not a timing one.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = PostgreSQL::Test::Cluster->new('concurrent_seals');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ctxstore');
$node->safe_psql('postgres',
	server_sql('az', 'slow_srv', server => { endpoint => proxy_endpoint('AZ') }));
for my $t (qw(hold sa sb))
{
	my $uri = store_uri('az', "concurrent_seals/$t");
	$node->safe_psql('postgres',
		"CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER slow_srv
		 OPTIONS (uri '$uri', merge_after_generations '0')");
	# The first commit claims the store's shard: before the slow PUTs.
	$node->safe_psql('postgres', "INSERT INTO $t VALUES ('warm', 0)");
}

# The PUTs of store $t in the proxy's trace, as [start, end].
sub puts_of
{
	my ($trace, $t) = @_;
	return [ map { [ $_->{start}, $_->{end} ] }
		  grep { $_->{method} eq 'PUT' && $_->{path} =~ m{/concurrent_seals/$t/} } @$trace ];
}

# Whether a PUT of one list was in flight while one of the other was.
sub overlap
{
	my ($x, $y) = @_;
	for my $a (@$x)
	{
		return 1 if grep { $a->[0] < $_->[1] && $_->[0] < $a->[1] } @$y;
	}
	return 0;
}

# One round holding a commit to sa and one to sb: a commit to "hold" keeps
# the writer busy while they queue.  Returns the PUTs of sa and sb.
sub one_round_of_two_stores
{
	my ($tag) = @_;
	proxy_clear('AZ');
	# The held store's PUTs take long enough for both commits to queue.
	proxy_fault('AZ', action => 'delay', ms => 3000, for_ms => 120000, method => 'PUT',
		path => 'concurrent_seals/hold/');
	proxy_fault('AZ', action => 'delay', ms => 300, for_ms => 120000, method => 'PUT',
		path => 'concurrent_seals/s[ab]/');
	my ($hold) = waiting_commit($node, "INSERT INTO hold VALUES ('$tag', 1);");
	for (my $i = 0; proxy_stat('AZ', 'fired') < 1; $i++)
	{
		die 'the writer never reached the held store' if $i > 10 * $PostgreSQL::Test::Utils::timeout_default;
		sleep 0.1;
	}
	my ($a) = waiting_commit($node, "INSERT INTO sa VALUES ('$tag', 2);");
	my ($b) = waiting_commit($node, "INSERT INTO sb VALUES ('$tag', 3);");
	for my $bg ($hold, $a, $b)
	{
		$bg->query('SELECT 1');
		is($bg->{stderr}, '', "$tag: the session committed without an error");
		$bg->quit;
	}
	my $trace = decode_json(CxStores::proxy_ctl('AZ', 'GET', '/trace'));
	proxy_clear('AZ');
	my ($pa, $pb) = (puts_of($trace, 'sa'), puts_of($trace, 'sb'));
	ok(@$pa > 0 && @$pb > 0, "$tag: both stores were written (" . @$pa . ' and ' . @$pb . ' PUTs)');
	return ($pa, $pb);
}

$node->safe_psql('postgres',
	'ALTER SYSTEM SET ctxstore.writer_concurrent_seals = 1; SELECT pg_reload_conf()');
my ($pa, $pb) = one_round_of_two_stores('one_at_a_time');
ok(!overlap($pa, $pb), 'with one seal at a time, the two stores\' PUTs never overlap');

$node->safe_psql('postgres',
	'ALTER SYSTEM RESET ctxstore.writer_concurrent_seals; SELECT pg_reload_conf()');
($pa, $pb) = one_round_of_two_stores('concurrent');
ok(overlap($pa, $pb), 'the two stores of one round have PUTs in flight at the same time');

for my $t (qw(sa sb))
{
	is($node->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM $t"),
		'concurrent,one_at_a_time,warm', "$t holds its committed rows");
}

$node->stop;
done_testing();
