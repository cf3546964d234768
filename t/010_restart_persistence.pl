# Committed rows survive a clean restart and an immediate (crash) restart,
# for every column type the store keeps natively, and a table created after
# the restart on the same store reads them back.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
my $uri = "file://$root/restart_persistence";

my $node = PostgreSQL::Test::Cluster->new('restart');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;

my $columns = q{id text NOT NULL, n int8, f float8, b bool, j jsonb, e real[],
	t timestamptz, u uuid, d numeric, raw bytea};
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE ctx ($columns) SERVER lake OPTIONS (uri '$uri');
CREATE TABLE expected ($columns);
INSERT INTO expected
  SELECT 'id-' || g, g, g / 7.0, g % 2 = 0, jsonb_build_object('g', g),
         ARRAY[g, NULL, -g]::real[], timestamptz '2026-01-01' + g * interval '1 min',
         md5(g::text)::uuid, g * 1.000001, decode(md5(g::text), 'hex')
  FROM generate_series(1, 500) g;
INSERT INTO expected VALUES ('nulls', NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL, NULL);
});
# Three transactions, so the store holds several versions.
$node->safe_psql('postgres', "INSERT INTO ctx SELECT * FROM expected WHERE n <= 200");
$node->safe_psql('postgres', "INSERT INTO ctx SELECT * FROM expected WHERE n > 200");
$node->safe_psql('postgres', "INSERT INTO ctx SELECT * FROM expected WHERE n IS NULL");

my $diff = q{SELECT count(*) FROM (
	(SELECT * FROM ctx EXCEPT ALL SELECT * FROM expected)
	UNION ALL
	(SELECT * FROM expected EXCEPT ALL SELECT * FROM ctx)) d};
is($node->safe_psql('postgres', $diff), '0', 'rows read back before restart');

$node->restart;
is($node->safe_psql('postgres', $diff), '0', 'rows read back after a clean restart');

$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $diff), '0', 'rows read back after a crash restart');

# A new table bound to the same store sees the same rows.
$node->safe_psql('postgres',
	"CREATE FOREIGN TABLE ctx2 ($columns) SERVER lake OPTIONS (uri '$uri')");
is($node->safe_psql('postgres', 'SELECT count(*), sum(n) FROM ctx2'),
	'501|125250', 'a second table on the store reads every row');

# Writes still work after the restarts.
$node->safe_psql('postgres', "INSERT INTO ctx (id, n) VALUES ('after', 1)");
is($node->safe_psql('postgres', "SELECT count(*) FROM ctx WHERE id = 'after'"),
	'1', 'inserts work after the restarts');

$node->stop;
done_testing();
