# Changing a store's columns while the writer and other sessions still hold
# the old schema (docs/design/table.md, "Schema evolution"):
#   - rows left in the WAL (seal_on_insert off) under the old schema when
#     the cluster crashes right after ADD COLUMN: the replay converts them by
#     field id, and they read the new column as NULL;
#   - a session whose cached view of the store predates a widening keeps
#     writing through another table with the old column type, in a single
#     statement and in a transaction buffered before the ALTER: the writer
#     converts its rows;
#   - a merge writes every row into base fragments of the current schema.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('schema_evolution');
my $uri = store_uri('schema_evolution');
my $unsealed = q{seal_on_insert 'false', flush_interval '1h',
  merge_after_generations '0', cleanup_interval '0'};
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE se_a (id text, n int4) SERVER lake
  OPTIONS (uri '$uri', $unsealed);
CREATE FOREIGN TABLE se_b (id text, n int4) SERVER lake
  OPTIONS (uri '$uri', $unsealed);
INSERT INTO se_a VALUES ('a0', 0);
INSERT INTO se_b VALUES ('b0', 1);
ALTER FOREIGN TABLE se_a ADD COLUMN note text;
});
kill9_cluster($node);
$node->start;
$node->safe_psql('postgres', "SELECT ctxstore.flush('se_a')");
is($node->safe_psql('postgres', 'SELECT id, n, note FROM se_a ORDER BY id'),
	"a0|0|\nb0|1|", 'WAL entries of the old schema replayed into the new one');

# A session that wrote through se_b: its backend keeps the store's schema.
my $b = $node->background_psql('postgres', on_error_stop => 0);
$b->query_safe("INSERT INTO se_b VALUES ('b1', 2)");
$b->query_safe("BEGIN; INSERT INTO se_b VALUES ('b2', 2147483647)");
$node->safe_psql('postgres', qq{
ALTER FOREIGN TABLE se_a ALTER COLUMN n TYPE int8;
INSERT INTO se_a VALUES ('a1', 5000000000, 'wide');
});
$b->query_safe('COMMIT');
$b->query_safe("INSERT INTO se_b VALUES ('b3', 3)");
$b->quit;
$node->safe_psql('postgres', "SELECT ctxstore.flush('se_a')");

my $expected =
  "a0|0|\na1|5000000000|wide\nb0|1|\nb1|2|\nb2|2147483647|\nb3|3|";
is($node->safe_psql('postgres', 'SELECT id, n, note FROM se_a ORDER BY id'),
	$expected, 'rows sent under the older schema converted by the writer');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM ctxstore.versions('se_a') WHERE operation = 'alter schema'"),
	'2', 'each ALTER is one alter schema version');

$node->safe_psql('postgres', "SELECT ctxstore.merge_wal('se_a')");
is($node->safe_psql('postgres', "SELECT ctxstore.pending_wal_generations('se_a')"),
	'0', 'everything merged');
is($node->safe_psql('postgres', 'SELECT id, n, note FROM se_a ORDER BY id'),
	$expected, 'the same rows from base fragments of the current schema');

# A table still declaring the narrower type no longer fits the store.
my ($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM se_b');
like($err, qr/does not match the type of its store column/,
	'a table with the narrower type is refused');

$node->stop;
done_testing();
