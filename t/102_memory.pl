# Bounded memory: peak RSS (VmHWM of /proc/<pid>/status) of a backend, the
# writer worker and the maintenance worker on a file:// store under
#   - a 50 MB value, inserted and read back;
#   - a 1,000,000-row INSERT transaction, and one refused at
#     ctxstore.max_transaction_bytes (54000 with its hint);
#   - 100 concurrent sessions committing at once;
#   - scans and merges of a store of N and of 4N rows (streamed: memory
#     independent of the store's size);
#   - a mixed run of rounds of inserts, updates, merges, scans and
#     compactions (the workers' RSS does not grow over it);
#   - the memory the workers publish in ctxstore.workers: live heap bytes
#     and, of them, the bytes their caches hold (the writer's heap returns
#     to its idle value after each large transaction, but for the key cache
#     of the unmerged rows, which cache_bytes accounts for).
# Every assertion is a bound that follows from the design (a value is copied
# a fixed number of times; a transaction buffers at most the GUC; scans and
# merges hold one fragment's worth, not the store; a worker gives back what
# a large transaction took once it is idle again), never a timing.  The
# figures are printed (note) and recorded in docs/RELIABILITY.md.  Each
# measured step runs in a fresh backend, or against workers the step's
# restart started: a process keeps the pages it once used, so only a fresh
# one's peak is the step's own.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('memory', "max_connections = 120\n");

sub query { return $node->safe_psql('postgres', $_[0]) }

# A field of /proc/<pid>/status in kB.
sub status_kb
{
	my ($pid, $field) = @_;
	open my $fh, '<', "/proc/$pid/status" or die "/proc/$pid/status: $!";
	while (my $line = <$fh>) { return $1 if $line =~ /^$field:\s+(\d+) kB/ }
	die "no $field for $pid\n";
}

# The workers' pids, once both run.
my %worker;

sub find_workers
{
	for my $kind (qw(writer maintenance))
	{
		wait_until(sub {
			$worker{$kind} = query("SELECT pid FROM ctxstore.workers WHERE kind = '$kind'");
			return $worker{$kind} ne '';
		}) or die "no $kind worker\n";
	}
	return;
}
find_workers();

# Both workers publish their memory once they run: a live heap, and caches
# that are part of it.
for my $kind (qw(writer maintenance))
{
	my $published = qq{SELECT heap_bytes IS NOT NULL FROM ctxstore.workers WHERE kind = '$kind'};
	wait_until(sub { query($published) eq 't' }) or die "the $kind publishes no memory\n";
	is(query(qq{SELECT heap_bytes > 0 AND cache_bytes >= 0 AND cache_bytes <= heap_bytes
	              FROM ctxstore.workers WHERE kind = '$kind'}), 't',
		"the $kind publishes a live heap, and caches within it");
}

# Runs $sql in a fresh backend; returns its peak RSS in kB (the last
# statement reads it).
sub backend_peak
{
	my ($sql) = @_;
	my $out = query("$sql;\n"
		  . q{SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s*(\d+)')});
	return (split /\n/, $out)[-1];
}

# Runs $code (SQL text, or a sub) against workers started afresh: a
# long-lived worker keeps the pages of whatever it did before, so only a
# fresh one's peak is that of this step.  Returns the workers' peaks in kB.
sub fresh_workers_peak
{
	my ($code) = @_;
	$node->restart;
	find_workers();
	ref $code ? $code->() : query($code);
	return map { $_ => status_kb($worker{$_}, 'VmHWM') } qw(writer maintenance);
}

my %figure;

sub record
{
	my ($name, $kb) = @_;
	$figure{$name} = $kb;
	note(sprintf('%-44s %8.1f MB', $name, $kb / 1024));
	return $kb;
}

sub table
{
	my ($name, $opts) = @_;
	my $uri = store_uri("mem_$name");
	query("CREATE FOREIGN TABLE $name (id text NOT NULL, body text) SERVER lake
	       OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0'$opts)");
	return;
}

my $mb = 1024;    # kB
my $base = record('backend, idle', backend_peak('SELECT 1'));

# The writer's published memory in kB: (heap, cache), as it stands after
# every commit made before the call.  The writer publishes at the top of its
# loop, so once a commit of this call's own returns, it has published since
# every earlier commit's round.
table('ping', '');
my $pings = 0;

sub writer_memory
{
	$pings++;
	query("INSERT INTO ping VALUES ('p$pings', 'p')");
	return map { $_ / 1024 }
	  split /\|/, query(q{SELECT heap_bytes, cache_bytes FROM ctxstore.workers WHERE kind = 'writer'});
}

# A 50 MB value: built (string_agg), held as a datum, encoded into the
# transaction's buffer, sent to the writer.  A fixed number of copies.
table('big', '');
my $value = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 50 * 32768) g)};
my $built = record('backend, building the 50 MB value',
	backend_peak("SELECT length($value)"));
