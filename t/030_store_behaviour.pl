# One SQL behaviour suite, run unchanged against a file:// store, an s3://
# store (s3rver, SigV4 with keys from a user mapping, conditional_put 'off')
# and an az:// store (Azurite, SharedKey from a user mapping): inserts (single,
# multi-row, COPY), projection, rollback and savepoints, read-your-writes,
# a round trip of a representative set of types, stats and versions, a schema
# mismatch, and reading everything back after a clean and a crash restart.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my @kinds = qw(file s3 az);

my $node = PostgreSQL::Test::Cluster->new('store_behaviour');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'");
$node->start;

my $columns = q{id text NOT NULL, n int8, f float8, ok bool, j jsonb, js json,
	e real[], tags text[], t timestamptz, d date, iv interval, u uuid,
	num numeric, raw bytea, ip inet, mood mood};
$node->safe_psql('postgres', qq{
CREATE EXTENSION ctxstore;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE expected ($columns);
INSERT INTO expected
  SELECT 'r' || g, g, g / 7.0, g % 2 = 0, jsonb_build_object('g', g),
         json_build_object('g', g, 'k', 'v'), ARRAY[g, NULL, -g]::real[],
         ARRAY['a' || g, NULL], timestamptz '2026-01-01 00:00:00+00' + g * interval '1 min',
         date '2026-01-01' + g, make_interval(days => g, secs => g / 3.0),
         md5(g::text)::uuid, g * 1.000001, decode(md5(g::text), 'hex'),
         ('10.0.' || g % 256 || '.1/24')::inet, (ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::mood
  FROM generate_series(1, 300) g;
INSERT INTO expected (id, f, e, tags, num)
  VALUES ('nulls', 'NaN', '{}', '{}', 'NaN');
});
$node->safe_psql('postgres', server_sql($_, "srv_$_")) for @kinds;

# Runs $sql; returns stdout, or stderr prefixed with "ERROR" if it failed.
sub run_sql
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql);
	return $rc == 0 ? $out : "ERROR $err";
}

# The rows of table $t that differ from expected (compared as text: json
# has no equality), in either direction.
sub differing
{
	my ($t) = @_;
	return run_sql(qq{SELECT count(*) FROM (
	  (SELECT x::text FROM $t x WHERE id LIKE 'r%' OR id = 'nulls'
	   EXCEPT ALL SELECT y::text FROM expected y)
	  UNION ALL
	  (SELECT y::text FROM expected y
	   EXCEPT ALL SELECT x::text FROM $t x WHERE id LIKE 'r%' OR id = 'nulls')) d});
}

sub behaviour
{
	my ($kind) = @_;
	my $t = "b_$kind";
	my $uri = store_uri($kind, 'behaviour');

	is(run_sql("CREATE FOREIGN TABLE $t ($columns) SERVER srv_$kind OPTIONS (uri '$uri')"),
		'', "$kind: create table");

	is(run_sql("INSERT INTO $t SELECT * FROM expected WHERE n = 1"),
		'', "$kind: single-row insert");
	is(run_sql(qq{INSERT INTO $t SELECT * FROM expected WHERE n BETWEEN 2 AND 100
	                UNION ALL SELECT * FROM expected WHERE id = 'nulls'}),
		'', "$kind: multi-row insert");
	my $copy = $node->safe_psql('postgres',
		'COPY (SELECT * FROM expected WHERE n > 100) TO STDOUT');
	is(run_sql("COPY $t FROM STDIN;\n$copy\n\\.\n"), '', "$kind: COPY FROM");

	is(run_sql("SELECT id, n, ok FROM $t WHERE n <= 3 ORDER BY n"),
		"r1|1|f\nr2|2|t\nr3|3|f", "$kind: projection");
	is(differing($t), '0', "$kind: every type reads back as written");

	is(run_sql("BEGIN; INSERT INTO $t (id) VALUES ('gone'); ROLLBACK;
	            SELECT count(*) FROM $t WHERE id = 'gone'"),
		'0', "$kind: rollback discards the rows");
	is(run_sql(qq{BEGIN;
	  INSERT INTO $t (id) VALUES ('sp1');
	  SAVEPOINT s;
	  INSERT INTO $t (id) VALUES ('sp2');
	  ROLLBACK TO s;
	  INSERT INTO $t (id) VALUES ('sp3');
	  COMMIT;
	  SELECT string_agg(id, ',' ORDER BY id) FROM $t WHERE id LIKE 'sp%'}),
		'sp1,sp3', "$kind: rollback to savepoint discards exactly its rows");
	is(run_sql(qq{BEGIN;
	  INSERT INTO $t (id, n) VALUES ('mine', -1);
	  SELECT count(*), sum(n) FROM $t WHERE id = 'mine';
	  ROLLBACK;}),
		'1|-1', "$kind: a transaction reads its own rows");

	is(run_sql(qq{SELECT (s->>'version')::bigint = (SELECT max(version) FROM ctxstore.versions('$t')),
	                     s->>'uri'
	              FROM ctxstore.stats('$t') s}),
		"t|$uri", "$kind: stats describe the store's newest version");
	is(run_sql("SELECT count(*) > 0, bool_and(rows >= 0) FROM ctxstore.versions('$t')"),
		't|t', "$kind: versions are listed");

	like(
		run_sql(qq{CREATE FOREIGN TABLE ${t}_wrong (id text, n text)
		             SERVER srv_$kind OPTIONS (uri '$uri');
		           \\set VERBOSITY verbose
		           SELECT * FROM ${t}_wrong}),
		qr/ERROR:  42804: column "n" of foreign table "${t}_wrong" does not match.*holds int64/s,
		"$kind: a table whose types differ from the store's is refused");
	return;
}

behaviour($_) for @kinds;

# Everything reads back after a clean and after a crash restart, and writes
# work again (new connections, new writer).
sub read_back
{
	my ($when) = @_;
	for my $kind (@kinds)
	{
		is(differing("b_$kind"), '0', "$kind: rows read back $when");
		is(run_sql("SELECT string_agg(id, ',' ORDER BY id) FROM b_$kind WHERE id LIKE 'sp%'"),
			'sp1,sp3', "$kind: committed savepoint rows read back $when");
	}
	return;
}

$node->restart;
read_back('after a clean restart');
$node->stop('immediate');
$node->start;
read_back('after a crash restart');
for my $kind (@kinds)
{
	is(run_sql("INSERT INTO b_$kind (id) VALUES ('after');
	            SELECT count(*) FROM b_$kind WHERE id = 'after'"),
		'1', "$kind: inserts work after the restarts");
}

$node->stop;
done_testing();
