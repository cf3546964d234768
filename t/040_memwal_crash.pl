# Acknowledged means durable, every row once (docs/INVARIANTS.md, invariants
# 3 and 5): kill -9 of the writer worker, and of the whole cluster, while
# four sessions insert single-row transactions, loses no acknowledged row
# and stores none twice, with
# seal_on_insert on (rows in a generation when COMMIT returns) and off (rows
# in a WAL entry when COMMIT returns, replayed by the next claim).
#
# Then a clean shutdown seals what was not sealed yet.
#
# Reads de-duplicate by key (whatever unique_key says), so a row written
# twice shows once here: what this checks is that none is lost and none is
# visible twice.  That a replay writes each WAL entry into exactly one
# generation is checked on the stored generations themselves by the unit
# tests sw_crash_before_seal_replays_exactly_once and
# sw_replay_that_crashes_before_its_commit_duplicates_nothing.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use CxStores qw(writer_pid wait_for_writer);
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('memwal_crash');

for my $seal ('true', 'false')
{
	my $table = $seal eq 'true' ? 'sealed' : 'deferred';
	my $uri = store_uri("memwal_crash_$table");
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE $table (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '$uri', unique_key 'false', seal_on_insert '$seal',
           merge_after_generations '4', flush_interval '1s');
});
}

# Makes every acknowledged row of a deferred table visible: the claim of the
# restarted writer replays the WAL, and flush seals whatever is left.
sub settle
{
	my ($table) = @_;
	wait_for_writer($node);
	$node->safe_psql('postgres', "SELECT ctxstore.flush('$table')");
	return;
}

for my $table ('sealed', 'deferred')
{
	for my $victim ('writer', 'cluster')
	{
		my $prefix = "$table-$victim";
		my $clients = start_clients($node, $table, $prefix, 4, 3000);
		ok(wait_for_acks($clients, 200), "$prefix: sessions commit before the kill");
		if ($victim eq 'writer')
		{
			is(kill('KILL', writer_pid($node)), 1, "$prefix: the writer was killed");
		}
		else
		{
			kill9_cluster($node);
			$node->start;
		}
		my $acked = finish_clients($clients);
		settle($table);
		check_exactly_once($node, $table, $prefix, $acked, $prefix);
	}
}

# The cluster still writes both tables afterwards.
$node->safe_psql('postgres',
	"INSERT INTO sealed VALUES ('after', 1); INSERT INTO deferred VALUES ('after', 1)");
$node->safe_psql('postgres', "SELECT ctxstore.flush('deferred')");
is( $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM sealed WHERE id = 'after'), (SELECT count(*) FROM deferred WHERE id = 'after')"),
	'1|1',
	'both tables take new rows after the crashes');

# A clean shutdown seals (invariant 4): rows written with seal_on_insert off
# and never flushed are visible after a restart, before anything writes the
# store again.
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE unflushed (id text NOT NULL, n int) SERVER lake
  OPTIONS (uri '@{[ store_uri('memwal_crash_unflushed') ]}', seal_on_insert 'false',
           flush_interval '1h', cleanup_interval '0');
INSERT INTO unflushed VALUES ('before-shutdown', 1);
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM unflushed'),
	'0', 'unflushed rows are not visible before the shutdown');
$node->restart;
is($node->safe_psql('postgres', 'SELECT id FROM unflushed'),
	'before-shutdown', 'the writer sealed them when it shut down');

$node->stop;
done_testing();
