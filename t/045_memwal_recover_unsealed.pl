# Deferred rows after a crash: with seal_on_insert 'false', rows are durable
# in the WAL when COMMIT returns and visible at the next seal.  After kill -9
# of the writer (which restarts the whole cluster) they become visible on
# their own, without a query, a write or ctxstore.flush(), on file://, s3://
# and az:// stores alike: the restarted writer starts a recovery worker that
# resolves the recorded table's server and user mapping as the role that
# wrote the rows (a non-superuser here) and flushes the store.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use CxStores qw(server_sql writer_pid wait_for_writer);
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('recover_unsealed');
$node->safe_psql('postgres', q{
CREATE ROLE app LOGIN;
GRANT pg_write_server_files, pg_read_server_files TO app;
});
my %uri;
for my $kind ('file', 's3', 'az')
{
	$uri{$kind} = CxStores::store_uri($kind, "recover_$kind");
	$node->safe_psql('postgres', server_sql($kind, "srv_$kind", user => 'app')
		  . qq{CREATE FOREIGN TABLE t_$kind (id text NOT NULL, n int) SERVER srv_$kind
  OPTIONS (uri '$uri{$kind}', seal_on_insert 'false', flush_interval '1h',
           cleanup_interval '0', merge_after_generations '0');
GRANT SELECT, INSERT ON t_$kind TO app;});
}

# Rows written by app and acknowledged, not sealed.
for my $kind ('file', 's3', 'az')
{
	$node->safe_psql('postgres', "SET ROLE app; INSERT INTO t_$kind SELECT 'r' || i, i FROM generate_series(1, 40) i");
	$node->safe_psql('postgres', "SET ROLE app; INSERT INTO t_$kind VALUES ('last', 41)");
	is($node->safe_psql('postgres', "SET ROLE app; SELECT count(*) FROM t_$kind"), '0',
		"$kind: acknowledged rows are not visible before a seal");
}

my $writer = writer_pid($node);
is(kill('KILL', $writer), 1, 'the writer was killed');

# Nothing but waiting: the restarted cluster's writer finds its records.
wait_for_writer($node, $writer);
for my $kind ('file', 's3', 'az')
{
	ok( wait_until(sub {
				$node->safe_psql('postgres', "SET ROLE app; SELECT count(*) FROM t_$kind") eq '41';
			}),
		"$kind: the 41 acknowledged rows become visible without any client action");
}
my $log = slurp_file($node->logfile);
for my $kind ('file', 's3', 'az')
{
	like($log, qr/ctxstore recovery: made 41 row\(s\) of store "\Q$uri{$kind}\E" visible/,
		"$kind: the recovery's flush reports the 41 rows its claim replayed");
}
is($node->safe_psql('postgres',
		"SET ROLE app; SELECT sum(n) FROM (SELECT n FROM t_file UNION ALL SELECT n FROM t_s3 UNION ALL SELECT n FROM t_az) x"),
	3 * 41 * 42 / 2, 'every row once');

# Recovered stores leave no record behind: another crash recovers nothing.
$writer = writer_pid($node);
my $before = () = slurp_file($node->logfile) =~ /ctxstore recovery: made/g;
kill('KILL', $writer);
wait_for_writer($node, $writer);
$node->safe_psql('postgres', 'SELECT pg_sleep(1)');
my $after = () = slurp_file($node->logfile) =~ /ctxstore recovery: made/g;
is($after, $before, 'a store whose rows were recovered is not recovered again');
unlike(slurp_file($node->logfile), qr/could not make the unsealed rows/, 'no recovery failed');

$node->stop;
done_testing();
