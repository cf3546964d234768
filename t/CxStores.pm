# CxStores.pm — the object-store side of the TAP tests: servers, user
# mappings and URIs for each kind of store (file://, s3:// against s3rver,
# az:// against Azurite), Azurite containers, and the fault proxies in front
# of both emulators.
#
# The emulators are the ones scripts/test.sh starts around the TAP suite
# (scripts/emulators.sh documents the CX_TEST_* variables).  A test that
# needs one dies when its variable is missing: these tests exist to cover the
# object stores, so they never skip them.
#
# Loadable outside a TAP test too (bench/objstore.sh creates its Azurite
# container with az_create_container), so it loads no test framework itself.
package CxStores;

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256);
use Exporter 'import';
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use MIME::Base64;
use POSIX qw(strftime);

our @EXPORT = qw(emu store_uri file_table server_sql proxy_fault proxy_clear proxy_stat
  proxy_endpoint az_account_sas psql_as waiting_commit writer_pid wait_for_writer poll_until_true);

# Per test file, so that files sharing the emulators never share a store.
my $run = "t$$";
my ($root, $container);

# The value of CX_TEST_<name>, or death.
sub emu
{
	my ($name) = @_;
	my $v = $ENV{"CX_TEST_$name"};
	die "CX_TEST_$name is not set: run the TAP tests through scripts/test.sh, "
	  . "which starts the object-store emulators\n"
	  unless defined $v && $v ne '';
	return $v;
}

