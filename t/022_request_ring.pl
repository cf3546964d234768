# The request ring: a commit's rows reach the writer through a ring in the
# main shared memory segment when they fit, through a DSM segment of their
# own when they do not (larger than a sixteenth of the ring) or when the
# ring is full; a full ring never makes a commit wait; and a commit the
# backend gives up on while the writer holds its batch leaves the ring
# whole (its chunk is freed once, by the writer).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/request_ring";

# The smallest ring: a batch of at most 4 kB goes through it, about
# seventeen rows of 2.5 kB (batches of nearly 4 kB) fill it.
my $node = PostgreSQL::Test::Cluster->new('request_ring');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 60
ctxstore.request_ring_size = '64kB'
});
$node->start;
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE items (id text NOT NULL, payload text)
	SERVER lake OPTIONS (uri '$uri');
});

sub sql { return $node->safe_psql('postgres', @_); }

# (ring batches, DSM batches) the writer has taken so far.
sub batches
{
	return split /\|/,
	  sql("SELECT ring_batches, dsm_batches FROM ctxstore.workers WHERE kind = 'writer'");
}

sub writer_pid
{
	return sql("SELECT pid FROM ctxstore.workers WHERE kind = 'writer'");
}

is(sql("SHOW ctxstore.request_ring_size"), '64kB', 'the ring has the size configured');

# ---- small commits go through the ring, a large one through DSM ----

my ($ring0, $dsm0) = batches();
sql("INSERT INTO items VALUES ('small-$_', 'x')") for 1 .. 5;
my ($ring1, $dsm1) = batches();
is($ring1 - $ring0, 5, 'five single-row commits went through the ring');
is($dsm1 - $dsm0, 0, 'and none through a DSM segment');

sql("INSERT INTO items SELECT 'big-' || i, repeat('y', 200) FROM generate_series(1, 1000) i");
my ($ring2, $dsm2) = batches();
is($dsm2 - $dsm1, 1, 'a commit larger than the ring went through a DSM segment');
is(sql("SELECT count(*) FROM items WHERE id LIKE 'big-%'"), '1000',
	'and all its rows were written');

# ---- a full ring: commits fall back to DSM, none waits for space ----

my $writer = writer_pid();
kill 'STOP', $writer;
my $nsessions = 30;
my @runs;
for my $s (1 .. $nsessions)
{
	push @runs,
	  IPC::Run::start(
		[
			'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
			"INSERT INTO items VALUES ('full-$s', repeat('z', 1500))"
		],
		'>', \my $out, '2>', \my $err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
}
# Every commit is handed over while the writer cannot take any: the ring
# fills and the rest find it full.
my $waiting = $node->poll_query_until('postgres',
	"SELECT count(*) = $nsessions FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE 'INSERT INTO items%'");
kill 'CONT', $writer;
ok($waiting, "all $nsessions commits were handed over although the ring was full");
my $t0 = time;
$_->finish for @runs;    # dies on timeout: a hung session fails the test
cmp_ok(time - $t0, '<', 60, 'every session ended');
is(sql("SELECT count(*) FROM items WHERE id LIKE 'full-%'"), "$nsessions",
	'every commit was written');
my ($ring3, $dsm3) = batches();
cmp_ok($ring3 - $ring2, '>', 0, 'some went through the ring');
cmp_ok($dsm3 - $dsm2, '>', 0, 'the ones that found it full through DSM segments');
note(sprintf('%d through the ring, %d through DSM', $ring3 - $ring2, $dsm3 - $dsm2));

# ---- a commit abandoned while the writer holds its ring batch ----

# The writer takes the batch, then sleeps after the seal: the backend gives
# up (commit_timeout) while the writer still reads its chunk.  The writer
# frees the chunk when it is done; had the chunk leaked, the ring's tail
# would stop there and, within a ring's worth of commits, every commit
# would go through DSM.
sql("ALTER SYSTEM SET ctxstore.failpoints = 'seal.after_commit=delay:1500\@1'");
sql('SELECT pg_reload_conf()');
$node->poll_query_until('postgres', q{SELECT current_setting('ctxstore.failpoints') <> ''})
  or die 'the failpoint was not set';
usleep(300_000);    # the writer applies the reload at the top of its loop
my ($rc, $out, $err) = $node->psql('postgres',
	"SET ctxstore.commit_timeout = 300; INSERT INTO items VALUES ('abandoned', repeat('a', 1500))");
like($err, qr/may or may not have been written/,
	'the backend gave up on a batch the writer had taken');
sql('ALTER SYSTEM RESET ctxstore.failpoints');
sql('SELECT pg_reload_conf()');
sleep 2;    # the writer finishes the abandoned commit

my ($ring4, $dsm4) = batches();
my $n = 60;
sql("INSERT INTO items VALUES ('after-$_', repeat('b', 1500))") for 1 .. $n;
my ($ring5, $dsm5) = batches();
is($ring5 - $ring4, $n, "the next $n commits (three rings' worth) all went through the ring");
is($dsm5 - $dsm4, 0, 'none needed a DSM segment');
is(sql("SELECT count(*) FROM items WHERE id LIKE 'after-%'"), "$n", 'and all were written');

$node->stop;
done_testing();
