# Storage invariant 9: every object carries a checksum, and a damaged object
# gives an error naming it (SQLSTATE XX001, with a hint), never a crash or
# wrong rows.  The damaged store's neighbours keep working, and
# ctxstore-inspect's verify finds the same object.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = memwal_node('corruption');
my $uri = store_uri('corrupt_me');
my $other_uri = store_uri('intact');
(my $dir = $uri) =~ s{^file://}{};

$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE damaged (id text NOT NULL, body text) SERVER lake OPTIONS (uri '$uri');
CREATE FOREIGN TABLE intact (id text NOT NULL, body text) SERVER lake OPTIONS (uri '$other_uri');
INSERT INTO damaged SELECT 'k' || g, repeat('payload ', 50) || g FROM generate_series(1, 2000) g;
INSERT INTO intact VALUES ('a', 'fine');
SELECT ctxstore.merge_wal('damaged');
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM damaged'), '2000',
	'the store reads back before the damage');

# Flip one byte a third of the way into every data fragment (inside a column
# chunk; the query below reads every column).
my @fragments = glob("$dir/data/*.parquet");
ok(@fragments > 0, 'the store has fragments on disk');
for my $f (@fragments)
{
	open(my $fh, '+<:raw', $f) or die "open $f: $!";
	my $size = -s $f;
	seek($fh, int($size / 3), 0);
	read($fh, my $byte, 1);
	seek($fh, int($size / 3), 0);
	print $fh chr(ord($byte) ^ 0x5a);
	close($fh);
}

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*), max(id), max(body) FROM damaged");
isnt($ret, 0, 'reading the damaged store fails');
like($stderr, qr/XX001/, 'with SQLSTATE XX001 (data_corrupted)');
like($stderr, qr{data/[0-9a-f]{32}\.parquet}, 'the error names the damaged object');
like($stderr, qr/ctxstore-inspect URI verify/, 'the hint says how to check the store');
unlike($stdout, qr/\d/, 'no rows came back');

is($node->safe_psql('postgres', "SELECT body FROM intact"), 'fine',
	'another store of the same cluster still reads');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server did not crash');

my $inspect = $node->config_data('--bindir') . '/ctxstore-inspect';
my ($out, $err);
my $rc = IPC::Run::run([ $inspect, $uri, 'verify' ], '>', \$out, '2>', \$err);
is($? >> 8, 3, 'ctxstore-inspect verify exits 3 on a damaged store');
like($out, qr{BAD .*data/[0-9a-f]{32}\.parquet}, 'and names the damaged fragment');

$node->stop;
done_testing();
