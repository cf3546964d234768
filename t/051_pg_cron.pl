# The maintenance functions from pg_cron (Debian's postgresql-15-cron): a job
# scheduled with ctxstore.cleanup_wal() runs in pg_cron's background worker,
# succeeds, and merges the table's pending generations.  pg_cron 1.5 and later
# schedule every second ('1 seconds'); older ones every minute at best, so
# the wait is bounded by the TAP timeout either way.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/pg_cron";

my $node = PostgreSQL::Test::Cluster->new('pg_cron');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore,pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
$node->start;

sub sql { return $node->safe_psql('postgres', @_); }

sql(qq{
CREATE EXTENSION ctxstore;
CREATE EXTENSION pg_cron;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE events (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0');
});
sql("INSERT INTO events VALUES ('e$_', $_)") for 1 .. 3;
is(sql(q{SELECT ctxstore.pending_wal_generations('events')}), '3',
	'three generations pending, nothing merges them by itself');

my $every_second = sql(q{
SELECT (split_part(extversion, '.', 1)::int,
        split_part(split_part(extversion, '.', 2), '-', 1)::int) >= (1, 5)
  FROM pg_extension WHERE extname = 'pg_cron'}) eq 't';
my $schedule = $every_second ? '1 seconds' : '* * * * *';
sql(qq{SELECT cron.schedule('ctxstore-cleanup', '$schedule',
                            \$\$SELECT ctxstore.cleanup_wal('events')\$\$)});
diag("pg_cron schedule '$schedule'");

ok( $node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM cron.job_run_details
 WHERE command LIKE '%ctxstore.cleanup_wal%' AND status = 'succeeded'}),
	'the scheduled cleanup ran and succeeded');
is(sql(q{SELECT ctxstore.pending_wal_generations('events')}), '0',
	'and merged the pending generations');
is( sql(q{SELECT (s #>> '{merge,generations}')::int, count(*) FROM ctxstore.stats('events') s, events GROUP BY 1}),
	'3|3', 'every row once, read from the base');
sql(q{SELECT cron.unschedule('ctxstore-cleanup')});

$node->stop;
done_testing();