my %idle = fresh_workers_peak('SELECT 1');
record("$_, idle", $idle{$_}) for sort keys %idle;
# The writer's resident memory once it is idle again after $sql ran in a
# fresh backend (it trims malloc's free memory before it sleeps), and the
# same before: the backend's peak, RSS before and after, and the published
# memory (writer_memory) before and after, in kB.
sub writer_rss_around
{
	my ($sql, $slack) = @_;
	my @memory_before = writer_memory();
	my $before = status_kb($worker{writer}, 'VmRSS');
	my $peak = backend_peak($sql);
	wait_until(sub { status_kb($worker{writer}, 'VmRSS') < $before + $slack }, 10);
	my $after = status_kb($worker{writer}, 'VmRSS');
	return ($peak, $before, $after, \@memory_before, [ writer_memory() ]);
}

my ($big_in, $big_rss_before, $big_rss_after, $big_mem_before, $big_mem_after);
my %big_in = fresh_workers_peak(sub {
	($big_in, $big_rss_before, $big_rss_after, $big_mem_before, $big_mem_after) =
	  writer_rss_around("INSERT INTO big VALUES ('v', $value)", 10 * $mb);
	record('backend, INSERT of a 50 MB value', $big_in);
});
cmp_ok($big_in - $built, '<', 6 * 50 * $mb,
	'a 50 MB INSERT holds fewer than 6 copies of it beyond building it');
record('writer, INSERT of a 50 MB value', $big_in{writer});
cmp_ok($big_in{writer} - $idle{writer}, '<', 4.5 * 50 * $mb,
	'the writer committing it holds fewer than 4.5 copies');
record('writer RSS before the 50 MB INSERT', $big_rss_before);
record('writer RSS once idle after it', $big_rss_after);
cmp_ok($big_rss_after - $big_rss_before, '<', 10 * $mb,
	'... and gives them back: its RSS returns within 10 MB of before');
record('writer heap before the 50 MB INSERT', $big_mem_before->[0]);
record('writer heap after it', $big_mem_after->[0]);
cmp_ok($big_mem_after->[0] - $big_mem_before->[0], '<', 1 * $mb,
	'... and its published heap returns within 1 MB of before');
my $big_out = record('backend, SELECT of the 50 MB value',
	backend_peak(q{SELECT length(body) FROM big}));
cmp_ok($big_out - $base, '<', 4 * 50 * $mb, 'reading it back holds fewer than 4 copies');
my %merged = fresh_workers_peak(q{SELECT ctxstore.merge_wal('big')});
record("$_, merge of the 50 MB value", $merged{$_}) for sort keys %merged;
cmp_ok($merged{$_} - $idle{$_}, '<', 8 * 50 * $mb, "the $_ merging it holds fewer than 8 copies")
  for sort keys %merged;
is(query(q{SELECT length(body) FROM big}), 50 * 32768 * 32, 'the value reads back whole');

# 1,000,000 rows in one transaction: the transaction buffer holds their
# encoding; a limit below it refuses the transaction at the limit.
table('many', '');
my $rows = q{SELECT 'k' || g, 'v' FROM generate_series(1, 1000000) g};
my ($many, $many_rss_before, $many_rss_after, $many_mem_before, $many_mem_after);
my %many = fresh_workers_peak(sub {
	($many, $many_rss_before, $many_rss_after, $many_mem_before, $many_mem_after) =
	  writer_rss_around("INSERT INTO many $rows", 10 * $mb);
	record('backend, 1,000,000-row INSERT', $many);
});
record('writer, 1,000,000-row INSERT', $many{writer});
# It holds the hand-over segment, the resolved rows and one key cache of
# about 50 bytes a key: the transaction's keys move from the request's
# cache to the staged rows' and on to the unmerged rows', empty in this
# fresh table (a cache that holds keys already gets a copy instead).
cmp_ok($many{writer} - $idle{writer}, '<', 1.6 * ($many - $base),
	'the writer committing it holds less than 1.6x what the backend buffered');
# What stays is the key cache of the unmerged rows (every key, for the
# uniqueness checks, until a merge takes them), not the transaction's
# buffers.
record('writer RSS before the 1,000,000-row INSERT', $many_rss_before);
record('writer RSS once idle after it', $many_rss_after);
cmp_ok($many_rss_after - $many_rss_before, '<', 100 * 1_000_000 / 1024,
	'... where the key cache of the unmerged rows keeps under 100 bytes a row');
# The published memory says the same: what stays is the key cache.
my ($heap_before, $cache_before) = @$many_mem_before;
my ($heap_after, $cache_after) = @$many_mem_after;
record('writer heap before the 1,000,000-row INSERT', $heap_before);
record('writer caches before it', $cache_before);
record('writer heap once idle after it', $heap_after);
record('writer caches once idle after it', $cache_after);
cmp_ok($cache_after - $cache_before, '>', 20 * 1_000_000 / 1024,
	'... its caches hold over 20 bytes a row more: the unmerged rows\' keys');
cmp_ok(($heap_after - $cache_after) - ($heap_before - $cache_before), '<', 1 * $mb,
	'... and the rest of its heap returns within 1 MB of before');
