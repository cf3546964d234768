# What a slow merge must not do: hold up the next commit of a session whose
# merge_wal gave up waiting for it (control requests have a slot of their
# own); and what a store whose seals outpace its merges gets: catch-up merge
# calls that take more than merge_max_generations, and, while even those
# fall short, "merges_behind" in ctxstore.stats and a warning in the log.
# The merges are slowed with delay failpoints (storage/util/cx_failpoint.h).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('slow_merges');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 20
});
$node->start;

sub sql { return $node->safe_psql('postgres', @_); }

# n single-row transactions, one session.
sub insert_rows
{
	my ($table, $prefix, $n) = @_;
	sql(join("\n", map { "INSERT INTO $table VALUES ('$prefix$_', $_);" } 1 .. $n));
}

sub stats_of
{
	my ($table, $path) = @_;
	return sql("SELECT ctxstore.stats('$table') #>> '{$path}'");
}

sub wait_for
{
	my ($sql, $what) = @_;
	ok($node->poll_query_until('postgres', $sql), $what);
}

# Arms failpoints in every process, the maintenance worker included (it
# reloads on SIGHUP before it takes its next job).
sub arm
{
	my ($spec) = @_;
	sql("ALTER SYSTEM SET ctxstore.failpoints = '$spec'");
	sql('SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		"SELECT current_setting('ctxstore.failpoints') = '$spec'")
	  or die "ctxstore.failpoints did not reach '$spec'";
}

sql(q{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
});

# ---- an abandoned merge_wal does not hold up the session's next commit ----

file_table($node, 'slow', merge_after_generations => 0, cleanup_interval => 0);
insert_rows('slow', 's', 3);
my $merges = stats_of('slow', 'merge,merges');
arm('merge.after_upload=delay:15000@1');
my ($rc, $out, $err) = $node->psql('postgres', q{
SET ctxstore.commit_timeout = '1s';
SELECT ctxstore.merge_wal('slow');
SET ctxstore.commit_timeout = '10s';
INSERT INTO slow VALUES ('after', 4);
SELECT 'merges ' || (ctxstore.stats('slow') #>> '{merge,merges}');
}, on_error_stop => 0);
like($err,
	qr/did not finish ctxstore\.merge_wal\(\) within ctxstore\.commit_timeout/,
	'merge_wal gives up on the slow merge');
is(scalar(() = $err =~ /ERROR/g), 1,
	'the next commit of that session does not fail (no "withdrawn")')
  or diag($err);
like($out, qr/^merges $merges$/m,
	'it returns while the merge it abandoned is still running');
wait_for("SELECT ctxstore.stats('slow') #>> '{merge,merges}' <> '$merges'",
	'the abandoned merge still completes');
is(sql(q{SELECT ctxstore.merge_wal('slow')}), '1',
	'a later merge_wal merges the generation committed meanwhile');
is(sql('SELECT count(*), count(DISTINCT id) FROM slow'), '4|4',
	'every row once');

# ---- far behind: one merge call takes the backlog ----

file_table($node, 'backlog', merge_after_generations => 0, cleanup_interval => 0,
	merge_max_generations => 4);
insert_rows('backlog', 'b', 40);
is(sql(q{SELECT ctxstore.merge_wal('backlog')}), '40',
	'merge_wal merges 40 pending generations');
is( sql(q{SELECT s #>> '{merge,merges}', s #>> '{merge,generations}'
            FROM ctxstore.stats('backlog') s}),
	'1|40',
	'in one merge call: 40 pending >= 2 x merge_max_generations (4)');
is(sql('SELECT count(*), count(DISTINCT id) FROM backlog'), '40|40',
	'every row once');

# ---- still behind: stats and the log say so ----

# Catch-up calls take 64 x merge_max_generations = 128.  The first job (one
# generation) is held up 12 s while 150 more are sealed, so it leaves more
# than 128 pending: behind.  The second job's first call is held up after
# its commit, while the stats still show the first job's verdict.
file_table($node, 'lagging', merge_after_generations => 1, cleanup_interval => 0,
	merge_max_generations => 2);
arm('merge.after_upload=delay:12000@1, merge.after_commit=delay:8000@2');
my $log_offset = -s $node->logfile;
insert_rows('lagging', 'first', 1);
insert_rows('lagging', 'l', 150);
is(stats_of('lagging', 'merge,merges'), '0',
	'the 150 commits came in while the first merge was held up');
wait_for(q{SELECT s #>> '{merge,merges_behind}' = 'true'
                  AND s #>> '{merge,target_generations}' = '128'
             FROM ctxstore.stats('lagging') s},
	'ctxstore.stats shows the merges behind, with their target');
ok( $node->log_contains(
		qr/WARNING:  ctxstore writer: merges of shard \S+ of store "[^"]+lagging" are behind: \d+ generations are still unmerged after a merge, more than one merge call takes \(128\)/,
		$log_offset),
	'and the log says so');
wait_for(q{SELECT s #>> '{merge,merges_behind}' = 'false'
                  AND s #>> '{merge,generations}' = '151'
             FROM ctxstore.stats('lagging') s},
	'catch-up merges clear the backlog and the flag');
cmp_ok(stats_of('lagging', 'merge,merges'), '<=', 4,
	'in calls of more than merge_max_generations (151 generations)');
is(sql('SELECT count(*), count(DISTINCT id) FROM lagging'), '151|151',
	'every row once');

sql('ALTER SYSTEM RESET ctxstore.failpoints');
sql('SELECT pg_reload_conf()');
$node->stop;
done_testing();
