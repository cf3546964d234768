# A writer round that commits several stores wakes each transaction once the
# stores it wrote are committed, not at the end of the round: with a slow
# store (Azurite behind the fault proxy, every PUT held 3 s) and a fast one
# (file://) in one round, a transaction on the fast store is acknowledged
# before the slow store's append of the same round has made its requests,
# while a transaction that wrote both waits for the slow one.
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

my $node = PostgreSQL::Test::Cluster->new('round_stores');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ctxstore; CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore');
$node->safe_psql('postgres',
	server_sql('az', 'slow_srv', server => { endpoint => proxy_endpoint('AZ') }));
file_table($node, 'fast');
my $slow_uri = store_uri('az', 'round_stores_slow');
$node->safe_psql('postgres',
	"CREATE FOREIGN TABLE slow (id text NOT NULL, n int) SERVER slow_srv OPTIONS (uri '$slow_uri')");
# The first commit to each store claims its shard: before the slow PUTs.
$node->safe_psql('postgres',
	"INSERT INTO fast VALUES ('warm', 0); INSERT INTO slow VALUES ('warm', 0)");

sub waiting
{
	my ($pid) = @_;
	return $node->safe_psql('postgres',
		"SELECT wait_event_type IS NOT DISTINCT FROM 'Extension' FROM pg_stat_activity WHERE pid = $pid"
	) eq 't';
}

# The slow store's PUTs answered so far (the proxy's trace).
sub slow_puts_answered
{
	return scalar grep { $_->{method} eq 'PUT' }
	  @{ decode_json(CxStores::proxy_ctl('AZ', 'GET', '/trace')) };
}

proxy_clear('AZ');
proxy_fault('AZ', action => 'delay', ms => 3000, for_ms => 120000, method => 'PUT');

# Round 1: the slow store's seal, which keeps the writer busy while the
# next round's transactions queue in this order.
my ($first) = waiting_commit($node, "INSERT INTO slow VALUES ('first', 1);");
for (my $i = 0; proxy_stat('AZ', 'fired') < 1; $i++)
{
	die 'the writer never reached the slow store' if $i > 10 * $PostgreSQL::Test::Utils::timeout_default;
	sleep 0.1;
}
my ($fast, $fast_pid) = waiting_commit($node, "INSERT INTO fast VALUES ('fast', 2);");
my ($both, $both_pid) = waiting_commit($node,
	"BEGIN; INSERT INTO fast VALUES ('both', 3); INSERT INTO slow VALUES ('both', 3); COMMIT;");
my ($later) = waiting_commit($node, "INSERT INTO slow VALUES ('later', 4);");

$node->poll_query_until('postgres',
	"SELECT wait_event_type IS DISTINCT FROM 'Extension' FROM pg_stat_activity WHERE pid = $fast_pid")
  or die 'the fast store\'s transaction never finished';
my $answered = slow_puts_answered();
ok($answered <= 2,
	"the fast store's transaction is acknowledged before the slow store's append of its round answered a PUT ($answered answered; round 1 makes 2)"
);
ok(waiting($both_pid),
	'a transaction that wrote both stores still waits for the slow one');

for my $bg ($first, $fast, $both, $later)
{
	$bg->query('SELECT 1');
	is($bg->{stderr}, '', 'the session committed without an error');
	$bg->quit;
}
proxy_clear('AZ');
is($node->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM fast"),
	'both,fast,warm', 'the fast store holds its committed rows');
is($node->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM slow"),
	'both,first,later,warm', 'the slow store holds its committed rows');

$node->stop;
done_testing();
