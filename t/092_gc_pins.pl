# The maintenance worker's GC (gc_interval) keeps the versions tables pin in
# every database that sent this cluster's writer a request for the store:
# each request carries its database's pins, and the store's settings keep
# the union of what each database last told (docs/design/maintenance.md,
# "Pinned versions").  A pin in a database that never sent one is protected
# only by the retention window: here, with retain_versions 1 and
# retain_interval 0, it is collected.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('gc_pins');
my $uri = store_uri('gc_pins');

sub sql
{
	my ($db, $query) = @_;
	return $node->safe_psql($db, $query);
}

for my $db (qw(told silent))
{
	sql('postgres', "CREATE DATABASE $db");
	sql($db, 'CREATE EXTENSION ctxstore; CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;');
}

# Old versions and unreferenced objects are garbage at once.
sql('postgres', qq{
CREATE FOREIGN TABLE events (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0',
           retain_versions '1', retain_interval '0', gc_grace '0')});

sub merge_rows
{
	my ($from, $to) = @_;
	sql('postgres', qq{
INSERT INTO events SELECT 'e' || g, g FROM generate_series($from, $to) g;
SELECT ctxstore.merge_wal('events')});
	return sql('postgres', "SELECT max(version) FROM ctxstore.versions('events')");
}

my $first = merge_rows(1, 10);
my $second = merge_rows(11, 20);

# Database told pins the second version and tells the writer (a flush of a
# table of the store); database silent pins the first and sends nothing.
sql('told', qq{
CREATE FOREIGN TABLE pinned (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', version '$second');
CREATE FOREIGN TABLE events (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri');
SELECT ctxstore.flush('events')});
sql('silent', qq{
CREATE FOREIGN TABLE pinned (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', version '$first')});
is(sql('silent', 'SELECT count(*) FROM pinned'), '10', 'the silent pin reads before GC');

# The next merge job, from database postgres, which pins nothing, tells the
# worker gc_interval; no write after it (gc_grace is 0).
sql('postgres', "ALTER FOREIGN TABLE events OPTIONS (ADD gc_interval '1s')");
merge_rows(21, 30);
ok( $node->poll_query_until('postgres',
		"SELECT ctxstore.stats('events') #>> '{gc,outcome}' = 'collected'"),
	'the worker collected the store by itself');
cmp_ok(sql('postgres', "SELECT ctxstore.stats('events') #>> '{gc,bytes_reclaimed}'"),
	'>', 0, 'and deleted garbage');

is(sql('postgres', 'SELECT count(*), sum(n) FROM events'), '30|465',
	'the newest version reads every row');
is(sql('told', 'SELECT count(*), sum(n) FROM pinned'), '20|210',
	'a pin of another database that told the writer survives');
my ($rc, $out, $err) = $node->psql('silent', 'SELECT count(*) FROM pinned');
like($err, qr/could not read version $first/,
	'a pin of a database that never told it is collected (retention window only)');

$node->stop;
done_testing();
