# The store lifecycle from pg_cron (Debian's postgresql-15-cron): jobs that
# run ctxstore.create_id_index(t), ctxstore.compact(t) and ctxstore.gc(t)
# succeed (cron.job_run_details status 'succeeded') and have their effect,
# on a file:// store and on an authenticated Azurite store.  pg_cron runs a
# job as its owner, here the non-superuser app: Azurite refuses anonymous
# requests, so a job that lands found app's user mapping.
#
# So that create_id_index has something to do, the last merge of each store
# is left unindexed: the cluster runs once with the failpoint
# merge.after_commit armed to fail, so the maintenance worker's merge
# commits but the job fails before the worker indexes it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('lifecycle_cron');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore,pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
$node->start;

sub sql { return $node->safe_psql('postgres', @_); }
sub as_app { return psql_as($node, 'app', @_); }

sql(q{
CREATE EXTENSION ctxstore;
CREATE EXTENSION pg_cron;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
GRANT USAGE ON SCHEMA cron TO app;
GRANT pg_read_server_files, pg_write_server_files TO app;
});
sql(server_sql('file', 'lake') . server_sql('az', 'az', user => 'app')
	  . 'GRANT USAGE ON FOREIGN SERVER lake, az TO app;');

# Old versions and replaced fragments are garbage at once.
my %tables = (f_ctx => [ 'lake', store_uri('file', 'cron') ],
	a_ctx => [ 'az', store_uri('az', 'cron') ]);
for my $t (sort keys %tables)
{
	my ($server, $uri) = @{ $tables{$t} };
	is( as_app(qq{
CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER $server
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0',
           retain_versions '1', retain_interval '0', gc_grace '0')}),
		'', "$t created by app");
}

# Five rows and one merge, one base fragment, each time.
sub insert_and_merge
{
	my ($t, $round) = @_;
	my $from = 5 * $round + 1;
	my $to = $from + 4;
	return as_app(qq{
INSERT INTO $t SELECT 'k' || g, g FROM generate_series($from, $to) g;
SELECT ctxstore.merge_wal('$t') > 0});
}

sub rows_of
{
	my ($t) = @_;
	return as_app("SELECT count(*), sum(n), count(DISTINCT id) FROM $t");
}

sub last_operation
{
	my ($t) = @_;
	return as_app("SELECT operation FROM ctxstore.versions('$t') ORDER BY version DESC LIMIT 1");
}

for my $t (sort keys %tables)
{
	is(insert_and_merge($t, $_), 't', "$t: merge $_") for 0 .. 3;
}

$node->stop;
{
	local $ENV{CTXSTORE_FAILPOINTS} = 'merge.after_commit=error';
	$node->start;
	for my $t (sort keys %tables)
	{
		like(insert_and_merge($t, 4), qr/ERROR .*failpoint merge\.after_commit/s,
			"$t: the last merge commits, then its job fails");
		is(last_operation($t), 'merge', "$t: its merge is not indexed");
	}
	$node->stop;
}
$node->start;

# Schedules, as app, the job "SELECT ctxstore.$function('<table>')" for
# every table at once (pg_cron before 1.5 runs jobs once a minute at most),
# waits until a run of each succeeded, unschedules them; returns whether
# each did, by table.
my $every_second = sql(q{
SELECT (split_part(extversion, '.', 1)::int,
        split_part(split_part(extversion, '.', 2), '-', 1)::int) >= (1, 5)
  FROM pg_extension WHERE extname = 'pg_cron'}) eq 't';
my $schedule = $every_second ? '1 seconds' : '* * * * *';

sub cron_run
{
	my ($function) = @_;
	my %ids = map {;
		$_ => as_app(qq{SELECT cron.schedule('$_-$function', '$schedule',
                                             \$\$SELECT ctxstore.$function('$_')\$\$)})
	} sort keys %tables;
	my %ok = map {;
		$_ => $node->poll_query_until('postgres', qq{
SELECT count(*) > 0 FROM cron.job_run_details
 WHERE jobid = $ids{$_} AND status = 'succeeded'})
	} sort keys %tables;
	as_app(qq{SELECT cron.unschedule($ids{$_})}) for sort keys %tables;
	return \%ok;
}

sub index_versions
{
	my ($t) = @_;
	return as_app("SELECT count(*) FROM ctxstore.versions('$t') WHERE operation = 'index'");
}

my %indexes = map {; $_ => index_versions($_) } sort keys %tables;
my $ok = cron_run('create_id_index');
for my $t (sort keys %tables)
{
	ok($ok->{$t}, "$t: the scheduled create_id_index succeeded");
	is(index_versions($t), $indexes{$t} + 1, "$t: and indexed the last merge");
	is(as_app("SELECT id, n FROM $t WHERE id = 'k23'"), 'k23|23',
		"$t: a key lookup through the index");
	is(as_app("SELECT count(*) FROM ctxstore.fragments('$t')"), '5',
		"$t: five small fragments");
}

$ok = cron_run('compact');
for my $t (sort keys %tables)
{
	ok($ok->{$t}, "$t: the scheduled compact succeeded");
	is(as_app("SELECT count(*) FROM ctxstore.fragments('$t')"), '1',
		"$t: compacted into one fragment");
	is( as_app("SELECT count(*) FROM ctxstore.versions('$t') WHERE operation = 'compact'"),
		'1', "$t: one compact version");
	is(rows_of($t), '25|325|25', "$t: every row once after compaction");
}

$ok = cron_run('gc');
for my $t (sort keys %tables)
{
	ok($ok->{$t}, "$t: the scheduled gc succeeded");
	is( as_app("SELECT s #>> '{gc,outcome}', (s #>> '{gc,bytes_reclaimed}')::bigint > 0 FROM ctxstore.stats('$t') s"),
		'collected|t', "$t: and deleted garbage");
	is(as_app("SELECT (ctxstore.gc('$t', true) ->> 'objects_garbage')::int"),
		'0', "$t: none is left");
	is(rows_of($t), '25|325|25', "$t: every row once after GC");
}

$node->stop;
done_testing();
