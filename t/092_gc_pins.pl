# The maintenance worker's GC (gc_interval) keeps the versions tables pin in
# every database that sent this cluster's writer a request for the store:
# each request carries its database's pins, and the store's settings keep
# the union of what each database last told (docs/design/maintenance.md,
# "Pinned versions").  A pin in a database that never sent one is protected
# only by the retention window: here, with retain_versions 1 and
# retain_interval 0, it is collected, and reading it says it is no longer
# retained; a retained version missing an object keeps the damaged-store
# error.  More pins than a request carries stop the worker's GC of the
# store.
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
like($err, qr/ERROR:  version $first of store \S+ is no longer retained/,
	'a pin of a database that never told it is collected (retention window only)');
like($err, qr/HINT:  GC keeps the newest retain_versions versions/,
	'and the read says so, with the retention hint');

# A retained version missing an object is damage, not collection: the
# read keeps the error that says the store lacks it (every fragment is
# deleted by hand; nothing reads the store after).
(my $dir = $uri) =~ s{^file://}{};
my @fragments = glob("$dir/data/*.parquet");
unlink(@fragments) == @fragments or die "unlink @fragments: $!";
($rc, $out, $err) = $node->psql('told', 'SELECT count(*) FROM pinned');
unlike($err, qr/no longer retained/, 'a retained version missing an object is not called collected');
like($err, qr/HINT:  If the detail names an object a version lists, the store lacks it/,
	'it keeps the damaged-store hint');

# More pins than a request carries (CX_PINS_MAX, 32): the worker does not
# collect the store at all rather than drop one.  (gc_grace stays 1h: the
# writes below run while the worker's GC does.)
my $crowded = store_uri('gc_pins_crowded');
sql('postgres', qq{
CREATE FOREIGN TABLE crowded (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$crowded', merge_after_generations '0', cleanup_interval '0',
           retain_versions '1', retain_interval '0', gc_interval '1s');
INSERT INTO crowded VALUES ('c1', 1);
SELECT ctxstore.merge_wal('crowded')});
sql('told', qq{
CREATE FOREIGN TABLE crowded (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$crowded');
DO \$\$
BEGIN
  FOR i IN 1..33 LOOP
    EXECUTE format('CREATE FOREIGN TABLE crowded_pin_%s (id text, n int) SERVER lake OPTIONS (uri %L, version %L)',
                   i, '$crowded', '1');
  END LOOP;
END \$\$;
SELECT ctxstore.flush('crowded')});
sql('postgres', q{
INSERT INTO crowded VALUES ('c2', 2);
SELECT ctxstore.merge_wal('crowded')});
ok( $node->poll_query_until('postgres',
		"SELECT ctxstore.stats('crowded') #>> '{gc,outcome}' LIKE 'failed: more than 32 base versions%'"),
	'with more than 32 pins the worker refuses to collect the store');

$node->stop;
done_testing();
