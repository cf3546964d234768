# Compaction's lease and its failures, on file:// stores
# (docs/design/maintenance.md, "Compaction"):
#   - a live lease of another holder planted in the store: ctxstore.compact
#     fails with 55P03 naming the holder; an expired one is taken over;
#   - pg_cancel_backend of a compaction held at a failpoint delay: 57014,
#     the store unchanged, and the next compaction converges;
#   - two clusters (distinct shard ids) compacting one store at once: one
#     wins, the other gets a clean 55P03, every row stays;
#   - the maintenance worker's timed compaction shows its phase and
#     progress in ctxstore.workers while it runs;
#   - kill -9 of the maintenance worker at each compaction failpoint
#     (storage/util/cx_failpoint.h): the store stays readable with every row,
#     and once the dead holder's lease expires (60 s, waited for once for
#     all three) the next compaction converges.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $a = memwal_node('compact_a');
my $b = memwal_node('compact_b');
isnt($a->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	$b->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	'the two clusters have distinct shard ids');

my %dir;    # table => store directory

# A table of $node on store $name (created on first use), other options %opt.
sub create_table
{
	my ($node, $t, %opt) = @_;
	my $uri = store_uri("compact_$t");
	my $opts = join('', map { ", $_ '$opt{$_}'" } sort keys %opt);
	($dir{$t} = $uri) =~ s{^file://}{};
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $t (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0'$opts)});
	return;
}

# $rounds merges of five rows each: one small base fragment each.
sub add_fragments
{
	my ($node, $t, $rounds) = @_;
	for my $r (1 .. $rounds)
	{
		my $from = $node->safe_psql('postgres',
			"SELECT coalesce(max(substr(id, 2)::int), 0) + 1 FROM $t");
		$node->safe_psql('postgres', qq{
INSERT INTO $t SELECT 'k' || g, g FROM generate_series($from, $from + 4) g;
SELECT ctxstore.merge_wal('$t')});
	}
	return;
}

# What must not change: rows, fragments, base versions.
sub state_of
{
	my ($node, $t) = @_;
	return $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) || '/' || sum(n) || '/' || count(DISTINCT id) FROM $t),
       (SELECT count(*) FROM ctxstore.fragments('$t')),
       (SELECT count(*) FROM ctxstore.versions('$t'))});
}

sub rows_of
{
	my ($node, $t) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || '/' || sum(n) || '/' || count(DISTINCT id) FROM $t");
}

sub fragments_of
{
	my ($node, $t) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM ctxstore.fragments('$t')");
}

