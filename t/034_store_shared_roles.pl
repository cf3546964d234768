# One store, many roles: two roles with different user mappings (one with the
# account key, one with a SAS token) write one Azurite store alternately.
# The writer keeps one resident writer and one shard claim for the store
# (claims stays 1) and every row lands once.  A role whose credentials cannot
# write the store (a read-only SAS token, a wrong key) has its commits refused
# although the store is open with another role's working credentials.  Both
# roles' commits queued in one writer round are both written.  A store whose
# own credentials expired is not reopened under the round that holds it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('shared_roles');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ctxstore'\n");
$node->start;

my $uri = store_uri('az', 'shared_roles');
my $account = emu('AZ_ACCOUNT');
my $endpoint = emu('AZ_ENDPOINT');
my $sas = az_account_sas('rwdlac');
my $read_sas = az_account_sas('rl');
my $wrong_key = 'V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk=';
my $key = emu('AZ_KEY');

$node->safe_psql('postgres', qq{
CREATE EXTENSION ctxstore;
CREATE SERVER az FOREIGN DATA WRAPPER ctxstore OPTIONS (endpoint '$endpoint');
CREATE FOREIGN TABLE shared (id text NOT NULL, role text, n int)
  SERVER az OPTIONS (uri '$uri', merge_after_generations '0', cleanup_interval '0');
CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE carol LOGIN; CREATE ROLE dave LOGIN;
GRANT SELECT, INSERT ON shared TO alice, bob, carol, dave;
CREATE USER MAPPING FOR CURRENT_USER SERVER az OPTIONS (account_name '$account', account_key '$key');
CREATE USER MAPPING FOR alice SERVER az OPTIONS (account_name '$account', account_key '$key');
CREATE USER MAPPING FOR bob SERVER az OPTIONS (account_name '$account', sas_token '$sas');
CREATE USER MAPPING FOR carol SERVER az OPTIONS (account_name '$account', sas_token '$read_sas');
CREATE USER MAPPING FOR dave SERVER az OPTIONS (account_name '$account', account_key '$wrong_key');
});

# 50 commits each, alternating.
for my $i (1 .. 50)
{
	for my $who ('alice', 'bob')
	{
		$node->safe_psql('postgres', "SET ROLE $who; INSERT INTO shared VALUES ('$who-$i', '$who', $i)");
	}
}
my $stats = sub {
	$node->safe_psql('postgres', "SELECT s->'writer'->>'claims', s->'writer'->>'fenced' FROM ctxstore.stats('shared') s");
};
is($stats->(), '1|0', '100 alternating commits of two roles: one claim, never fenced');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM shared'),
	'100|100', 'every row present once');
is($node->safe_psql('postgres', "SELECT role, count(*), sum(n) FROM shared GROUP BY role ORDER BY role"),
	"alice|50|1275\nbob|50|1275", 'each role wrote its 50 rows');

# Credentials that cannot write are refused, though the store is open with
# working ones; nothing of theirs is written, the claim stays.
for my $who ('carol', 'dave')
{
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET ROLE $who; INSERT INTO shared VALUES ('$who-1', '$who', 1)");
	isnt($rc, 0, "$who cannot commit with credentials that cannot write the store");
	# carol's token reads, so only the writer's check stops her; dave's key
	# fails at once, on the backend's first read.
	like($err, $who eq 'carol' ? qr/credentials of this request's user mapping cannot write store az:.*HTTP 403/s
		: qr/HTTP 403/, "$who: refused by the object store");
	unlike($err, qr/\Q$wrong_key\E|sig=/, "$who: the error shows no secret");
}
# carol may still read with her read-only token.
is($node->safe_psql('postgres', 'SET ROLE carol; SELECT count(*) FROM shared'), '100',
	'a read-only token still reads');
is($node->safe_psql('postgres', "SELECT count(*) FROM shared WHERE role IN ('carol', 'dave')"),
	'0', 'no row of a refused role was written');
is($stats->(), '1|0', 'refused roles changed nothing about the claim');

# The check is remembered: bob's later commits write no check object again.
my $log_before = slurp_file($node->logfile);
my $admitted = () = $log_before =~ /admits the credentials of another user mapping/g;
$node->safe_psql('postgres', "SET ROLE bob; INSERT INTO shared VALUES ('bob-51', 'bob', 51)");
my $admitted_after = () = slurp_file($node->logfile) =~ /admits the credentials of another user mapping/g;
is($admitted_after, $admitted, 'a checked mapping is not checked again at once');
is($admitted, 1, 'bob was checked once for 50 commits')
  or diag(join("\n", grep { /admits the credentials|reopening store|ctxstore writer/ }
		split /\n/, $log_before));

