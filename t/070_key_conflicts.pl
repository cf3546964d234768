# Cross-cluster key conflicts (docs/design/merge.md, "Key conflicts"): two
# clusters with distinct ctxstore.shard_id write one key of one store.  At
# commit uniqueness is checked per shard only, so both inserts succeed and
# the later commit wins; the merge that finds the other shard's base row of
# the key counts it in ctxstore.stats (merge.key_conflicts) and logs one
# line per merge, with the count and the key.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $a = memwal_node('conflict_a');
my $b = memwal_node('conflict_b');
my @nodes = ($a, $b);

isnt($a->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	$b->safe_psql('postgres', 'SHOW ctxstore.shard_id'),
	'the two clusters have distinct shard ids');

# Merges only when asked (ctxstore.merge_wal), so that the test decides
# which shard merges first.
$_->safe_psql('postgres', qq{
CREATE FOREIGN TABLE conflicts (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri('key_conflicts') ]}', merge_after_generations '0');
}) for @nodes;

sub conflicts_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT ctxstore.stats('conflicts') #>> '{merge,key_conflicts}'");
}

my $line = qr/merge of shard \S+ of store "[^"]*" found 1 keys also written by another shard, for example k\b/;

# How many conflict lines each log gained since the offsets in %$from.
sub new_lines
{
	my ($from) = @_;
	return map {
		my $log = substr(slurp_file($_->logfile), $from->{$_->name});
		scalar(() = $log =~ /$line/g);
	} @nodes;
}

sub log_offsets
{
	return { map { ($_->name => -s $_->logfile) } @nodes };
}

my $offsets = log_offsets();
$a->safe_psql('postgres', "INSERT INTO conflicts VALUES ('k', 1)");
$b->safe_psql('postgres', "INSERT INTO conflicts VALUES ('k', 2)");
$a->safe_psql('postgres', "SELECT ctxstore.merge_wal('conflicts')");
$b->safe_psql('postgres', "SELECT ctxstore.merge_wal('conflicts')");
is($_->safe_psql('postgres', "SELECT string_agg(n::text, ',') FROM conflicts"),
	'2', 'one row visible, the later commit, on ' . $_->name) for @nodes;
is(conflicts_of($a), '0', 'the first merge (A) found no base row of another shard');
cmp_ok(conflicts_of($b), '>=', 1, 'the merge of B counted the key A wrote');
is_deeply([ new_lines($offsets) ], [ 0, 1 ], 'one LOG line, from the merge that saw it');

# A updates the key (it is live: an INSERT would be 23505): its merge now
# finds B's base row.
$offsets = log_offsets();
$a->safe_psql('postgres', "UPDATE conflicts SET n = 3 WHERE id = 'k'");
$a->safe_psql('postgres', "SELECT ctxstore.merge_wal('conflicts')");
is($_->safe_psql('postgres', "SELECT string_agg(n::text, ',') FROM conflicts"),
	'3', 'still one row, the newest, on ' . $_->name) for @nodes;
cmp_ok(conflicts_of($a), '>=', 1, 'the merge of A counted the key B wrote');
is_deeply([ new_lines($offsets) ], [ 1, 0 ], 'one more LOG line, once for that merge');

$_->stop for @nodes;
done_testing();
