# No secret in any log line, error (message, detail, hint, context), EXPLAIN
# or ctxstore.stats output, after runs that fail in every way an object
# store can fail: refused credentials (S3 key, Azure account key, forged
# SAS token), an endpoint whose connections are reset (fault proxy), requests
# that time out, and errors the writer worker meets while committing (503,
# 403 from the proxy).  The server logs at DEBUG1 with verbose errors, so
# whatever any process says ends up in the log that is searched.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxStores;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Distinctive values, so that any leak is found by a plain search.
my $s3_secret = 'S3secretZq9XK/abcdEFGH1234+wxyz0987';
my $s3_token = 'S3sessionTokenZq9XKlmnop';
my $az_wrong_key = 'QXpXcm9uZ0tleVpxOVhLZm9yVGVzdHNPbmx5MDEyMzQ1Njc4OQ==';
my $sas_sig = 'SasSigZq9XKqrstuvw';
my $sas = "sv=2021-08-06&ss=b&srt=co&sp=rwdlc&se=2030-01-01T00:00:00Z&sig=$sas_sig";
my $az_key = emu('AZ_KEY');    # the valid key, as secret as any
my @secrets = ($s3_secret, $s3_token, $az_wrong_key, $sas_sig, $az_key);

my $node = PostgreSQL::Test::Cluster->new('store_secrets');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ctxstore'
log_min_messages = debug1
log_error_verbosity = verbose
log_statement = none
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ctxstore');

my $seen = '';    # everything psql printed, errors included

# Runs $sql with verbose errors; returns (exit code, stdout, stderr).
sub run_sql
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	$seen .= "$out\n$err\n";
	return ($rc, $out, $err);
}

# A server, its user mapping and a table on store $name.
sub setup
{
	my ($kind, $srv, $name, %opt) = @_;
	my $uri = store_uri($kind, $name);
	$node->safe_psql('postgres', server_sql($kind, $srv, %opt)
		  . "CREATE FOREIGN TABLE t_$srv (id text NOT NULL, n int) SERVER $srv OPTIONS (uri '$uri');");
	return $uri;
}

# Every path, each of which fails here.
sub every_path
{
	my ($srv, $prefix) = @_;
	my @errors;
	for my $sql ("SELECT * FROM t_$srv", "INSERT INTO t_$srv VALUES ('x', 1)",
		"EXPLAIN (VERBOSE) SELECT * FROM t_$srv", "SELECT ctxstore.stats('t_$srv')",
		"SELECT * FROM ctxstore.versions('t_$srv')",
		"IMPORT FOREIGN SCHEMA x FROM SERVER $srv INTO public OPTIONS (uri '$prefix')")
	{
		my ($rc, $out, $err) = run_sql($sql);
		push @errors, $err if $err =~ /ERROR:/;
	}
	return @errors;
}

sub prefix_of { my ($uri) = @_; $uri =~ s{/[^/]+$}{}; return $uri }

# Refused credentials.
my $uri = setup('s3', 's3_wrong', 'secrets/s3_wrong',
	mapping => {
		access_key_id => 'AKIAWRONGKEYID000000',
		secret_access_key => $s3_secret,
		session_token => $s3_token
	});
my @errors = every_path('s3_wrong', prefix_of($uri));
is(scalar(grep { /HTTP 403/ } @errors), 6, 'S3: every path failed on the refused key');

$uri = setup('az', 'az_wrong', 'secrets/az_wrong', mapping => { account_key => $az_wrong_key });
@errors = every_path('az_wrong', prefix_of($uri));
is(scalar(grep { /HTTP 403/ } @errors), 6, 'Azure: every path failed on the refused key');

$uri = setup('az', 'az_sas', 'secrets/az_sas',
	mapping => { account_key => undef, sas_token => $sas });
@errors = every_path('az_sas', prefix_of($uri));
is(scalar(grep { /HTTP 403/ } @errors), 6, 'Azure: every path failed on the forged SAS token');

# Connections reset by the proxy in front of Azurite.
proxy_clear('AZ');
$uri = setup('az', 'az_reset', 'secrets/az_reset',
	server => {
		endpoint => proxy_endpoint('AZ'),
		retry_max_attempts => '2',
		retry_max_seconds => '1'
	});
proxy_fault('AZ', action => 'reset', count => 1000);
@errors = every_path('az_reset', prefix_of($uri));
is(scalar(@errors), 6, 'every path failed on reset connections');
proxy_clear('AZ');

# Requests that time out.
$uri = setup('az', 'az_slow', 'secrets/az_slow',
	server => {
		endpoint => proxy_endpoint('AZ'),
		request_timeout => '300ms',
		retry_max_attempts => '2',
		retry_max_seconds => '1'
	});
