# kill -9 of the writer while several stores' seals are in flight on its
# pool threads (docs/design/workers.md, "Concurrent seals"): four sessions
# commit sealed single-row transactions to four stores, so that each round
# seals four stores at once; every seal sleeps 300 ms once its fragment is
# uploaded (the other stores' seals are in flight meanwhile), and the 12th
# seal to commit its shard manifest kills the writer from its thread.  After
# the restart every acknowledged row is stored exactly once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use CxStores qw(poll_until_true);
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('concurrent_crash');
my @tables = map { "cc$_" } 1 .. 4;
for my $t (@tables)
{
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri("concurrent_crash_$t") ]}', unique_key 'false',
           seal_on_insert 'true', merge_after_generations '0',
           flush_interval '1h', cleanup_interval '0');
INSERT INTO $t VALUES ('warm', 0);
});
}

my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{
ALTER SYSTEM SET ctxstore.failpoints = 'seal.after_fragment=delay:300,seal.after_commit=crash@12';
SELECT pg_reload_conf();
});
my @clients;
for my $i (0 .. $#tables)
{
	my $t = $tables[$i];
	my $c = start_clients($node, $t, $t, 1, 200);
	push @clients, @$c;
}
ok( wait_until(
		sub { substr(slurp_file($node->logfile), $offset) =~ /terminated by signal 9/ }),
	'the writer died by SIGKILL in a seal');
my %acked = %{ finish_clients(\@clients) };

# The restarted cluster, without failpoints, settles what was in flight.
poll_until_true($node, 'SELECT true') or die 'the cluster did not come back';
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ctxstore.failpoints; SELECT pg_reload_conf()');
$node->restart;
for my $t (@tables)
{
	my %mine = map { $_ => 1 } grep { /^$t-/ } keys %acked;
	check_exactly_once($node, $t, $t, \%mine, $t);
}
cmp_ok(scalar(grep { /^cc/ } keys %acked), '>=', 8,
	'commits to several stores were acknowledged before the crash');

$node->stop;
done_testing();