# Both roles' commits in one writer round: the writer is stopped until both
# wait for it.  Their requests carry different options (one group each) but
# resolve to the one open store, whose shard writer has one staging area:
# both rows must be written, not only the last group's.
{
	my $writer = writer_pid($node);
	kill 'STOP', $writer;
	my %sessions = map {
		$_ => (waiting_commit($node,
			"SET ROLE $_; INSERT INTO shared VALUES ('$_-round', '$_', 0);"))[0]
	} ('alice', 'bob');
	kill 'CONT', $writer;
	for my $who (sort keys %sessions)
	{
		$sessions{$who}->query('SELECT 1');
		is($sessions{$who}->{stderr}, '', "$who: a commit in one round with another role's is acknowledged");
		$sessions{$who}->quit;
	}
}
is($node->safe_psql('postgres',
	"SELECT string_agg(id, ',' ORDER BY id) FROM shared WHERE id LIKE '%-round'"),
	'alice-round,bob-round', 'both roles\' rows of one round are written');

# A store whose handle's own credentials were refused is marked for
# reopening with the next request's options.  A round where the refused
# role's commit comes first and finds the store, and another role's commit
# comes next, must not close the store under the first group (which holds
# it): the writer survives, each commit has an outcome, and the next
# commit, in a later round, reopens the store.  erin's SAS token expires
# soon after erin opens the new store; her transactions began before it did
# (the backend may read the store with her token), their COMMITs come after.
{
	my $expires_in = 15;
	my $expires_at = time + $expires_in;
	my $short_sas = az_account_sas('rwdlac', $expires_in);
	my $reopen_uri = store_uri('az', 'shared_roles_reopen');
	$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE reopened (id text NOT NULL, role text)
  SERVER az OPTIONS (uri '$reopen_uri', merge_after_generations '0', cleanup_interval '0');
CREATE ROLE erin LOGIN;
GRANT SELECT, INSERT ON reopened TO alice, erin;
CREATE USER MAPPING FOR erin SERVER az OPTIONS (account_name '$account', sas_token '$short_sas');
});
	# erin's commit is the store's first: its handle is opened with her token.
	$node->safe_psql('postgres', "SET ROLE erin; INSERT INTO reopened VALUES ('erin-1', 'erin')");
	my @erin = map {
		my $bg = $node->background_psql('postgres', on_error_stop => 0);
		$bg->query_safe('\set VERBOSITY verbose');
		$bg->query_safe("SET ROLE erin; BEGIN; INSERT INTO reopened VALUES ('erin-$_', 'erin')");
		$bg
	} (2, 3);
	ok(time < $expires_at, "erin's transactions began before her token expired");
	sleep(1) while time <= $expires_at + 1;

	my $sqlstate = sub { my ($err) = @_; ($err =~ /ERROR:  (\w{5}):/)[0] // "none: $err" };
	$erin[0]->query('COMMIT');
	is($sqlstate->($erin[0]->{stderr}), '28000',
		"erin's commit after her token expired is refused (the store is marked for reopening)");
	$erin[0]->quit;

	my $writer = writer_pid($node);
	my $log_offset = -s $node->logfile;
	kill 'STOP', $writer;
	# erin's COMMIT first, so her group (the handle's own options) finds
	# the store first and holds it; alice's group comes second.
	my $erin_pid = $erin[1]->query_safe('SELECT pg_backend_pid()');
	$erin[1]->query_until(qr/started/, "\\echo started\nCOMMIT;\n");
	$node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $erin_pid")
	  or die "erin's COMMIT never waited for the writer";
	my ($alice) = waiting_commit($node,
		"\\set VERBOSITY verbose\nSET ROLE alice; INSERT INTO reopened VALUES ('alice-round', 'alice');");
	kill 'CONT', $writer;

	# Both ride on the handle opened with erin's expired token (alice's
	# credentials are checked, then the store is used as it is open): both
	# are refused by the object store.
	for my $s ([ 'erin', $erin[1] ], [ 'alice', $alice ])
	{
		my ($who, $bg) = @$s;
		$bg->query('SELECT 1');
		is($sqlstate->($bg->{stderr}), '28000',
			"$who: a commit of the round on the store marked for reopening is refused cleanly");
		$bg->quit;
	}
	is(writer_pid($node),
		$writer, 'the writer survived the round');
	unlike(substr(slurp_file($node->logfile), $log_offset), qr/terminated by signal/,
		'no process was terminated by a signal');

	# The next round finds the store not busy: reopened with alice's key.
	is(psql_as($node, 'alice', "INSERT INTO reopened VALUES ('alice-next', 'alice')"), '',
		"alice's next commit reopens the store and succeeds");
	is($node->safe_psql('postgres', "SELECT string_agg(id, ',' ORDER BY id) FROM reopened"),
		'alice-next,erin-1', 'the rows written are the ones acknowledged');
}

$node->stop;
done_testing();
