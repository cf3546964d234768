# Two clusters, each with its own shard (the default ctxstore.shard_id differs
# by system identifier), write one store (docs/INVARIANTS.md, invariant 11):
#   - the first INSERTs of both into a new, empty store at the same moment
#     both succeed (a lost race for base version 1 rebases, never fails);
#   - under sustained concurrent inserts, with both shards merging into the
#     one base table, every acknowledged row is read exactly once from
#     either cluster, before and after the final merges;
#   - a key written by both: the later commit wins, in both clusters.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $a = memwal_node('two_a');
my $b = memwal_node('two_b');
my @nodes = ($a, $b);

my $shard_a = $a->safe_psql('postgres', 'SHOW ctxstore.shard_id');
my $shard_b = $b->safe_psql('postgres', 'SHOW ctxstore.shard_id');
isnt($shard_a, $shard_b, 'two clusters on one host get distinct shard ids');

sub create_table
{
	my ($name, $options) = @_;
	$_->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $name (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri("two_$name") ]}', $options);
}) for @nodes;
	return;
}

# ---- the first-writer race, on several new stores ----

my $races = 5;
my $both_ok = 0;
for my $i (1 .. $races)
{
	create_table("race$i", "unique_key 'false'");
	# Connected first, so that both INSERTs leave at once.
	my @sessions = map { $_->background_psql('postgres', on_error_stop => 0) } @nodes;
	for my $s (0 .. 1)
	{
		$sessions[$s]->query_until(qr/sent/,
			"\\echo sent\nINSERT INTO race$i VALUES ('first-$s', $s);\n");
	}
	my $errors = '';
	for my $session (@sessions)
	{
		$session->query('SELECT 1');
		$errors .= $session->{stderr};
		$session->quit;
	}
	my $rows = $a->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM race$i");
	$both_ok++ if $errors eq '' && $rows eq 'first-0,first-1';
	diag("race $i: $errors") if $errors ne '';
}
is($both_ok, $races, 'both first writers of a new store succeed, every time');

# ---- sustained inserts from both clusters, both shards merging ----

create_table('shared', "unique_key 'false', merge_after_generations '2'");
my @clients = map { start_clients($nodes[$_], 'shared', "c-$_", 3, 300) } 0 .. 1;
my %acked = map { %{ finish_clients($_) } } @clients;
cmp_ok(scalar(keys %acked), '==', 2 * 3 * 300, 'every insert of both clusters was acknowledged');
check_exactly_once($a, 'shared', 'c', \%acked, 'read from cluster A');
check_exactly_once($b, 'shared', 'c', \%acked, 'read from cluster B');
$_->safe_psql('postgres', "SELECT ctxstore.merge_wal('shared')") for @nodes;
is($a->safe_psql('postgres', 'SELECT ctxstore.pending_wal_generations(\'shared\')')
	  . $b->safe_psql('postgres', 'SELECT ctxstore.pending_wal_generations(\'shared\')'),
	'00', 'both shards merged everything');
check_exactly_once($a, 'shared', 'c', \%acked, 'read from cluster A after merging');
check_exactly_once($b, 'shared', 'c', \%acked, 'read from cluster B after merging');

# ---- one key, two clusters: the later commit wins ----

create_table('keyed', "merge_after_generations '0'");
$a->safe_psql('postgres', "INSERT INTO keyed VALUES ('k', 1)");
$b->safe_psql('postgres', "INSERT INTO keyed VALUES ('k', 2)");
is($_->safe_psql('postgres', 'SELECT n FROM keyed'), '2',
	'the later commit of a key wins across clusters') for @nodes;
# Merging the older version after the newer one changes nothing.
$b->safe_psql('postgres', "SELECT ctxstore.merge_wal('keyed')");
$a->safe_psql('postgres', "SELECT ctxstore.merge_wal('keyed')");
is($_->safe_psql('postgres', 'SELECT string_agg(n::text, \',\') FROM keyed'), '2',
	'and still wins once both shards merged, in either order') for @nodes;

$_->stop for @nodes;
done_testing();