# ctxstore.compact(t) on $node: (sqlstate or '', stdout, stderr).
sub compact
{
	my ($node, $t) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT ctxstore.compact('$t')->>'compacted'");
	my ($state) = $err =~ /ERROR:  (\w{5}):/;
	return ($rc == 0 ? '' : $state // '?', $out, $err);
}

sub lease_text
{
	my ($holder, $expires_in_s) = @_;
	my $now = int(time * 1e6);
	return "ctxstore compaction lease\nholder $holder\nsince $now\nexpires "
	  . ($now + int($expires_in_s * 1e6)) . "\n";
}

sub plant_lease
{
	my ($t, $text) = @_;
	mkdir "$dir{$t}/_compaction";
	open(my $fh, '>', "$dir{$t}/_compaction/lease") or die "lease: $!";
	print $fh $text;
	close $fh;
	return;
}

# ---- a lease of another holder ----

create_table($a, 'leased');
add_fragments($a, 'leased', 3);
my $before = state_of($a, 'leased');
plant_lease('leased', lease_text('shard elsewhere, pid 4242', 3600));
my ($state, $out, $err) = compact($a, 'leased');
is($state, '55P03', 'a live lease of another holder: 55P03');
like($err, qr/shard elsewhere, pid 4242/, 'the error names the holder');
like($err, qr/since \d{4}-\d\d-\d\d/, 'and since when');
is(state_of($a, 'leased'), $before, 'the store is unchanged');
plant_lease('leased', lease_text('shard elsewhere, pid 4242', -10));
($state, $out) = compact($a, 'leased');
is("$state|$out", '|true', 'an expired lease is taken over');
is(fragments_of($a, 'leased'), '1', 'and the store compacted');
ok(!-e "$dir{leased}/_compaction/lease", 'the lease is released after the job');

# ---- a compaction held at a failpoint, canceled ----

# A session of $node whose compaction of $t is held $ms at
# compact.after_lease; returns it and its pid once the lease is taken.
sub start_held_compaction
{
	my ($node, $t, $ms) = @_;
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe(
		"SET ctxstore.failpoints = 'compact.after_lease=delay:$ms'; SELECT pg_backend_pid()");
	$bg->query_until(qr/started/,
		"\\echo started\nSELECT ctxstore.compact('$t')->>'compacted';\n");
	wait_until(sub { -e "$dir{$t}/_compaction/lease" })
	  or die "the compaction of $t never took its lease";
	return ($bg, $pid);
}

# Lets a held session finish; returns its stdout and stderr.
sub finish_session
{
	my ($bg) = @_;
	my $out = $bg->query('');
	my $err = $bg->{stderr};
	$bg->quit;
	return ($out, $err);
}

create_table($a, 'canceled');
add_fragments($a, 'canceled', 3);
$before = state_of($a, 'canceled');
my ($bg, $pid) = start_held_compaction($a, 'canceled', 3000);
$a->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
(undef, $err) = finish_session($bg);
like($err, qr/canceling statement due to user request/, 'pg_cancel_backend ends the compaction: 57014');
is(state_of($a, 'canceled'), $before, 'the store is unchanged and readable');
ok(!-e "$dir{canceled}/_compaction/lease", 'the canceled job released its lease');
($state, $out) = compact($a, 'canceled');
is("$state|$out", '|true', 'the next compaction converges');
is(fragments_of($a, 'canceled'), '1', 'into one fragment');
is(rows_of($a, 'canceled'), '15/120/15', 'every row once');

# ---- two clusters compacting one store ----

create_table($_, 'shared') for $a, $b;
add_fragments($a, 'shared', 2);
add_fragments($b, 'shared', 2);
my $rows = rows_of($a, 'shared');
is(rows_of($b, 'shared'), $rows, 'both clusters read the same rows');
($bg) = start_held_compaction($a, 'shared', 3000);
($state, $out, $err) = compact($b, 'shared');
is($state, '55P03', 'the second cluster gets a clean 55P03 while the first compacts');
my $shard_a = $a->safe_psql('postgres', 'SHOW ctxstore.shard_id');
like($err, qr/shard \Q$shard_a\E, pid/, 'naming the first cluster as the holder');
($out, $err) = finish_session($bg);
is("$out|$err", 'true|', 'the first cluster wins');
is(fragments_of($b, 'shared'), '1', 'one fragment, seen from either cluster');
is(rows_of($_, 'shared'), $rows, 'every row once, read from ' . $_->name) for $a, $b;
($state, $out) = compact($b, 'shared');
is("$state|$out", '|false', 'the second cluster then finds nothing to do');

# ---- the worker's compaction in ctxstore.workers ----

# compact_interval's timed compaction (compact_on_merge off: after a merge
# job the worker would compact these tiers before the interval).
create_table($a, 'shown', compact_min_fragments => '2', compact_on_merge => 'false');
add_fragments($a, 'shown', 3);
$a->stop;
{
	local $ENV{CTXSTORE_FAILPOINTS} = 'compact.after_outputs=delay:4000';
	$a->start;
}
$a->safe_psql('postgres', "ALTER FOREIGN TABLE shown OPTIONS (ADD compact_interval '1s')");
add_fragments($a, 'shown', 1);
my $progress = q{SELECT phase || ' ' || progress_done || '/' || progress_total
  FROM ctxstore.workers WHERE kind = 'maintenance'};
ok( $a->poll_query_until('postgres', $progress, 'writing 1/1'),
	'ctxstore.workers shows the running compaction: writing, one output of one');
ok( $a->poll_query_until('postgres',
		"SELECT ($progress) IS NULL AND ctxstore.stats('shown') #>> '{compaction,outcome}' = 'compacted'"),
	'and no phase once it compacted');
is(fragments_of($a, 'shown'), '1', 'the worker compacted the store');
is(rows_of($a, 'shown'), '20/210/20', 'every row once');

# ---- kill -9 of the maintenance worker at each failpoint ----

my @failpoints = qw(compact.after_lease compact.after_outputs compact.after_commit);
my %killed;    # the tables of these scenarios
for my $fp (@failpoints)
{
	my $t = 'killed_' . ($fp =~ s/^compact\.//r);
	create_table($a, $t, compact_min_fragments => '2', compact_on_merge => 'false');
	add_fragments($a, $t, 3);
	$killed{$t} = 1;

	$a->stop;
	{
		local $ENV{CTXSTORE_FAILPOINTS} = "$fp=crash";
		$a->start;
	}
	my $offset = -s $a->logfile;
	# The next merge job tells the worker compact_interval: it compacts a
	# second later.
	$a->safe_psql('postgres', "ALTER FOREIGN TABLE $t OPTIONS (ADD compact_interval '1s')");
	add_fragments($a, $t, 1);
	ok( wait_until(sub { substr(slurp_file($a->logfile), $offset) =~ /terminated by signal 9/ }),
		"$fp: the maintenance worker was killed there");
	$a->stop('immediate');
	$a->start;
	$a->safe_psql('postgres', "ALTER FOREIGN TABLE $t OPTIONS (SET compact_interval '0')");
	is(rows_of($a, $t), '20/210/20', "$fp: the store is readable, every row once");
	is(fragments_of($a, $t), $fp eq 'compact.after_commit' ? '1' : '4',
		"$fp: " . ($fp eq 'compact.after_commit' ? 'the compaction stands' : 'nothing was committed'));
	my ($s, $o, $e) = compact($a, $t);
	if ($fp eq 'compact.after_commit')
	{
		# One fragment is left: nothing to do, found without the lease.
		is("$s|$o", '|false', "$fp: the next compaction finds nothing to do");
		next;
	}
	is($s, '55P03', "$fp: the dead worker's lease refuses the next compaction");
	like($e, qr/for \d+ more seconds/, "$fp: until it expires");
}

# The dead worker's lease, if it left one, expires on its own: the next
# compaction of each store is refused with 55P03 until then.
my %converged;
ok( wait_until(
		sub {
			for my $t (keys %killed)
			{
				next if $converged{$t};
				my ($s, $o) = compact($a, $t);
				die "compacting $t: $s" unless $s eq '' || $s eq '55P03';
				$converged{$t} = 1 if $s eq '';
			}
			return 1 if keys %converged == keys %killed;
			sleep 1;
			return 0;
		},
		150),
	'after the lease expired every store compacts again');
for my $t (sort keys %killed)
{
	is(fragments_of($a, $t), '1', "$t: converged into one fragment");
	is(rows_of($a, $t), '20/210/20', "$t: every row once");
	is($a->safe_psql('postgres', "SELECT n FROM $t WHERE id = 'k7'"), '7',
		"$t: a key lookup after compaction");
}

$_->stop for $a, $b;
done_testing();
