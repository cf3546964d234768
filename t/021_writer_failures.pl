# The commit wait is bounded and interruptible, and survives the writer
# worker going away: a COMMIT either succeeds or fails with an error that
# says what became of its rows, never hangs; the worker comes back by itself;
# rows the worker never took are never written; acknowledged rows survive a
# crash of the worker with commits in flight in the request ring.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores qw(waiting_commit writer_pid wait_for_writer);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/writer_failures";

my $node = PostgreSQL::Test::Cluster->new('writer_failures');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 40
restart_after_crash = on
});
$node->start;
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE items (id text NOT NULL, n int) SERVER lake OPTIONS (uri '$uri');
});

sub count_like
{
	my ($pattern) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM items WHERE id LIKE '$pattern'");
}

# Runs $sql in psql on $on (default $node); returns (elapsed seconds, stderr).
sub timed_psql
{
	my ($sql, $on) = @_;
	my $start = time;
	my ($rc, $out, $err) = ($on // $node)->psql('postgres', $sql, timeout => 60);
	return (time - $start, $err);
}

# A session whose INSERT is now waiting for the writer.
sub start_waiting_insert
{
	my ($id) = @_;
	return waiting_commit($node, "INSERT INTO items VALUES ('$id', 1);");
}

# Lets a waiting session finish; returns its stderr.
sub finish_session
{
	my ($bg) = @_;
	$bg->query('SELECT 1');
	my $err = $bg->{stderr};
	$bg->quit;
	return $err;
}

my $writer = wait_for_writer($node);
$node->safe_psql('postgres', "INSERT INTO items VALUES ('warm-up', 0)");

# ---- a stopped worker: timeouts and cancel withdraw the request ----

kill 'STOP', $writer;

my ($elapsed, $err) = timed_psql(
	"SET statement_timeout = '500ms'; INSERT INTO items VALUES ('withdrawn-statement-timeout', 1);");
like($err, qr/canceling statement due to statement timeout/,
	'statement_timeout ends a commit the writer does not answer');
like($err, qr/not written/, 'the error says the rows were not written');
cmp_ok($elapsed, '<', 10, 'statement_timeout bounds the wait');

($elapsed, $err) = timed_psql(q{
SET ctxstore.commit_timeout = 300;
BEGIN;
INSERT INTO items VALUES ('withdrawn-commit-timeout-1', 1);
INSERT INTO items VALUES ('withdrawn-commit-timeout-2', 2);
COMMIT;
});
like($err, qr/ctxstore\.commit_timeout/, 'ctxstore.commit_timeout caps the wait');
like($err, qr/not written/, 'the error says the rows were not written');
cmp_ok($elapsed, '<', 10, 'ctxstore.commit_timeout bounds the wait');

my ($bg, $bg_pid) = start_waiting_insert('withdrawn-cancel');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($bg_pid)");
$err = finish_session($bg);
like($err, qr/canceling statement due to user request/, 'cancel ends the wait');
like($err, qr/not written/, 'the cancel error says the rows were not written');

kill 'CONT', $writer;

$node->safe_psql('postgres', "INSERT INTO items VALUES ('after-stop', 1)");
is(count_like('after-stop'), '1', 'the resumed writer commits new rows');
is(count_like('withdrawn-%'), '0', 'withdrawn rows never appear');

# ---- SIGTERM: the worker leaves, a waiting commit fails clearly ----

kill 'STOP', $writer;
($bg, $bg_pid) = start_waiting_insert('sigterm-queued');
kill 'TERM', $writer;
kill 'CONT', $writer;
$err = finish_session($bg);
like($err, qr/ctxstore writer worker is not running/,
	'a commit queued when the worker exits fails with a clear error');
like($err, qr/not written/, 'and says its rows were not written');

my $new_writer = wait_for_writer($node, $writer);
isnt($new_writer, $writer, 'the worker restarted with a new pid');
$writer = $new_writer;
$node->safe_psql('postgres', "INSERT INTO items VALUES ('after-sigterm', 1)");
is(count_like('after-sigterm'), '1', 'the restarted worker commits');
is(count_like('sigterm-queued'), '0', 'the failed commit left no rows');

# ---- a commit made while no worker runs waits for the restarted one ----

# The postmaster restarts the worker a second after it stopped; a commit in
# that second waits for it instead of failing.
kill 'TERM', $writer;
$node->poll_query_until('postgres',
	"SELECT pid IS NULL FROM ctxstore.workers WHERE kind = 'writer'")
  or die 'the ctxstore writer did not stop';
(undef, $err) = timed_psql("INSERT INTO items VALUES ('while-restarting', 1)");
is($err, '', 'a commit made while the worker restarts does not fail');
is(count_like('while-restarting'), '1', 'and its row is stored');
$writer = wait_for_writer($node, $writer);

# ---- giving up on a request the worker has taken ----

# 20 ms is far shorter than writing a million rows takes, so the worker has
# usually taken the request when the backend gives up: the outcome is then
# unknown, the slot stays the worker's until it finishes, and the session's
# next commit waits for that.  (If the worker was slow to take it, it is
# withdrawn instead.)  Either way the big insert is all there or not at all.
my $bg_big = $node->background_psql('postgres', on_error_stop => 0);
$bg_big->query(q{
SET ctxstore.commit_timeout = 20;
INSERT INTO items SELECT 'abandoned-' || i, i FROM generate_series(1, 1000000) i;
});
$err = $bg_big->{stderr};
like($err, qr/ctxstore\.commit_timeout/, 'a commit the writer is slow to finish times out');
like($err, qr/may or may not have been written|were not written/,
	'the error says whether the rows may have been written');
$bg_big->{stderr} = '';
$bg_big->query_safe(q{
SET ctxstore.commit_timeout = '1min';
INSERT INTO items VALUES ('after-abandon', 1);
});
is(count_like('after-abandon'), '1', 'the next commit of the session succeeds');
like(count_like('abandoned-%'), qr/^(0|1000000)$/,
	'the abandoned transaction is written completely or not at all');
note('abandoned rows stored: ' . count_like('abandoned-%'));
$bg_big->quit;

# ---- SIGKILL while sessions commit: acknowledged rows survive ----

my $nsessions = 4;
my $per_session = 3000;
my (@runs, @outs);
for my $s (1 .. $nsessions)
{
	# Files, not scalars: IPC::Run only moves scalar data while pumped.
	my $script = $node->basedir . "/crash_$s.sql";
	my $out = $node->basedir . "/crash_$s.out";
	PostgreSQL::Test::Utils::append_to_file($script,
		join('',
			map { "INSERT INTO items VALUES ('crash-$s-$_', $_) RETURNING id;\n" }
			  1 .. $per_session));
	push @outs, $out;
	push @runs,
	  IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', $out, '2>', "$out.err",
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
}
$node->poll_query_until('postgres',
	"SELECT count(*) >= 200 FROM items WHERE id LIKE 'crash-%'")
  or die 'the sessions never committed';
# Their batches are in the request ring, which the crash restart rebuilds.
cmp_ok(
	$node->safe_psql('postgres',
		"SELECT ring_batches FROM ctxstore.workers WHERE kind = 'writer'"),
	'>', 0, 'the sessions hand their commits over through the request ring');
kill 'KILL', $writer;
my $t0 = time;
$_->finish for @runs;    # dies on timeout: a hung session fails the test
cmp_ok(time - $t0, '<', 60, 'every session ended after the worker was killed');

my %acked;
for my $out (@outs)
{
	$acked{$_} = 1
	  for grep { /^crash-/ } split /\n/, PostgreSQL::Test::Utils::slurp_file($out);
}
cmp_ok(scalar(keys %acked), '>', 0, 'some commits were acknowledged before the crash');
diag(scalar(keys %acked) . ' commits were acknowledged before the crash');

$writer = wait_for_writer($node);
my %stored;
my $dups = 0;
for my $id (split /\n/,
	$node->safe_psql('postgres', "SELECT id FROM items WHERE id LIKE 'crash-%'"))
{
	$dups++ if $stored{$id}++;
}
is($dups, 0, 'no row is stored twice');
my @lost = grep { !$stored{$_} } keys %acked;
is(scalar(@lost), 0, 'every acknowledged row survived the crash')
  or diag("lost: @lost[0 .. (@lost > 10 ? 9 : $#lost)]");

$node->safe_psql('postgres', "INSERT INTO items VALUES ('after-crash', 1)");
is(count_like('after-crash'), '1', 'commits work after the crash');

$node->stop;

# ---- no writer at all: a commit waits for one, boundedly, then fails ----

# With no background worker slots the postmaster never starts the writer.
my $bare = PostgreSQL::Test::Cluster->new('no_worker_slots');
$bare->init;
$bare->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_worker_processes = 0
});
$bare->start;
$bare->safe_psql('postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE items (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri 'file://$root/writer_failures_no_worker');
});

($elapsed, $err) = timed_psql("INSERT INTO items VALUES ('no-writer', 1)", $bare);
like($err, qr/ctxstore writer worker is not running/,
	'a commit with no writer to wait for fails with a clear error');
like($err, qr/not written/, 'and says its rows were not written');
cmp_ok($elapsed, '>=', 4.9, 'it first waited the 5 s a starting writer may take');
cmp_ok($elapsed, '<', 30, 'and no longer than that');

($elapsed, $err) = timed_psql(
	"SET ctxstore.commit_timeout = 300; INSERT INTO items VALUES ('no-writer', 2)", $bare);
like($err, qr/ctxstore writer worker is not running/,
	'ctxstore.commit_timeout shortens the wait for a writer');
cmp_ok($elapsed, '<', 4.5, 'to the commit timeout');
$bare->stop;
done_testing();
