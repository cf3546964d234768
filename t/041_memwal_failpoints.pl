# kill -9 at each step of the MemWAL protocol (storage/util/cx_failpoint.h;
# docs/design/memwal.md, "Crash cases"): the cluster is started with CTXSTORE_FAILPOINTS
# so that a worker dies by SIGKILL right after that step, while four
# sessions insert single-row transactions; then it is restarted without
# failpoints.  Every acknowledged row is stored exactly once, and stays so
# after the next merge.
#
# Claim steps run when the restarted writer first opens the store, so their
# cases first leave acknowledged rows in the WAL only (seal_on_insert off,
# then the whole cluster killed), which the crashing claim and the next one
# must replay once.
#
# Reads de-duplicate by key whatever unique_key says, so a duplicate shows
# once here; the stored generations are checked for duplicates by the unit
# tests (sw_crash_before_seal_replays_exactly_once).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('memwal_failpoints');

# What reaches each failpoint: the table's write options.
my %kinds = (
	deferred => "seal_on_insert 'false', merge_after_generations '0'",
	sealed => "seal_on_insert 'true', merge_after_generations '0'",
	merging => "seal_on_insert 'true', merge_after_generations '2'",
	# Drains of merges nobody waits for wait a quiet second (seals leave
	# merged generations out meanwhile), so under these inserts a drain
	# comes from a merge_wal() session alongside, answered after its drain.
	draining => "seal_on_insert 'true', merge_after_generations '0'",
	claim => "seal_on_insert 'false', merge_after_generations '0'",);

my @cases = (
	[ 'append.after_wal', 'deferred' ],
	[ 'seal.after_fragment', 'sealed' ],
	[ 'seal.after_commit', 'sealed' ],
	[ 'merge.after_upload', 'merging' ],
	[ 'merge.after_commit', 'merging' ],
	[ 'drain.before_commit', 'draining' ],
	[ 'drain.after_commit', 'draining' ],
	[ 'claim.after_register', 'claim' ],
	[ 'claim.after_commit', 'claim' ],
	[ 'claim.after_fence', 'claim' ],
	[ 'claim.after_replay', 'claim' ],);

# Waits for a process of the cluster to die by SIGKILL after log offset.
sub wait_for_kill
{
	my ($offset) = @_;
	return wait_until(
		sub {
			substr(slurp_file($node->logfile), $offset) =~ /terminated by signal 9/;
		});
}

for my $case (@cases)
{
	my ($failpoint, $kind) = @$case;
	my $table = 'fp_' . ($failpoint =~ tr/./_/r);
	my %acked;

	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $table (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri("memwal_fp_$table") ]}', unique_key 'false',
           $kinds{$kind}, flush_interval '1h', cleanup_interval '0');
});
	if ($kind eq 'claim')
	{
		my $pre = start_clients($node, $table, "$table-pre", 2, 100);
		%acked = %{ finish_clients($pre) };
		kill9_cluster($node);    # no seal at shutdown: rows only in the WAL
	}
	else
	{
		$node->stop;
	}

	{
		# Claims happen once per process: crash at the first one.
		local $ENV{CTXSTORE_FAILPOINTS} =
		  $failpoint . ($kind eq 'claim' ? '=crash' : '=crash@3');
		$node->start;
	}
	my $offset = -s $node->logfile;
	my $clients = start_clients($node, $table, $table, 4, 500);
	push @$clients,
	  @{ start_scripts($node, "$table-merges",
			[ "SELECT ctxstore.merge_wal('$table');\n" x 50 ]) }
	  if $kind eq 'draining';
	ok(wait_for_kill($offset), "$failpoint: a worker was killed there");
	%acked = (%acked, %{ finish_clients($clients) });

	$node->stop('immediate');
	$node->start;
	$node->safe_psql('postgres', "SELECT ctxstore.flush('$table')");
	check_exactly_once($node, $table, $table, \%acked, $failpoint);
	$node->safe_psql('postgres', "SELECT ctxstore.merge_wal('$table')");
	check_exactly_once($node, $table, $table, \%acked, "$failpoint, merged");
}

$node->stop;
done_testing();
