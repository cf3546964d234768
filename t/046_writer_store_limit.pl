# More stores than the writer keeps open (ctxstore.writer_max_open_stores):
# a store closed to make room keeps its shard claim, so writing 4 stores
# round-robin with room for 2 claims each store once, however often its
# handle is closed and reopened, and every row is there.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $stores = 4;
my $rounds = 5;
my $node = memwal_node('store_limit', "ctxstore.writer_max_open_stores = 2\n");

is($node->safe_psql('postgres', 'SHOW ctxstore.writer_max_open_stores'),
	'2', 'the limit is set');
for my $i (1 .. $stores)
{
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE t$i (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri("limit_$i") ]}');
});
}

# Round-robin, one sealed commit per store and round: every commit finds its
# store closed (only 2 fit) and reopens it.
for my $round (1 .. $rounds)
{
	for my $i (1 .. $stores)
	{
		$node->safe_psql('postgres', qq{
INSERT INTO t$i VALUES ('r$round', $round);
});
	}
}

for my $i (1 .. $stores)
{
	my ($rows, $claims, $commits) = split /\|/, $node->safe_psql('postgres', qq{
SELECT (SELECT count(DISTINCT id) FROM t$i),
       s->'writer'->>'claims', s->>'store_commits'
  FROM ctxstore.stats('t$i') s});
	is($rows, $rounds, "store $i holds every row once");
	is($commits, $rounds, "store $i: one commit per round");
	is($claims, 1, "store $i was claimed once although its handle was closed "
		  . ($rounds - 1) . ' times');
}

# The handles were closed and reopened (so the claims were kept, not held).
my $log = slurp_file($node->logfile);
my $claimed = () = $log =~ /ctxstore writer: claimed shard/g;
is($claimed, $stores, 'the log shows one claim per store');

# One transaction writing more stores than are kept open: a store found by
# the round is never closed to make room for the next (its group would
# append through a closed store, its staged rows dropped), so the
# transaction is refused whole, with the limit named, and none of its rows
# is written.
my (undef, undef, $wide_err) = $node->psql('postgres', qq{
BEGIN;
INSERT INTO t1 VALUES ('wide', 1);
INSERT INTO t2 VALUES ('wide', 2);
INSERT INTO t3 VALUES ('wide', 3);
COMMIT;
});
like($wide_err, qr/all 2 stores this worker keeps open are busy/,
	'a transaction writing 3 stores with room for 2 is refused, naming the limit');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM (SELECT id FROM t1 UNION ALL SELECT id FROM t2 UNION ALL SELECT id FROM t3) a WHERE id = 'wide'"),
	'0', 'none of its rows was written');

# After a restart the writer cannot know what its predecessor left in
# flight: each store is claimed anew, once.
$node->restart;
$node->safe_psql('postgres', "INSERT INTO t$_ VALUES ('after', 0)") for 1 .. $stores;
$node->safe_psql('postgres', "INSERT INTO t$_ VALUES ('after2', 0)") for 1 .. $stores;
is($node->safe_psql('postgres',
	"SELECT sum((s->'writer'->>'claims')::int) FROM ctxstore.stats('t1') s"),
	'1', 'a restarted writer claims a store once');

# A kept claim that another cluster overtook (it shares this cluster's shard
# id) is noticed at reopen: the store is claimed anew, never written with
# the old epoch, and the other cluster is fenced at its next write.  t1 and
# t2 are closed now (t3 and t4 were written last), t1 with a kept claim.
my $shard = $node->safe_psql('postgres', 'SHOW ctxstore.shard_id');
my $other = memwal_node('store_limit_b', "ctxstore.shard_id = '$shard'\n");
$other->safe_psql('postgres', qq{
CREATE FOREIGN TABLE t1 (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri("limit_1") ]}');
INSERT INTO t1 VALUES ('other', 1);
});
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "INSERT INTO t1 VALUES ('overtaken', 1)");
like(substr(slurp_file($node->logfile), $offset),
	qr/re-claimed shard \Q$shard\E of store .*\n.*DETAIL:  Another writer claimed the shard while this writer had the store closed/,
	'the reopen noticed the other claim and claimed anew');
# The other cluster finds itself fenced at its next store write: either
# that INSERT (it fails), or, when the writer's background drain of merged
# generations got there first, that drain (the writer is dropped and the
# INSERT re-claims the shard and succeeds).  Never a write with the old
# epoch.
my $other_offset = -s $other->logfile;
my ($rc, $out, $err) = $other->psql('postgres', "INSERT INTO t1 VALUES ('fenced', 1)");
my $other_log = slurp_file($other->logfile);
my $dropped = $other_log =~
  /was claimed by another writer; dropping this writer/;
if ($rc != 0)
{
	like($err, qr/fenced/i, 'the other cluster is fenced at its next write');
}
else
{
	ok($dropped && substr($other_log, $other_offset) =~ /re-claimed shard/,
		'the other cluster was fenced by its background drain, then re-claimed');
}
my @acked = ('after', 'after2', 'other', 'overtaken', map { "r$_" } 1 .. $rounds);
push @acked, 'fenced' if $rc == 0;
is($node->safe_psql('postgres', 'SELECT string_agg(id, \',\' ORDER BY id) FROM t1'),
	join(',', sort @acked), 'every acknowledged row is there once');

$other->stop;
$node->stop;
done_testing();
