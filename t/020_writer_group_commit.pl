# The writer worker group-commits: eight sessions committing single-row
# transactions concurrently get every row stored exactly once, with fewer
# store commits than acknowledged transactions.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/writer_group_commit";

my $node = PostgreSQL::Test::Cluster->new('group_commit');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 40
});
$node->start;

is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ctxstore writer'"
	),
	'1',
	'pg_stat_activity shows the ctxstore writer');

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE events (id text NOT NULL, client int, payload text)
	SERVER lake OPTIONS (uri '$uri');
CREATE SEQUENCE event_ids;
});

my ($clients, $per_client) = (8, 200);
my $total = $clients * $per_client;

$node->pgbench(
	"--no-vacuum --client=$clients --jobs=$clients --transactions=$per_client",
	0,
	[qr{processed: $total/$total}],
	[qr{^$}],
	"$clients sessions commit $per_client single-row transactions each",
	{
		'020_insert' => q{
INSERT INTO events VALUES (nextval('event_ids')::text, :client_id, repeat('x', 100));
}
	});

is( $node->safe_psql(
		'postgres',
		'SELECT count(*), count(DISTINCT id), count(DISTINCT client) FROM events'),
	"$total|$total|$clients",
	'every committed row is stored exactly once');

my ($commits, $acked, $rows, $failed) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT s->>'store_commits', s->>'acked_transactions', s->>'acked_rows',
       s->>'failed_transactions'
  FROM ctxstore.stats('events') AS s
});
is($acked, $total, 'the writer acknowledged every transaction');
is($rows, $total, 'the writer acknowledged every row');
is($failed, 0, 'no transaction failed');
cmp_ok($commits, '<', $acked,
	'commits were grouped: fewer store commits than transactions');
diag(sprintf('%d transactions in %d store commits (%.1f per commit)',
		$acked, $commits, $acked / ($commits || 1)));

$node->stop;
done_testing();
