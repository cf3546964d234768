# Appends keep flowing while a merge runs (invariant 8, docs/INVARIANTS.md):
# the merge's long part runs in the maintenance worker, and the writer only
# drains afterwards (one shard-manifest commit).  A merge of a one-million-row
# generation runs in the background while two sessions commit single-row
# transactions to the same store; the test counts the commits that completed
# inside the merge's window and compares their latency with the same load on
# an idle store.  First, the maintenance worker runs at
# ctxstore.maintenance_nice, its session's scheduling group too.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/merge_concurrency";
my $logdir = PostgreSQL::Test::Utils::tempdir();

my $node = PostgreSQL::Test::Cluster->new('merge_concurrency');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 40
ctxstore.maintenance_nice = 7
});
$node->start;

sub sql { return $node->safe_psql('postgres', @_); }

# The maintenance worker's nice value (field 19 of /proc/PID/stat, counted
# after the command name, which may hold spaces) and its autogroup's.
sub maint_priority
{
	$node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ctxstore maintenance'})
	  or die 'the maintenance worker did not start';
	my $pid = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'ctxstore maintenance'});
	my $stat = PostgreSQL::Test::Utils::slurp_file("/proc/$pid/stat");
	$stat =~ s/^.*\) //s;
	my $group = -e "/proc/$pid/autogroup"
	  ? PostgreSQL::Test::Utils::slurp_file("/proc/$pid/autogroup") : undef;
	return ((split / /, $stat)[16], $group);
}

my ($nice, $group) = maint_priority();
is($nice, 7, 'the maintenance worker runs at ctxstore.maintenance_nice');
SKIP:
{
	skip 'the kernel does not group sessions for scheduling', 1 unless defined $group;
	like($group, qr/ nice 7$/m, 'and so does the scheduling group of its session');
}
# The merge below runs at the default, the server's priority.
$node->append_conf('postgresql.conf', 'ctxstore.maintenance_nice = 0');
$node->restart;
($nice) = maint_priority();
is($nice, 0, 'ctxstore.maintenance_nice 0 leaves the worker at the server\'s priority');

sql(qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE big (id text NOT NULL, n int, pad text) SERVER lake
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0');
CREATE FOREIGN TABLE small (id text NOT NULL, n int, pad text) SERVER lake
  OPTIONS (uri '${uri}_idle', merge_after_generations '0', cleanup_interval '0');
CREATE SEQUENCE ids;
});
sql(q{INSERT INTO big SELECT 'k' || g, g, repeat('x', 32) FROM generate_series(1, 1000000) g});

# Runs two pgbench sessions of single-row INSERTs into $table for $seconds;
# returns [end time (epoch seconds), latency (seconds)] per transaction.
sub load
{
	my ($name, $table, $seconds) = @_;
	my $prefix = "$logdir/$name";
	$node->pgbench(
		"--no-vacuum --client=2 --jobs=2 --time=$seconds --log --log-prefix=$prefix",
		0, [qr{processed: \d+}], [qr{^$}],
		"$name: two sessions insert for ${seconds}s",
		{ "052_$name" => "INSERT INTO $table VALUES ('c' || nextval('ids'), 0, 'y');" });
	my @tx;
	for my $file (glob("$prefix.*"))
	{
		open my $fh, '<', $file or die "$file: $!";
		while (<$fh>)
		{
			my (undef, undef, $lat_us, undef, $epoch, $us) = split;
			push @tx, [ $epoch + $us / 1e6, $lat_us / 1e6 ];
		}
		close $fh;
	}
	return @tx;
}

sub percentile
{
	my ($p, @v) = @_;
	return 0 unless @v;
	@v = sort { $a <=> $b } @v;
	return $v[ int($p * $#v) ];
}

# As long as the load during the merge: every single-row commit adds a
# generation that each later seal's shard manifest lists (the stores do not
# merge on their own), so a shorter idle run would compare seals of smaller
# manifests.
my @idle = load('idle', 'small', 6);

# The merge, in the background: its start and end as the server saw them.
my ($out, $err) = ('', '');
my $merge = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres'),
		'-c', 'SELECT extract(epoch FROM clock_timestamp())',
		'-c', "SELECT ctxstore.merge_wal('big')",
		'-c', 'SELECT extract(epoch FROM clock_timestamp())'
	],
	'>', \$out, '2>', \$err);
my @busy = load('busy', 'big', 6);
$merge->finish;
my ($start, $merged, $end) = split /\n/, $out;
is($err, '', 'the merge ran without error');
cmp_ok($merged, '>=', 1, 'merge_wal merged the big generation');

my @during = grep { $_->[0] > $start && $_->[0] < $end } @busy;
my $window = $end - $start;
my @lat_during = map { $_->[1] } @during;
my @lat_idle = map { $_->[1] } @idle;
my $max_during = percentile(1, @lat_during);
diag(sprintf('merge_wal of a 1M-row generation: %.2fs; %d commits during it; latency p50/p99/max '
		  . '%.1f/%.1f/%.1f ms during the merge vs %.1f/%.1f/%.1f ms idle',
		$window, scalar(@during),
		1000 * percentile(0.5, @lat_during), 1000 * percentile(0.99, @lat_during),
		1000 * $max_during,
		1000 * percentile(0.5, @lat_idle), 1000 * percentile(0.99, @lat_idle),
		1000 * percentile(1, @lat_idle)));
cmp_ok($window, '>', 0.5, 'the merge took long enough to measure');
cmp_ok(scalar(@during), '>=', 10, 'commits kept completing during the merge');
cmp_ok($max_during, '<', $window / 2,
	'no commit waited for the merge (the longest took under half of it)');

is( sql(q{SELECT (s #>> '{merge,merges}')::int >= 1, (s #>> '{merge,generations}')::int >= 1
            FROM ctxstore.stats('big') s}),
	't|t', 'the maintenance worker merged');
is(sql(q{SELECT (SELECT count(*) FROM big) + (SELECT count(*) FROM small) - 1000000
              = (SELECT last_value FROM ids)}), 't',
	'every row once, the merged ones and those written during the merge');

$node->stop;
done_testing();
