# A full local disk under a file:// store.  Mechanism: a real 20 MB tmpfs
# (CX_TEST_SMALL_DISK, which scripts/with-emulators.sh mounts, mode 1777,
# when the suite runs as root), filled by the store's own objects and by
# filler files; no failpoint.  Checked:
#   - an INSERT on the full disk fails with 53100 and its hint, and leaves
#     no object and no temporary file behind (the set of files under the
#     store is unchanged); the acknowledged rows still read;
#   - ctxstore.gc, deleting the generations a merge drained, frees enough
#     space on that disk for writes to resume, without a restart;
#   - full again, then a filler removed: writes resume, without a restart;
#   - a temporary file planted in the store is never counted or deleted by
#     GC as an object;
#   - at the end every acknowledged row is there once, with its value.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use File::Find;
use PostgreSQL::Test::Utils;
use Test::More;

my $disk = $ENV{CX_TEST_SMALL_DISK};
die "CX_TEST_SMALL_DISK is not set: run the TAP tests as root through "
  . "scripts/test.sh, whose scripts/with-emulators.sh mounts a small tmpfs\n"
  unless defined $disk && $disk ne '';

my $node = memwal_node('full_disk');
my $dir = "$disk/store_$$";
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# Automatic merges off, so that what fills the disk is known; GC may take
# anything no newest version references, at once.
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE t (id text NOT NULL, body text) SERVER lake
  OPTIONS (uri 'file://$dir', merge_after_generations '0', cleanup_interval '0',
           retain_versions '1', retain_interval '0', gc_grace '0');
});

# A deterministic, hardly compressible value of about $mb MB for $id.
sub value_sql
{
	my ($id, $mb) = @_;
	return "(SELECT string_agg(md5('$id' || g), '') FROM generate_series(1, $mb * 32768) g)";
}

my %acked;    # id => MB of its value

sub insert
{
	my ($id, $mb) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO t VALUES ('$id', " . value_sql($id, $mb) . ')');
	$acked{$id} = $mb if $rc == 0;
	return $rc == 0 ? '' : $err;
}

# Every regular file under the store, sorted.
sub store_files
{
	my @files;
	find({ wanted => sub { push @files, $File::Find::name if -f $_ }, no_chdir => 1 }, $dir);
	return join("\n", sort @files);
}

# Writes a filler file until the disk is full; returns its path.
my $fillers = 0;

sub fill_disk
{
	my $path = "$disk/filler_$$" . '_' . ++$fillers;
	open my $fh, '>', $path or die "$path: $!";
	binmode $fh;
	for my $chunk (1 << 20, 1 << 12)
	{
		my $block = 'x' x $chunk;
		while (syswrite($fh, $block)) { }
	}
	close $fh;
	return $path;
}

sub is_full_disk_error
{
	my ($err, $what) = @_;
	like($err, qr/ERROR:  53100: .*No space left on device/s, "$what: 53100, the disk named");
	like($err, qr/HINT:  The disk or quota holding the store is full; free space, then retry\./,
		"$what: ... with the hint");
	return;
}

sub no_restart
{
	my ($what) = @_;
	is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started,
		"$what, without a restart");
	return;
}

# Four commits of about 3 MB each, merged: the drained generations are
# garbage GC can free.
is(insert("big$_", 3), '', "big$_ inserted") for 1 .. 4;
$node->safe_psql('postgres', "SELECT ctxstore.merge_wal('t')");

my $planted = "$dir/data/.planted.parquet.tmp.0123456789abcdef";
open my $fh, '>', $planted or die "$planted: $!";
print $fh 'not an object';
close $fh;

my $filler = fill_disk();
my $before = store_files();
is_full_disk_error(insert('small1', 0.01), 'an INSERT on the full disk');
is(store_files(), $before, '... left no object and no temporary file in the store');
is($node->safe_psql('postgres', 'SELECT string_agg(id, \',\' ORDER BY id) FROM t'),
	'big1,big2,big3,big4', '... and the acknowledged rows still read');

my $gc = $node->safe_psql('postgres',
	q{SELECT (r->>'objects_deleted') || ' ' || (r->>'bytes_deleted') FROM ctxstore.gc('t') r});
my ($deleted, $bytes) = split / /, $gc;
cmp_ok($bytes, '>', 4 << 20, "GC on the full disk freed $deleted objects, $bytes bytes");
ok(-e $planted, '... and left the planted temporary file alone');
is(insert('small1', 0.01), '', 'after GC an INSERT succeeds');
no_restart('after GC');

my $filler2 = fill_disk();
is_full_disk_error(insert('small2', 0.01), 'an INSERT on the disk full again');
unlink $filler, $filler2;
is(insert('small2', 0.01), '', 'with the fillers removed an INSERT succeeds');
no_restart('after the fillers went');

# GC's listing is the same with and without the planted temporary file.
my $listed_sql = q{SELECT r->>'objects_listed' FROM ctxstore.gc('t', true) r};
my $listed = $node->safe_psql('postgres', $listed_sql);
unlink $planted or die "$planted: $!";
is($node->safe_psql('postgres', $listed_sql), $listed,
	'GC never listed the temporary file as an object');

my $expected = join(',', map { "$_:" . int($acked{$_} * 32768) * 32 } sort keys %acked);
is($node->safe_psql('postgres',
		q{SELECT string_agg(id || ':' || length(body), ',' ORDER BY id) FROM t}),
	$expected, 'every acknowledged row once, at its length');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE body = ' . value_sql('big3', 3)
		  . " AND id = 'big3'"), '1', 'a value written before the disk filled is intact');

$node->stop;
done_testing();