is(query('SELECT count(*) FROM many'), '1000000', 'the 1,000,000 rows are there');
my ($rc, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET ctxstore.max_transaction_bytes = '4MB';\nINSERT INTO many $rows");
like($err, qr/ERROR:  54000: transaction wrote more than ctxstore\.max_transaction_bytes/,
	'a transaction past ctxstore.max_transaction_bytes fails with 54000');
like($err, qr/HINT:  Insert in smaller transactions, or raise ctxstore\.max_transaction_bytes\./,
	'... with its hint');
my $refused = record('backend, INSERT refused at 4 MB',
	backend_peak("SET ctxstore.max_transaction_bytes = '4MB';\n"
		  . "DO \$\$BEGIN INSERT INTO many $rows; EXCEPTION WHEN program_limit_exceeded THEN NULL; END\$\$"));
cmp_ok($refused, '<', $many, '... and holds less than the transaction that fit');
cmp_ok($refused - $base, '<', ($many - $base) / 2,
	'... less than half of it: the refusal comes at the limit, not at the end');

# 100 sessions commit at once: the writer's group commit takes them as
# batches; its peak is that of a batch, not of the sessions.
table('conc', '');
my %conc = map {
	my $n = $_;
	my %peak = fresh_workers_peak(sub { concurrent($n) });
	($n => record("writer, $n concurrent sessions", $peak{writer}))
} 10, 100;
is(query('SELECT count(*) FROM conc'), 110 * 100, 'every session\'s rows are there');
cmp_ok($conc{100}, '<', 1.5 * $conc{10},
	'the writer\'s peak for 100 sessions is within 1.5x of that for 10');

# Starts psql -c $sql[i] for each; true once every one has succeeded.
sub sessions
{
	my @sql = @_;
	my @runs = map {
		IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $_ ],
			'>', \my $o, '2>', \my $e)
	} @sql;
	$_->finish for @runs;
	return !grep { $_->result != 0 } @runs;
}

sub concurrent
{
	my ($n) = @_;
	ok(sessions(map {
		"INSERT INTO conc SELECT '$n-$_-' || g, repeat('x', 100) FROM generate_series(1, 100) g"
	} 1 .. $n), "$n concurrent sessions committed");
	return;
}

# Scans and merges of N and 4N rows, fragments of the same size.
my $n = 50_000;
my %scan;
my %merge;
for my $size ($n, 4 * $n)
{
	my $t = "s$size";
	table($t, ", target_rows_per_fragment '10000'");
	query("INSERT INTO $t SELECT 'k' || g, repeat(md5(g::text), 6) FROM generate_series(1, $size) g;
	       SELECT ctxstore.merge_wal('$t');");
	$scan{$size} = record("backend, scan of $size rows",
		backend_peak("SELECT count(*), sum(length(body)) FROM $t"));
	query("INSERT INTO $t SELECT 'n' || g, repeat(md5(g::text), 6) FROM generate_series(1, 20000) g");
	my %peak = fresh_workers_peak("SELECT ctxstore.merge_wal('$t')");
	$merge{$size} = record("workers (larger), merge of 20000 rows into $size",
		$peak{writer} > $peak{maintenance} ? $peak{writer} : $peak{maintenance});
}
cmp_ok($scan{ 4 * $n }, '<', 1.5 * $scan{$n}, 'a scan of 4N rows peaks within 1.5x of one of N');
cmp_ok($merge{ 4 * $n }, '<', 1.5 * $merge{$n},
	'a merge into a store of 4N rows peaks within 1.5x of one into N');

# The mixed run: the workers' RSS after the last round is within 1.25x of
# that after the second (the first rounds warm caches and arenas up).
table('mixed', ", target_rows_per_fragment '5000'");
my %rss;
$node->restart;
find_workers();
my %mixed_pid = %worker;
for my $round (1 .. 8)
{
	sessions(map {
		"INSERT INTO mixed SELECT 'r$round-$_-' || g, repeat('y', 200) FROM generate_series(1, 2000) g"
	} 1 .. 4) or die "round $round: an INSERT failed\n";
	query("UPDATE mixed SET body = 'updated' WHERE id LIKE 'r$round-1-%';
	       DELETE FROM mixed WHERE id LIKE 'r$round-2-%';
	       SELECT ctxstore.merge_wal('mixed');
	       SELECT count(*) FROM mixed;
	       SELECT ctxstore.compact('mixed');");
	$rss{$round}{$_} = status_kb($worker{$_}, 'VmRSS') for keys %worker;
}
for my $kind (sort keys %worker)
{
	record("$kind RSS, mixed run, round 2", $rss{2}{$kind});
	record("$kind RSS, mixed run, round 8", $rss{8}{$kind});
	cmp_ok($rss{8}{$kind}, '<', 1.25 * $rss{2}{$kind}, "the ${kind}'s RSS does not grow over the run");
}
is(query('SELECT count(*) FROM mixed'), 8 * 3 * 2000, 'the mixed run\'s rows are there');
find_workers();
is($worker{$_}, $mixed_pid{$_}, "the $_ worker ran throughout the mixed run") for sort keys %worker;

$node->stop;
done_testing();