# Signs and sends Azure's Create Container (SharedKey), as any Azure tool
# would; 201 created, 409 already there.
sub az_create_container
{
	my ($name) = @_;
	my ($endpoint, $account, $key) =
	  (emu('AZ_ENDPOINT'), emu('AZ_ACCOUNT'), emu('AZ_KEY'));
	my $url = "$endpoint/$name?restype=container";
	my ($path) = $url =~ m{^https?://[^/]+(/[^?]*)};
	my $date = strftime('%a, %d %b %Y %H:%M:%S GMT', gmtime);
	my $to_sign = join("\n",
		'PUT', ('') x 11,
		"x-ms-date:$date", 'x-ms-version:2021-08-06',
		"/$account$path", 'restype:container');
	my $sig = encode_base64(hmac_sha256($to_sign, decode_base64($key)), '');
	my $r = HTTP::Tiny->new->request(
		'PUT', $url,
		{
			headers => {
				'x-ms-date' => $date,
				'x-ms-version' => '2021-08-06',
				Authorization => "SharedKey $account:$sig"
			},
			content => ''
		});
	die "creating Azurite container $name: $r->{status} $r->{content}\n"
	  unless $r->{status} == 201 || $r->{status} == 409;
	return;
}

# An account SAS token for Azurite's Blob service with permissions $perms
# (e.g. 'rwdlac', or 'rl' to read only), signed as "Create an account SAS"
# (version 2020-12-06 and later) prescribes, valid for $expires_in seconds
# (a day if not given).
sub az_account_sas
{
	my ($perms, $expires_in) = @_;
	my $se = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime(time + ($expires_in // 86400)));
	my $to_sign = join("\n", emu('AZ_ACCOUNT'), $perms, 'b', 'sco', '', $se, '',
		'https,http', '2021-08-06', '', '');
	my $sig = encode_base64(hmac_sha256($to_sign, decode_base64(emu('AZ_KEY'))), '');
	my $enc = sub { my ($v) = @_; $v =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord $1)/ge; $v };
	return "sv=2021-08-06&ss=b&srt=sco&sp=$perms&se=" . $enc->($se)
	  . '&spr=https,http&sig=' . $enc->($sig);
}

# Runs $sql on $node as role $user (verbose errors); returns stdout, or
# "ERROR <sqlstate>: <stderr>".
sub psql_as
{
	my ($node, $user, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $user ]);
	return $out if $rc == 0;
	my ($state) = $err =~ /ERROR:  (\w{5}):/;
	return 'ERROR ' . ($state // '?') . ": $err";
}

# The URI of store $name of a kind: file, s3 or az.
sub store_uri
{
	my ($kind, $name) = @_;
	if ($kind eq 'file')
	{
		$root //= $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
		return "file://$root/$run/$name";
	}
	return 's3://' . emu('S3_BUCKET') . "/$run/$name" if $kind eq 's3';
	die "unknown store kind $kind\n" unless $kind eq 'az';
	if (!defined $container)
	{
		$container = "cx-$run";
		az_create_container($container);
	}
	return "az://$container/$name";
}

# A foreign table (id text NOT NULL, n int) of server lake on a new file://
# store of $node; %opt are table options.  Returns the store's URI.
sub file_table
{
	my ($node, $name, %opt) = @_;
	my $uri = store_uri('file', $name);
	my $opts = join('', map { ", $_ '$opt{$_}'" } sort keys %opt);
	$node->safe_psql('postgres',
		"CREATE FOREIGN TABLE $name (id text NOT NULL, n int) SERVER lake
		 OPTIONS (uri '$uri'$opts)");
	return $uri;
}

sub options_sql
{
	my (%o) = @_;
	my @set = map { "$_ '$o{$_}'" } grep { defined $o{$_} } sort keys %o;
	return @set ? 'OPTIONS (' . join(', ', @set) . ')' : '';
}

# The endpoint of an emulator (S3 or AZ), or of the fault proxy in front of it.
sub proxy_endpoint
{
	my ($which) = @_;
	return emu("${which}_PROXY");
}

# SQL creating server $name for a kind of store, and a user mapping for
# $user (default CURRENT_USER) with the emulator's credentials.  %opt:
#   server  => { option => value, ... }   added to / replacing the defaults
#   mapping => { option => value, ... }   likewise (undef removes one)
# s3 servers default to conditional_put 'off' (s3rver ignores If-None-Match).
sub server_sql
{
	my ($kind, $name, %opt) = @_;
	my (%server, %mapping);
	if ($kind eq 's3')
	{
		%server = (endpoint => emu('S3_ENDPOINT'), conditional_put => 'off');
		%mapping = (
			access_key_id => emu('S3_ACCESS_KEY'),
			secret_access_key => emu('S3_SECRET_KEY'));
	}
	elsif ($kind eq 'az')
	{
		%server = (endpoint => emu('AZ_ENDPOINT'));
		%mapping = (
			account_name => emu('AZ_ACCOUNT'),
			account_key => emu('AZ_KEY'));
	}
	%server = (%server, %{ $opt{server} // {} });
	%mapping = (%mapping, %{ $opt{mapping} // {} });
	my $user = $opt{user} // 'CURRENT_USER';
	my $sql = "CREATE SERVER $name FOREIGN DATA WRAPPER ctxstore "
	  . options_sql(%server) . ";\n";
	$sql .= "CREATE USER MAPPING FOR $user SERVER $name "
	  . options_sql(%mapping) . ";\n"
	  if $kind ne 'file';
	return $sql;
}

sub proxy_ctl
{
	my ($which, $method, $path, $body) = @_;
	my $r = HTTP::Tiny->new->request(
		$method,
		emu("${which}_PROXY_CTL") . $path,
		{
			headers => { 'content-type' => 'application/json' },
			content => $body // ''
		});
	die "fault proxy $which $method $path: $r->{status} $r->{content}\n"
	  unless $r->{success};
	return $r->{content};
}

# A background session of $node whose COMMIT of $sql (psql input) now
# waits for the writer worker.  Returns the session and its backend pid.
sub waiting_commit
{
	my ($node, $sql) = @_;
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	$bg->query_until(qr/started/, "\\echo started\n$sql\n");
	$node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid")
	  or die "the COMMIT of $sql never waited for the writer";
	return ($bg, $pid);
}

# The pid of the writer worker that takes requests, or '' while none does.
# It comes from ctxstore.workers, not pg_stat_activity: a restarted worker is
# listed there as soon as it connects, before it took the writer role, and a
# COMMIT in between fails with "the ctxstore writer worker is not running".
sub writer_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM ctxstore.workers WHERE kind = 'writer' AND pid IS NOT NULL");
}

# Polls $node (database postgres) every 100 ms until $query returns true;
# false after the test timeout.  Unlike poll_query_until it passes the query
# on psql's command line: while a cluster restarts after a crash, psql can
# exit before it reads its input, and poll_query_until's write to it then
# dies with "Broken pipe".
sub poll_until_true
{
	my ($node, $query) = @_;
	my $end = time + ($PostgreSQL::Test::Utils::timeout_default // 180);
	while (time < $end)
	{
		my ($out, $err) = ('', '');
		IPC::Run::run([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $query ],
			'<', '/dev/null', '>', \$out, '2>', \$err);
		return 1 if $out =~ /^t$/m;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# Waits (bounded) until a writer other than $old (any, if $old is empty)
# takes requests; returns its pid.
sub wait_for_writer
{
	my ($node, $old) = @_;
	my $other = $old ? "AND pid <> $old" : '';
	poll_until_true($node,
		"SELECT count(*) = 1 FROM ctxstore.workers WHERE kind = 'writer' AND pid IS NOT NULL $other")
	  or die 'the ctxstore writer did not come back';
	return writer_pid($node);
}

# Arms a rule in the fault proxy in front of S3 or AZ (faultproxy.js).
sub proxy_fault
{
	my ($which, %rule) = @_;
	proxy_ctl($which, 'POST', '/faults', encode_json(\%rule));
	return;
}

# Removes every rule and zeroes the counters.
sub proxy_clear
{
	my ($which) = @_;
	proxy_ctl($which, 'DELETE', '/faults');
	proxy_ctl($which, 'POST', '/stats/reset');
	return;
}

# A counter of the proxy: requests, connections or fired.
sub proxy_stat
{
	my ($which, $name) = @_;
	return decode_json(proxy_ctl($which, 'GET', '/stats'))->{$name};
}

1;
