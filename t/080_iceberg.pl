# Iceberg publishing (docs/OPERATIONS.md "Reading a store from other
# engines"): two clusters (two shards) write one store with inserts, updates
# and deletes and merge; ctxstore.publish_iceberg() publishes the base as an
# Iceberg v2 snapshot, and t/iceberg_rebuild.mjs rebuilds the table from the
# Iceberg metadata alone (Avro decoded by avsc against the spec's schemas,
# data files read by DuckDB, position deletes applied), which must equal
# SELECT through ctxstore row for row.  Publishing the same base again adds
# nothing; with iceberg_interval set, the maintenance worker publishes after
# a merge on its own; GC expires snapshots whose base versions it does not
# retain and the table still rebuilds.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;

die "NODE_PATH names no readers: run bash scripts/readers.sh install (scripts/test.sh does)\n"
  unless -d ($ENV{NODE_PATH} // '') . '/avsc';

my $node_a = memwal_node('iceberg_a');
my $node_b = memwal_node('iceberg_b');
my @nodes = ($node_a, $node_b);
my $uri = store_uri('iceberg');
(my $dir = $uri) =~ s{^file://}{};
my $script = "$FindBin::RealBin/iceberg_rebuild.mjs";

# Merges only when asked, so that the test decides what the base holds.
$_->safe_psql('postgres', qq{
CREATE FOREIGN TABLE ev (id text NOT NULL, n int8, note text, flag bool) SERVER lake
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0');
}) for @nodes;

sub merge_both
{
	$_->safe_psql('postgres', "SELECT ctxstore.merge_wal('ev')") for @nodes;
	return;
}

sub publish
{
	my ($node) = @_;
	return decode_json($node->safe_psql('postgres', "SELECT ctxstore.publish_iceberg('ev')"));
}

# The rows SELECT returns, as the rebuild prints them: text values (NULL as
# undef), sorted.
sub selected
{
	my $json = $node_a->safe_psql('postgres', q{
SELECT coalesce(json_agg(json_build_array(id, n::text, note, flag::text)), '[]') FROM ev});
	return [ sort { encode_json($a) cmp encode_json($b) } @{ decode_json($json) } ];
}

sub rebuild
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'node', $script, "$dir/iceberg" ], '>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return ($? >> 8, $out, $err);
}

sub check_rebuild
{
	my ($what) = @_;
	my ($rc, $out, $err) = rebuild();
	is($rc, 0, "$what: the table rebuilds from the Iceberg metadata") or diag($err);
	return undef if $rc != 0;
	my $ice = decode_json($out);
	is_deeply($ice->{columns}, [qw(id n note flag)], "$what: the Iceberg schema has the table's columns only");
	is_deeply($ice->{rows}, selected(), "$what: the rebuilt table equals SELECT row for row");
	return $ice;
}

# Shard A: inserts, an update and a delete; shard B: inserts, an update of
# one of A's keys, a delete of one of A's keys; NULLs on the way.
$node_a->safe_psql('postgres', q{
INSERT INTO ev SELECT 'a' || i, i, CASE WHEN i % 4 = 0 THEN NULL ELSE 'note ' || i END, i % 2 = 0
  FROM generate_series(1, 40) i;
UPDATE ev SET n = n + 1000 WHERE id IN ('a3', 'a7');
DELETE FROM ev WHERE id = 'a5';
});
$node_b->safe_psql('postgres', q{
INSERT INTO ev SELECT 'b' || i, -i, 'from b', NULL FROM generate_series(1, 15) i;
});
merge_both();
$node_b->safe_psql('postgres', q{
UPDATE ev SET note = 'changed by b' WHERE id = 'a10';
DELETE FROM ev WHERE id IN ('a11', 'b2');
});
merge_both();

my $res = publish($node_a);
ok($res->{published}, 'the first publish adds a snapshot');
like($res->{metadata_location}, qr{^\Q$uri\E/iceberg/metadata/v1\.metadata\.json$},
	'metadata_location names v1.metadata.json under the store');
cmp_ok($res->{position_deletes}, '>=', 4, 'the updated and deleted rows are position deletes');
my $base = $node_a->safe_psql('postgres',
	"SELECT max(version) FROM ctxstore.versions('ev')");
is($res->{base_version}, $base, 'the snapshot describes the newest base version');
my $ice = check_rebuild('two shards after merging');
is($ice->{snapshot_id}, $res->{snapshot_id}, 'the rebuild read the published snapshot') if $ice;

my $again = publish($node_b);
ok(!$again->{published}, 'publishing the same base again adds nothing');
is($again->{snapshot_id}, $res->{snapshot_id}, 'and reports the same snapshot');
ok(!-e "$dir/iceberg/metadata/v2.metadata.json", 'no second metadata file');

# Automatic: the maintenance worker of A publishes after A's next merge.
$node_a->safe_psql('postgres', "ALTER FOREIGN TABLE ev OPTIONS (ADD iceberg_interval '1s')");
$node_a->safe_psql('postgres', q{
INSERT INTO ev VALUES ('late', 1, 'after the first publish', true);
DELETE FROM ev WHERE id = 'a1';
SELECT ctxstore.merge_wal('ev');
});
my $latest = $node_a->safe_psql('postgres', "SELECT max(version) FROM ctxstore.versions('ev')");
ok(wait_until(sub {
	my $hint = -e "$dir/iceberg/metadata/version-hint.text"
	  ? slurp_file("$dir/iceberg/metadata/version-hint.text") : '';
	return 0 unless $hint =~ /^(\d+)$/ && $1 >= 2;
	my $meta = decode_json(slurp_file("$dir/iceberg/metadata/v$1.metadata.json"));
	my ($cur) = grep { $_->{'snapshot-id'} == $meta->{'current-snapshot-id'} } @{ $meta->{snapshots} };
	return $cur->{summary}{'ctxstore.base-version'} eq $latest;
}), 'the maintenance worker published the merged base on its own (iceberg_interval)');
check_rebuild('after the automatic publish');

# GC keeping only the newest base version expires the older snapshot: the
# next metadata file lists the current one alone, and the table still
# rebuilds from the Iceberg metadata with every file it names present.
$node_a->safe_psql('postgres', q{
ALTER FOREIGN TABLE ev OPTIONS (ADD retain_versions '1', ADD retain_interval '0', ADD gc_grace '0');
SELECT ctxstore.gc('ev');
});
my $hint = slurp_file("$dir/iceberg/metadata/version-hint.text");
my $expired = decode_json(slurp_file("$dir/iceberg/metadata/v$hint.metadata.json"));
is(scalar @{ $expired->{snapshots} }, 1, 'GC expired the snapshot of the base version it did not retain');
check_rebuild('after GC expired a snapshot');

$_->stop for @nodes;
done_testing();
