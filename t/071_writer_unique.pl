# The writer worker's checks at COMMIT (docs/design/memwal.md, "Resolving
# requests"):
#
# - 8 sessions racing to insert one new key: exactly one commits, the other
#   7 fail with 23505 and the key in DETAIL.  The writer is stopped while
#   they queue, so all 8 land in one group commit and are resolved one after
#   the other inside it; then 8 more race without the stop.
# - kill -9 of the writer worker while sessions UPDATE and DELETE committed
#   rows: every acknowledged change is there exactly once, and no
#   acknowledged DELETE comes back (not after the restart, not after a merge).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use CxStores qw(writer_pid wait_for_writer);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('writer_unique');
my $uri = store_uri('writer_unique_race');
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE race (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', seal_on_insert 'true');
});

# A session whose statement $sql was sent; with $wait, one that is now
# waiting for the (stopped) writer.
sub start_statement
{
	my ($sql, $wait) = @_;
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	$bg->query_until(qr/started/, "\\echo started\n$sql;\n");
	if ($wait)
	{
		$node->poll_query_until('postgres',
			"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid")
		  or die 'the INSERT never waited for the writer';
	}
	return $bg;
}

# Lets each session finish; returns their stderr texts.
sub finish_sessions
{
	my @err;
	for my $bg (@_)
	{
		$bg->query('SELECT 1');
		push @err, $bg->{stderr};
		$bg->quit;
	}
	return @err;
}

# Eight sessions insert key $id; checks that one committed.
sub race
{
	my ($id, $stop) = @_;
	my $writer = writer_pid($node);
	kill 'STOP', $writer if $stop;
	my @sessions =
	  map { start_statement("INSERT INTO race VALUES ('$id', $_)", $stop) } 1 .. 8;
	kill 'CONT', $writer if $stop;
	my @err = finish_sessions(@sessions);
	my $lost = grep { /duplicate key value violates the unique key/ } @err;
	my $detail = grep { /DETAIL:  Key \(id\)=\(\Q$id\E\) already exists\./ } @err;
	is($lost, 7, "$id: 7 of 8 racing sessions fail with a unique violation");
	is($detail, 7, "$id: each names the key in DETAIL");
	is(scalar(grep { $_ eq '' } @err), 1, "$id: one session commits cleanly");
	is($node->safe_psql('postgres', "SELECT count(*) FROM race WHERE id = '$id'"),
		'1', "$id: exactly one row holds the key");
	return;
}

race('one-group', 1);
race('free-race', 0);

# The SQLSTATE itself, and a deleted key may come back.
my ($rc, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO race VALUES ('one-group', 9);");
like($err, qr/ERROR:  23505:/, 'a unique violation is SQLSTATE 23505');
$node->safe_psql('postgres', "DELETE FROM race WHERE id = 'one-group'");
$node->safe_psql('postgres', "INSERT INTO race VALUES ('one-group', 10)");
is($node->safe_psql('postgres', "SELECT n FROM race WHERE id = 'one-group'"),
	'10', 'a deleted key can be inserted again');

# One group commit holding a request the store refuses and one it takes:
# two tables with different columns on a new store (the backend cannot
# tell yet), queued while the writer is stopped.  The first sets the
# store's schema; the second fails alone, the first is written.
my $muri = store_uri('writer_unique_mixed');
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE mixed_good (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$muri');
CREATE FOREIGN TABLE mixed_bad (id text NOT NULL, s text) SERVER lake
  OPTIONS (uri '$muri');
});
{
	my $writer = writer_pid($node);
	kill 'STOP', $writer;
	my @sessions = (
		start_statement("INSERT INTO mixed_good VALUES ('good', 1)", 1),
		start_statement("INSERT INTO mixed_bad VALUES ('bad', 'x')", 1));
	kill 'CONT', $writer;
	my ($good_err, $bad_err) = finish_sessions(@sessions);
	is($good_err, '', 'a request grouped with a refused one commits');
	like($bad_err, qr/schema mismatch/, 'the refused request fails alone');
	is($node->safe_psql('postgres', "SELECT count(*) FROM mixed_good"),
		'1', 'the grouped request is written');
}