proxy_fault('AZ', action => 'delay', ms => 1500, count => 1000);
@errors = every_path('az_slow', prefix_of($uri));
is(scalar(grep { /timed out|timeout/i } @errors), 6, 'every path timed out');
proxy_clear('AZ');

# The writer worker fails to commit: the store answers 503, then 403.
setup('az', 'az_worker', 'secrets/az_worker', server => {
	endpoint => proxy_endpoint('AZ'),
	retry_max_attempts => '2',
	retry_max_seconds => '1'
});
my ($rc) = run_sql("INSERT INTO t_az_worker VALUES ('ok', 1)");
is($rc, 0, 'a write through the proxy works');
proxy_fault('AZ', action => 'status', status => 503, method => 'PUT', count => 1000);
(undef, undef, my $err) = run_sql("INSERT INTO t_az_worker VALUES ('x', 2)");
like($err, qr/HTTP 503/, "the worker's commit fails on 503");
proxy_clear('AZ');
proxy_fault('AZ', action => 'status', status => 403, code => 'AuthenticationFailed',
	method => 'PUT', count => 1000);
(undef, undef, $err) = run_sql("INSERT INTO t_az_worker VALUES ('x', 3)");
like($err, qr/HTTP 403/, "the worker's commit fails on 403");
proxy_clear('AZ');

# What succeeds shows no secret either: EXPLAIN and stats of a table whose
# mapping holds the valid key.
my ($erc, $explain) = run_sql('EXPLAIN (VERBOSE, FORMAT JSON) SELECT * FROM t_az_worker');
like($explain, qr/"Store": "az:/, 'EXPLAIN shows the store');
my ($src, $stats) = run_sql("SELECT ctxstore.stats('t_az_worker')");
like($stats, qr/"uri": "az:.*"version": [1-9]/, 'stats describe the store');

# Statements that carry a secret and fail, or are logged on purpose: the log
# never repeats them (no STATEMENT: line, no log_statement text).
my @refused = (
	"CREATE SERVER s_bad FOREIGN DATA WRAPPER ctxstore OPTIONS (secret_access_key '$s3_secret')",
	"CREATE USER MAPPING FOR CURRENT_USER SERVER s3_wrong OPTIONS (access_key_id 'AKIAX', secret_access_key '$s3_secret')",
	"CREATE SERVER s_half FOREIGN DATA WRAPPER ctxstore; CREATE USER MAPPING FOR CURRENT_USER SERVER s_half OPTIONS (secret_access_key '$s3_secret')",
	"CREATE USER MAPPING FOR CURRENT_USER SERVER s_half OPTIONS (account_name 'a', account_key '$az_key', sas_token '$sas')",
	"CREATE USER MAPPING FOR CURRENT_USER SERVER s_half OPTIONS (access_key_id 'AKIAX', secret_access_key '$s3_secret', bogus 'x')");
for my $sql (@refused)
{
	my ($rc, undef, $err) = run_sql($sql);
	like($err, qr/ERROR:/, "refused: " . substr($sql, 0, 60));
}
# A syntax error: psql itself shows the statement back to its user (LINE 1:),
# so only the server log is searched for this one.
my (undef, undef, $syntax) = $node->psql('postgres',
	"CREATE USER MAPPING FOR CURRENT_USER SERVER s_half OPTIONS (secret_access_key '$s3_secret'");
like($syntax, qr/syntax error/, 'refused: a statement with a secret and a syntax error');
($rc) = run_sql("SET log_statement = 'all'; SET log_min_duration_statement = 0; "
	  . "CREATE USER MAPPING FOR CURRENT_USER SERVER s_half OPTIONS (access_key_id 'AKIAX', secret_access_key '$s3_secret')");
is($rc, 0, 'a mapping created with log_statement = all');
my $log = slurp_file($node->logfile);
like($log, qr/is accepted only in a user mapping/, 'the refusals are in the log');
like($log, qr/already exists/, "PostgreSQL's own refusal is in the log");
like($log, qr/statement hidden by ctxstore/, 'log_statement shows that a statement was hidden');
unlike($log, qr/STATEMENT:\s+CREATE (SERVER s_bad|USER MAPPING)/, 'no refused statement is echoed');
like($log, qr/HTTP 503/, 'the server log holds the failures');
for my $i (0 .. $#secrets)
{
	unlike($seen, qr/\Q$secrets[$i]\E/, "secret $i appears in no output or error");
	unlike($log, qr/\Q$secrets[$i]\E/, "secret $i appears nowhere in the server log");
}
unlike($seen . $log, qr/Authorization:|x-amz-security-token:/i,
	'no request header appears anywhere');

$node->stop;
done_testing();
