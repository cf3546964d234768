# What only the workers can show: the ctxstore.workers view; object-store
# writes per group commit (1 PUT sealed when the generation travels inside
# its shard manifest, 2 when it is an object of its own, 1 unsealed,
# nothing read on the
# way) and no new connection per append once warm; the count-, call- and
# time-triggered merges; the pending-generations warning and limit; the
# maintenance functions' results and their ownership check; the
# ctxstore.failpoints GUC reaching the writer on reload; and the seal at
# worker shutdown.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('maintenance');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 40
log_min_messages = info
});
$node->start;

sub sql { return $node->safe_psql('postgres', @_); }

# A value of ctxstore.stats($table), by JSON path ('writer,requests,puts').
sub stats_of
{
	my ($table, $path) = @_;
	return sql("SELECT ctxstore.stats('$table') #>> '{$path}'");
}

# Polls $sql until it returns 't' (bounded by the TAP timeout).
sub wait_for
{
	my ($sql, $what) = @_;
	ok($node->poll_query_until('postgres', $sql), $what);
}

sql(q{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE ROLE app LOGIN;
GRANT pg_read_server_files, pg_write_server_files TO app;
});

# ---- the workers view ----

my $shard = sql('SHOW ctxstore.shard_id');
my $sysid = sql('SELECT system_identifier FROM pg_control_system()');
like($shard, qr/^[A-Za-z0-9._-]+-\Q$sysid\E$/,
	'the default shard id is <host>-<system identifier>');
is( sql(q{SELECT string_agg(w.kind || ':' || (w.pid = a.pid) || ':' || (w.shard_id = current_setting('ctxstore.shard_id')), ',' ORDER BY w.kind)
            FROM ctxstore.workers w
            JOIN pg_stat_activity a ON a.backend_type = 'ctxstore ' || w.kind}),
	'maintenance:true:true,writer:true:true',
	'ctxstore.workers shows the writer and the maintenance worker with their pids and shard');

# ---- object-store writes per group commit ----

file_table($node, 'sealed', merge_after_generations => 0, cleanup_interval => 0);
file_table($node, 'large', merge_after_generations => 0, cleanup_interval => 0);
file_table($node, 'deferred', seal_on_insert => 'false', flush_interval => '1h',
	merge_after_generations => 0, cleanup_interval => 0);