# ---- kill -9 of the writer during UPDATE and DELETE commits ----

my $nrows = 400;
for my $seal ('true', 'false')
{
	my $table = "kd_$seal";
	my $kuri = store_uri("writer_unique_$table");
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $table (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$kuri', seal_on_insert '$seal', merge_after_generations '4',
           flush_interval '1s');
INSERT INTO $table SELECT 'r-' || i, 0 FROM generate_series(1, $nrows) i;
SELECT ctxstore.flush('$table');
});
}

# Four sessions; session c changes the rows r-i with i % 4 = c - 1: an UPDATE
# (n = i) for even i, a DELETE for odd i, printing "ack upd|del <id>" after
# each change that committed.
sub start_changers
{
	my ($table) = @_;
	my @scripts;
	for my $c (1 .. 4)
	{
		my $script = '';
		for (my $i = $c; $i <= $nrows; $i += 4)
		{
			my ($sql, $what) = $i % 2 == 0
			  ? ("UPDATE $table SET n = $i WHERE id = 'r-$i'", 'upd')
			  : ("DELETE FROM $table WHERE id = 'r-$i'", 'del');
			$script .= acked_statement($sql, "$what r-$i");
		}
		push @scripts, $script;
	}
	return start_scripts($node, $table, \@scripts);
}

sub acked_changes
{
	my ($clients) = @_;
	my %acked;
	for my $c (@$clients)
	{
		next unless -e $c->{out};
		my @acks = PostgreSQL::Test::Utils::slurp_file($c->{out}) =~ /^ack (upd|del) (\S+)$/mg;
		while (my ($what, $id) = splice(@acks, 0, 2))
		{
			$acked{$id} = $what;
		}
	}
	return \%acked;
}

# Every acknowledged change is there, once; no row is stored twice.
sub check_changes
{
	my ($table, $acked, $what) = @_;
	my %stored;
	for (split /\n/, $node->safe_psql('postgres', "SELECT id, n FROM $table"))
	{
		my ($id, $n) = split /\|/;
		push @{ $stored{$id} }, $n;
	}
	my @dups = grep { @{ $stored{$_} } > 1 } keys %stored;
	my @back = grep { $acked->{$_} eq 'del' && $stored{$_} } keys %$acked;
	my @lost = grep {
		$acked->{$_} eq 'upd'
		  && !($stored{$_} && $stored{$_}[0] eq substr($_, 2))
	} keys %$acked;
	is(scalar(@dups), 0, "$what: no row is stored twice")
	  or diag('twice: ' . join(' ', (sort @dups)[ 0 .. ($#dups < 9 ? $#dups : 9) ]));
	is(scalar(@back), 0, "$what: no acknowledged DELETE came back")
	  or diag('back: ' . join(' ', (sort @back)[ 0 .. ($#back < 9 ? $#back : 9) ]));
	is(scalar(@lost), 0, "$what: every acknowledged UPDATE is there")
	  or diag('lost: ' . join(' ', (sort @lost)[ 0 .. ($#lost < 9 ? $#lost : 9) ]));
	return;
}

for my $seal ('true', 'false')
{
	my $table = "kd_$seal";
	my $clients = start_changers($table);
	ok(wait_until(sub { keys %{ acked_changes($clients) } >= 40 }),
		"$table: changes commit before the kill");
	is(kill('KILL', writer_pid($node)), 1, "$table: the writer was killed");
	my $hung = 0;
	for my $c (@$clients)
	{
		eval { $c->{run}->finish; };
		next unless $@;
		$hung++;
		$c->{run}->kill_kill;
	}
	is($hung, 0, "$table: every session ended in bounded time");
	my $acked = acked_changes($clients);
	cmp_ok(scalar(keys %$acked), '>', 40, "$table: changes were acknowledged");
	wait_for_writer($node);
	$node->safe_psql('postgres', "SELECT ctxstore.flush('$table')");
	check_changes($table, $acked, "$table after the restart");
	$node->safe_psql('postgres', "SELECT ctxstore.merge_wal('$table')");
	check_changes($table, $acked, "$table after a merge");
	note("$table: " . scalar(keys %$acked) . ' changes acknowledged');
}

done_testing();
