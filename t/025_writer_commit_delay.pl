# The writer's gather before a round (ctxstore.writer_commit_delay): over a
# slow store, the sessions a group commit acknowledged share the next one
# instead of splitting into groups that take turns.  Every seal is slowed
# to 200 ms (a failpoint delay), so a session re-submits long before the
# next seal would end; the test counts transactions per round
# (ctxstore.stats' acknowledged transactions over ctxstore.workers' rounds),
# never a time.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use CxMemwal;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $uri = store_uri('writer_commit_delay');
my ($clients, $per_client) = (6, 20);

# From the environment every process of the cluster arms it at its first
# failpoint, restarts included (the GUC would need a reload in each).
$ENV{CTXSTORE_FAILPOINTS} = 'seal.after_commit=delay:200';
my $node = memwal_node('commit_delay', qq{
ctxstore.writer_commit_delay = 100
});

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(qq{
CREATE FOREIGN TABLE events (id text NOT NULL, client int)
	SERVER lake OPTIONS (uri '$uri', key 'id', merge_after_generations '0');
CREATE SEQUENCE event_ids;
INSERT INTO events VALUES ('first', 0);
});

sub counts
{
	return split /\|/, sql(q{
SELECT (SELECT rounds FROM ctxstore.workers WHERE kind = 'writer'),
       (SELECT (s ->> 'acked_transactions')::bigint FROM ctxstore.stats('events') s),
       (SELECT gathers || '|' || gather_sleeps FROM ctxstore.workers WHERE kind = 'writer')});
}

# Transactions per round while $clients sessions commit $per_client
# single-row transactions each.
sub per_round
{
	my ($name) = @_;
	my $total = $clients * $per_client;
	my ($rounds0, $acked0, $gathers0, $sleeps0) = counts();

	$node->pgbench(
		"--no-vacuum --client=$clients --jobs=$clients --transactions=$per_client",
		0,
		[qr{processed: $total/$total}],
		[qr{^$}],
		"$name: $clients sessions commit $per_client transactions each",
		{
			"025_insert_$name" => q{
INSERT INTO events VALUES (nextval('event_ids')::text, :client_id);
}
		});
	my ($rounds1, $acked1, $gathers1, $sleeps1) = counts();
	is($acked1 - $acked0, $total, "$name: every transaction acknowledged");
	my $ratio = ($acked1 - $acked0) / (($rounds1 - $rounds0) || 1);
	diag(sprintf('%s: %d transactions in %d rounds (%.2f per round), %d gathers, %d sleeps in them',
			$name, $acked1 - $acked0, $rounds1 - $rounds0, $ratio,
			$gathers1 - $gathers0, $sleeps1 - $sleeps0));
	return ($ratio, $gathers1 - $gathers0, $sleeps1 - $sleeps0);
}

# At 100% the bound is GATHER_MAX_US (50 ms), a quarter of a seal: the
# sessions, woken together, are nearly always queued again before it
# passes.  (The first rounds split as the sessions start one by one, and
# on a loaded machine a session is sometimes late: hence 70%.)
my ($gathered, $gathers, $sleeps) = per_round('gather');
cmp_ok($gathered, '>=', 0.7 * $clients,
	'with the gather, a round carries (nearly) every session');

# The sessions' commits during a gather leave the writer asleep until the
# last of those it waits for has committed: one sleep per gather (1.0
# here, also with three busy loops on the machine), where a wake-up per
# commit made 3.2 (commits that find the latch still set coalesce).  A
# stray wake-up, or one for a session that was not in the last round, adds
# a sleep: hence 1.5.
cmp_ok($gathers, '>', 0, 'the writer gathered after rounds');
cmp_ok($sleeps / ($gathers || 1), '<', 1.5,
	'the writer is woken once per gather, not by every commit');

# Without it, the first session to commit again makes a round of its own
# and the others queue behind its seal: two groups that take turns.  (A
# restart, not a reload: the writer then runs with the setting from its
# first round.)
$node->append_conf('postgresql.conf', 'ctxstore.writer_commit_delay = 0');
$node->restart;
my ($split, $split_gathers) = per_round('no gather');
cmp_ok($split, '<', $gathered,
	'without it, the sessions split into smaller groups');
is($split_gathers, 0, 'without it, the writer never gathers');

is(sql('SELECT count(*), count(DISTINCT id) FROM events'),
	join('|', (1 + 2 * $clients * $per_client) x 2),
	'every committed row is stored exactly once');

$node->stop;
done_testing();
