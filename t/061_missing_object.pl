# A missing object names itself and the version that lists it: a scan of a
# store that lacks a base fragment or a generation, and ctxstore.merge_wal
# of a shard that lacks a generation, fail with SQLSTATE 58P01, the object's
# key and the listing version in the detail, and a hint giving
# ctxstore-inspect's real verify syntax.  Also: a file:// store in a
# directory the server's user may not write refuses an INSERT with 42501.
use strict;
use warnings;

use File::Copy;
use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('missing');
my $uri = store_uri('missing_parts');
(my $dir = $uri) =~ s{^file://}{};
my $inspect = $node->config_data('--bindir') . '/ctxstore-inspect';

sub inspect
{
	my (@args) = @_;
	my ($out, $err);
	IPC::Run::run([ $inspect, $uri, @args ], '>', \$out, '2>', \$err);
	return ($? >> 8, $out . $err);
}

$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE t (id text NOT NULL, body text) SERVER lake OPTIONS (uri '$uri');
INSERT INTO t SELECT 'k' || g, 'v' || g FROM generate_series(1, 100) g;
SELECT ctxstore.merge_wal('t');
INSERT INTO t SELECT 'late' || g, md5(g::text) || md5((-g)::text) FROM generate_series(1, 5000) g;
});
# (The late rows make a generation too large to travel inline in its shard
# manifest: it is an object of its own, which can go missing.)
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '5100', 'base and generation read');
is($node->safe_psql('postgres', "SELECT ctxstore.pending_wal_generations('t')"), '1',
	'one generation is unmerged');
my $shard = $node->safe_psql('postgres', 'SHOW ctxstore.shard_id');

my (undef, $manifest) = inspect('manifest');
my ($base_version) = $manifest =~ /^version\s+(\d+)/m;
my ($fragment) = $manifest =~ m{^  (data/[0-9a-f]{32}\.parquet)  }m;
my (undef, $shard_out) = inspect('shard', $shard);
my ($shard_version) = $shard_out =~ /^version\s+(\d+)/m;
my ($gen) = $shard_out =~ m{^  gen \d+  (data/[0-9a-f]{32}\.parquet)}m;
ok($base_version && $fragment && $shard_version && $gen,
	'the base fragment and the generation are known');

# Runs $sql verbosely; returns stderr.
sub fails
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, "$sql fails");
	return $stderr;
}

my $hint = qr/HINT:  .*"ctxstore-inspect URI verify"/;

# Moves $key away for the duration of $check->().
sub without
{
	my ($key, $check) = @_;
	move("$dir/$key", "$dir/$key.away") or die "move $key: $!";
	$check->();
	move("$dir/$key.away", "$dir/$key") or die "restore $key: $!";
}

without($gen, sub {
	my $err = fails('SELECT count(*) FROM t');
	like($err, qr/ERROR:  58P01/, 'scan without a generation: 58P01');
	like($err, qr/DETAIL:  .*generation \d+ \(\Q$gen\E\) listed by shard \Q$shard\E version \Q$shard_version\E/,
		'the detail names the generation and the shard version listing it');
	like($err, $hint, 'the hint names ctxstore-inspect verify');

	$err = fails("SELECT ctxstore.merge_wal('t')");
	like($err, qr/ERROR:  58P01/, 'merge_wal without a generation: 58P01');
	like($err, qr/generation \d+ \(\Q$gen\E\) listed by shard \Q$shard\E version \d+/,
		'merge_wal names the generation and the shard version');
	like($err, $hint, 'merge_wal has the hint');

	my ($rc, $out) = inspect('verify');
	is($rc, 3, 'the hint\'s command exits 3');
	like($out, qr/\Q$gen\E is missing; shard \Q$shard\E version/, 'and names the generation');
});

without($fragment, sub {
	my $err = fails('SELECT count(*) FROM t');
	like($err, qr/ERROR:  58P01/, 'scan without a base fragment: 58P01');
	like($err, qr/DETAIL:  .*fragment \Q$fragment\E listed by base version \Q$base_version\E/,
		'the detail names the fragment and the base version listing it');
	like($err, $hint, 'the hint names ctxstore-inspect verify');
});

is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '5100',
	'the restored store reads again');

# A store directory the server's user may not write: 42501, not retried.
my $ro_uri = store_uri('read_only');
(my $ro_dir = $ro_uri) =~ s{^file://}{};
mkdir($ro_dir, 0555) or die "mkdir $ro_dir: $!";
chmod(0555, $ro_dir);
SKIP:
{
	skip 'the server user can write a 0555 directory (it is root)', 3 if -w $ro_dir;
	$node->safe_psql('postgres',
		"CREATE FOREIGN TABLE ro (id text NOT NULL) SERVER lake OPTIONS (uri '$ro_uri')");
	my $err = fails("INSERT INTO ro VALUES ('a')");
	like($err, qr/ERROR:  42501/, 'an unwritable file:// store: 42501');
	like($err, qr/DETAIL:  .*Permission denied/, 'the detail says why');
}

$node->stop;
done_testing();
