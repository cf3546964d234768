# Fencing (docs/INVARIANTS.md, invariant 2): two clusters configured with the SAME
# ctxstore.shard_id write one store.  The second one's claim fences the
# first, whose next write fails promptly with a clear "fenced" error instead
# of hanging or forking the shard; re-claiming is the next request's explicit,
# logged claim, never a retry loop.  Rows the fenced writer acknowledged
# through its WAL are replayed by the claim that fenced it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $conf = "ctxstore.shard_id = 'shared-shard'\n";
my $a = memwal_node('fence_a', $conf);
my $b = memwal_node('fence_b', $conf);

for my $node ($a, $b)
{
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE sealed (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri('fence_sealed') ]}', unique_key 'false');
CREATE FOREIGN TABLE deferred (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri('fence_deferred') ]}', unique_key 'false',
           seal_on_insert 'false', flush_interval '1h', cleanup_interval '0');
});
}

sub ids
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(id, ',' ORDER BY id) FROM $table");
}

# ---- sealed appends ----

my $a_log = -s $a->logfile;
$a->safe_psql('postgres', "INSERT INTO sealed VALUES ('a1', 1)");
$b->safe_psql('postgres', "INSERT INTO sealed VALUES ('b1', 1)");

my $t0 = time;
my ($rc, $out, $err) =
  $a->psql('postgres', "INSERT INTO sealed VALUES ('a2', 1)", timeout => 120);
my $elapsed = time - $t0;
isnt($rc, 0, 'the fenced writer\'s next commit fails');
like($err, qr/fenced/i, 'with an error that says it was fenced');
like($err, qr/ctxstore\.shard_id/, 'whose hint names ctxstore.shard_id');
cmp_ok($elapsed, '<', 30, 'in bounded time (no hang, no retry loop)');
note("fenced error after $elapsed s: $err");
like(substr(slurp_file($a->logfile), $a_log),
	qr/was claimed by another writer/, 'the fencing is logged');

# The next request re-claims, explicitly and logged.
$a->safe_psql('postgres', "INSERT INTO sealed VALUES ('a3', 1)");
like(substr(slurp_file($a->logfile), $a_log),
	qr/re-claimed shard shared-shard of store/, 'the re-claim is logged');
is(ids($a, 'sealed'), 'a1,a3,b1', 'cluster A reads every acknowledged row once');
is(ids($b, 'sealed'), 'a1,a3,b1', 'cluster B reads the same rows');

# The re-claim fenced B in turn: its next write fails once, then re-claims.
($rc, $out, $err) = $b->psql('postgres', "INSERT INTO sealed VALUES ('b2', 1)", timeout => 120);
like($err, qr/fenced/i, 'the re-claim fences the other cluster in turn');
$b->safe_psql('postgres', "INSERT INTO sealed VALUES ('b3', 1)");
is(ids($a, 'sealed'), 'a1,a3,b1,b3', 'no failed commit left a row behind');

# ---- acknowledged WAL entries of a fenced writer ----

$a->safe_psql('postgres',
	join('', map { "INSERT INTO deferred VALUES ('a-wal-$_', $_);\n" } 1 .. 10));
is($a->safe_psql('postgres', 'SELECT count(*) FROM deferred'),
	'0', 'unsealed rows are not visible');
# B's claim fences A and replays A's acknowledged entries.
$b->safe_psql('postgres', "INSERT INTO deferred VALUES ('b-wal-1', 1)");
$b->safe_psql('postgres', "SELECT ctxstore.flush('deferred')");
my $expect = join(',', sort(map { "a-wal-$_" } 1 .. 10), 'b-wal-1');
is(ids($b, 'deferred'), $expect,
	'the claim that fenced a writer replays its acknowledged rows once');
($rc, $out, $err) = $a->psql('postgres', "SELECT ctxstore.flush('deferred')", timeout => 120);
like($err, qr/fenced/i, 'the fenced writer cannot seal them again');
is(ids($a, 'deferred'), $expect, 'and they are not duplicated');

$a->stop;
$b->stop;
done_testing();