sql("INSERT INTO sealed VALUES ('warm', 0); INSERT INTO deferred VALUES ('warm', 0);
     INSERT INTO large VALUES ('warm', 0)");
sql("SELECT ctxstore.flush('deferred')");

sub requests
{
	my ($table) = @_;
	return split /\|/, sql(qq{
SELECT s #>> '{writer,requests,puts}', s #>> '{writer,requests,gets}',
       s #>> '{writer,requests,heads}', s #>> '{writer,requests,lists}',
       s ->> 'store_commits', s #>> '{writer,wal_entries}',
       s #>> '{writer,hints}'
  FROM ctxstore.stats('$table') s});
}

# The large table's transactions insert 3000 rows each: more than a
# generation carried inline may hold (64 KiB).
my %insert = (
	sealed => "INSERT INTO sealed VALUES ('r\$i', \$i)",
	deferred => "INSERT INTO deferred VALUES ('r\$i', \$i)",
	large => "INSERT INTO large SELECT 'r\$i-' || g || md5(g::text), \$i FROM generate_series(1, 3000) g");
my %per = (sealed => 1, deferred => 1, large => 2);
for my $table ('sealed', 'deferred', 'large')
{
	my @before = requests($table);
	for my $i (1 .. 10)
	{
		(my $insert = $insert{$table}) =~ s/\$i/$i/g;
		sql($insert);
	}
	my @after = requests($table);
	my @d = map { $after[$_] - $before[$_] } 0 .. $#before;
	my $per = $per{$table};
	is($d[4], 10, "$table: 10 transactions, 10 appends");
	is($d[0] - $d[6], 10 * $per, "$table: $per PUT(s) per append, besides shard hints");
	is("$d[1]|$d[2]|$d[3]", '0|0|0', "$table: nothing read on the way");
	is($d[5], $table eq 'deferred' ? 10 : 0,
		"$table: " . ($table eq 'deferred' ? 'one WAL entry each' : 'no WAL entry'));
}
is(sql('SELECT count(*) FROM deferred'), '1',
	'deferred rows are not visible before a seal');
is(sql(q{SELECT f->>'sealed_rows' FROM ctxstore.flush('deferred') f}), '10',
	'ctxstore.flush seals them');
is(sql('SELECT count(*) FROM deferred'), '11', 'and they are visible');

# 16 sessions of single-row transactions: every group commit is one append
# of 1 PUT (its generation inline), and groups hold several transactions.
{
	my @before = requests('sealed');
	my $acked0 = stats_of('sealed', 'acked_transactions');
	$node->pgbench(
		'--no-vacuum --client=16 --jobs=4 --transactions=50',
		0, [qr{processed: 800/800}], [qr{^$}],
		'16 sessions commit 50 single-row transactions each',
		{ '050_insert' => q{INSERT INTO sealed VALUES ('p' || :client_id || '-' || random(), 1);} });
	my @after = requests('sealed');
	my ($puts, $appends) = ($after[0] - $before[0], $after[4] - $before[4]);
	my $hints = $after[6] - $before[6];
	my $acked = stats_of('sealed', 'acked_transactions') - $acked0;
	is($acked, 800, 'every transaction acknowledged');
	is($puts - $hints, $appends, 'exactly 1 PUT per group commit');
	cmp_ok($hints, '<=', int($appends / 64) + 1, 'and a shard hint per 64 versions at most');
	cmp_ok($appends, '<', $acked, 'group commits hold several transactions');
	diag(sprintf('16 sessions: %d transactions in %d group commits, %.2f PUTs per transaction',
			$acked, $appends, $puts / $acked));
}

# ---- drains of merges nobody waits for ----

# A seal's shard-manifest commit leaves merged generations out anyway, so
# after a merge job nobody waits for the writer only notes it: under steady
# commits the seals drop the merged generations and drains (one more commit
# each on the appends' path) are rare; once the shard is quiet a drain
# follows within a second or so.
file_table($node, 'lazy', merge_after_generations => 2, cleanup_interval => 0);
sql("INSERT INTO lazy VALUES ('warm', 0)");
{
	my $drains0 = stats_of('lazy', 'writer,drains');
	my $merges0 = stats_of('lazy', 'merge,merges');
	$node->pgbench(
		'--no-vacuum --client=16 --jobs=4 --transactions=50',
		0, [qr{processed: 800/800}], [qr{^$}],
		'16 sessions commit into a store merged every 2 generations',
		{ '050_lazy' => q{INSERT INTO lazy VALUES ('l' || :client_id || '-' || random(), 1);} });
	my $merges = stats_of('lazy', 'merge,merges') - $merges0;
	my $drains = stats_of('lazy', 'writer,drains') - $drains0;
	cmp_ok($merges, '>=', 8, 'the writer handed out merges as it sealed');
	cmp_ok($drains, '<=', $merges / 4, 'seals, not drains, dropped most merged generations');
	diag("lazy drains: $merges merges, $drains drains during 800 commits");

	# From a settled shard (nothing pending, no merge running: pgbench's
	# last seals may have left one generation, or a merge in flight), two
	# seals in a row want a merge; nothing is sealed after it.  (Two
	# separate sessions would race the merge of the first seal's generation
	# with the second seal, which then drops the merged one itself.)
	sql("SELECT ctxstore.merge_wal('lazy')");
	wait_for("SELECT ctxstore.stats('lazy') #>> '{writer,pending_generations}' = '0'",
		'the shard is settled');
	my $drained = stats_of('lazy', 'writer,drains');
	my $merged = stats_of('lazy', 'merge,merges');
	sql("INSERT INTO lazy VALUES ('q1', 1); INSERT INTO lazy VALUES ('q2', 2)");
	wait_for("SELECT (ctxstore.stats('lazy') #>> '{merge,merges}')::int > $merged",
		'the quiet shard is merged');
	wait_for("SELECT (ctxstore.stats('lazy') #>> '{writer,drains}')::int > $drained",
		'and drained without another write');
	is(stats_of('lazy', 'writer,pending_generations'), '0', 'leaving nothing pending');
}

# ---- no new connection per append once warm (Azurite) ----

sql(server_sql('az', 'lake_az'));
my $az_uri = store_uri('az', 'warm');
sql("CREATE FOREIGN TABLE az_t (id text NOT NULL, n int) SERVER lake_az
     OPTIONS (uri '$az_uri', merge_after_generations '0', cleanup_interval '0')");
sql("INSERT INTO az_t VALUES ('w$_', $_)") for 1 .. 3;
my $conn0 = stats_of('az_t', 'writer,requests,connections');
sql("INSERT INTO az_t VALUES ('a$_', $_)") for 1 .. 20;
cmp_ok($conn0, '>', 0, 'the writer opened a connection to Azurite');
is(stats_of('az_t', 'writer,requests,connections'), $conn0,
	'20 more appends opened no new connection');

# ---- the view, with stores open ----

is( sql(q{SELECT stores >= 3, queue_depth, rounds > 0, commits > 0, last_error IS NULL
            FROM ctxstore.workers WHERE kind = 'writer'}),
	't|0|t|t|t', 'the writer holds the stores open and has nothing queued');
like(sql(q{SELECT store_uris::text FROM ctxstore.workers WHERE kind = 'writer'}),
	qr/\Q$az_uri\E/, 'and lists their URIs');
is( $node->safe_psql('postgres',
		q{SELECT stores >= 3, store_uris IS NULL FROM ctxstore.workers WHERE kind = 'writer'},
		extra_params => [ '-U', 'app' ]),
	't|t', 'URIs are shown to pg_read_all_stats members only');

# ---- ownership ----

sql('GRANT SELECT, INSERT ON sealed TO app');
for my $f ('flush', 'merge_wal', 'cleanup_wal', 'pending_wal_generations')
{
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT ctxstore.$f('sealed')",
		extra_params => [ '-U', 'app' ]);
	like($err, qr/ERROR:  42501: must be owner of foreign table sealed/,
		"ctxstore.$f needs ownership");
}
like(($node->psql('postgres', "SELECT ctxstore.stats('sealed') ->> 'uri'",
			extra_params => [ '-U', 'app' ]))[1],
	qr/sealed/, 'ctxstore.stats needs SELECT only');

# ---- merges: by count, by call, by cleanup ----

file_table($node, 'counted', merge_after_generations => 3, merge_max_generations => 2,
	cleanup_interval => 0);
sql("INSERT INTO counted VALUES ('c$_', $_)") for 1 .. 3;
wait_for(q{SELECT ctxstore.pending_wal_generations('counted') = 0},
	'merge_after_generations: the third generation triggers a merge');
is( sql(q{SELECT s #>> '{merge,merges}', s #>> '{merge,generations}', s ->> 'rows'
            FROM ctxstore.stats('counted') s}),
	'2|3|3', 'merged in steps of merge_max_generations, every row once');
is(sql('SELECT count(*), count(DISTINCT id) FROM counted'), '3|3',
	'the table reads every row once after the merge');

file_table($node, 'called', merge_after_generations => 0, cleanup_interval => 0,
	cleanup_min_generations => 3);
sql("INSERT INTO called VALUES ('m$_', $_)") for 1 .. 2;
is(sql(q{SELECT ctxstore.cleanup_wal('called')}), '0',
	'cleanup_wal merges nothing below cleanup_min_generations');
is(sql(q{SELECT ctxstore.pending_wal_generations('called')}), '2',
	'two generations pending');
sql("INSERT INTO called VALUES ('m3', 3)");
is(sql(q{SELECT ctxstore.cleanup_wal('called')}), '3',
	'cleanup_wal merges once cleanup_min_generations are pending');
is(sql(q{SELECT ctxstore.pending_wal_generations('called')}), '0',
	'nothing pending afterwards');

file_table($node, 'deferred_merge', seal_on_insert => 'false', flush_interval => '1h',
	merge_after_generations => 0, cleanup_interval => 0);
sql("INSERT INTO deferred_merge VALUES ('d$_', $_)") for 1 .. 2;
is(sql(q{SELECT ctxstore.merge_wal('deferred_merge')}), '1',
	'merge_wal seals the memtable and merges it');
is(sql('SELECT count(*) FROM deferred_merge'), '2', 'its rows are visible');

file_table($node, 'timed', seal_on_insert => 'false', flush_interval => '1h',
	merge_after_generations => 0, cleanup_interval => '1s');
sql("INSERT INTO timed VALUES ('t$_', $_)") for 1 .. 2;
wait_for(q{SELECT count(*) = 2 AND ctxstore.pending_wal_generations('timed') = 0 FROM timed},
	'cleanup_interval: the writer seals and merges by itself');

# ---- the pending-generations warning and limit ----

file_table($node, 'limited', merge_after_generations => 0, cleanup_interval => 0,
	pending_generations_warn => 1, pending_generations_max => 3);
my $log_offset = -s $node->logfile;
sql("INSERT INTO limited VALUES ('l$_', $_)") for 1 .. 3;
my ($rc, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO limited VALUES ('l4', 4)");
like($err, qr/ERROR:  54000:/, 'over pending_generations_max writes are refused (54000)');
like($err, qr/HINT:  .*ctxstore\.merge_wal\(\)/, 'with a hint to merge');
ok( $node->log_contains(
		qr/WARNING:  ctxstore writer: shard \S+ of store "[^"]+limited" has 2 unmerged generations \(pending_generations_warn is 1\)/,
		$log_offset),
	'over pending_generations_warn the writer warns in the log');
is(sql(q{SELECT ctxstore.merge_wal('limited')}), '3', 'merge_wal merges them');
sql("INSERT INTO limited VALUES ('l4', 4)");
is(sql('SELECT count(*) FROM limited'), '4', 'and writes are accepted again');

# ---- ctxstore.failpoints ----

($rc, $out, $err) = $node->psql('postgres',
	"SET ctxstore.failpoints = 'seal.after_fragment=error'",
	extra_params => [ '-U', 'app' ]);
like($err, qr/permission denied to set parameter "ctxstore\.failpoints"/,
	'ctxstore.failpoints is for superusers');
($rc, $out, $err) = $node->psql('postgres', "SET ctxstore.failpoints = 'nonsense'");
like($err, qr/invalid value for parameter "ctxstore\.failpoints"/,
	'a malformed spec is refused');

sql("ALTER SYSTEM SET ctxstore.failpoints = 'seal.after_fragment=error'");
sql('SELECT pg_reload_conf()');
my $i = 0;
my $armed = 0;
for (1 .. 100)
{
	($rc, $out, $err) = $node->psql('postgres',
		"INSERT INTO sealed VALUES ('fp" . $i++ . "', 1)");
	if ($err =~ /failpoint seal\.after_fragment/) { $armed = 1; last; }
	usleep(100_000);
}
ok($armed, 'a reload arms the failpoint in the writer');
sql('ALTER SYSTEM RESET ctxstore.failpoints');
sql('SELECT pg_reload_conf()');
wait_for(q{SELECT current_setting('ctxstore.failpoints') = ''},
	'the setting is back to empty');
my $disarmed = 0;
for (1 .. 100)
{
	($rc, $out, $err) = $node->psql('postgres',
		"INSERT INTO sealed VALUES ('fp" . $i++ . "', 1)");
	if ($rc == 0) { $disarmed = 1; last; }
	usleep(100_000);
}
ok($disarmed, 'resetting it disarms the writer');
like(sql(q{SELECT last_error FROM ctxstore.workers WHERE kind = 'writer'}),
	qr/failpoint seal\.after_fragment/, 'the view shows the writer\'s last error');

# ---- the seal at worker shutdown ----

file_table($node, 'shutdown', seal_on_insert => 'false', flush_interval => '1h',
	merge_after_generations => 0, cleanup_interval => 0);
sql("INSERT INTO shutdown VALUES ('s$_', $_)") for 1 .. 3;
is(sql('SELECT count(*) FROM shutdown'), '0', 'unsealed rows are not visible');
my $writer = sql(q{SELECT pid FROM ctxstore.workers WHERE kind = 'writer'});
sql("SELECT pg_terminate_backend($writer)");
wait_for(qq{SELECT pid <> $writer FROM ctxstore.workers WHERE kind = 'writer' AND pid IS NOT NULL},
	'the writer comes back after SIGTERM');
is(sql('SELECT count(*) FROM shutdown'), '3',
	'SIGTERM sealed them: visible without another write');

$node->stop;
done_testing();
