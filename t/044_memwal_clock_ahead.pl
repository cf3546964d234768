# Commit times across clusters: a clock that jumped forward is inherited by
# the shard (commit times only increase), so its shard would win every key
# written by two clusters until real time catches up.  The writer says so: a
# WARNING with both times in the log, and clock_ahead_commits /
# clock_ahead_max_us in ctxstore.stats().  The writer's clock first runs an
# hour ahead (CTXSTORE_TEST_CLOCK_OFFSET_MS), then right.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('clock_ahead');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'\n");
my $uri = store_uri('file', 'clock_ahead');
my $stats = "SELECT s->'writer'->>'clock_ahead_commits', (s->'writer'->>'clock_ahead_max_us')::bigint / 60000000 "
  . "FROM ctxstore.stats('t') s";

{
	local $ENV{CTXSTORE_TEST_CLOCK_OFFSET_MS} = 3600 * 1000;
	$node->start;
}
$node->safe_psql('postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER s FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE t (id text, n int) SERVER s OPTIONS (uri '$uri');
INSERT INTO t VALUES ('ahead', 1);
});
is($node->safe_psql('postgres', $stats), '0|0', 'a clock that is ahead throughout hands out its own times');
$node->stop;

$node->start;
$node->safe_psql('postgres', "INSERT INTO t VALUES ('real', 2)");
my ($commits, $minutes) = split /\|/, $node->safe_psql('postgres', $stats);
cmp_ok($commits, '>=', 1, 'the inherited commit time is counted as ahead of the clock');
ok($minutes >= 55 && $minutes <= 60, "the lead is about an hour ($minutes min)");
my $log = slurp_file($node->logfile);
like($log, qr/WARNING:.*commit time of shard \S+ of store "\Q$uri\E" is \d+\.\d+ s ahead of this server's clock/,
	'the writer warns');
like($log, qr/DETAIL:\s+Commit time \d{4}-\d\d-\d\d [\d:.+]+, clock \d{4}-\d\d-\d\d [\d:.+]+\./,
	'the warning gives both times');
is($node->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM t"), 'ahead,real',
	'both rows are there');
$node->stop;
done_testing();
