# A full local disk under a file:// store.  Mechanism: a real 20 MB tmpfs
# (CX_TEST_SMALL_DISK, which scripts/with-emulators.sh mounts, mode 1777,
# when the suite runs as root and may mount), filled by the store's own
# objects and by filler files.  Where it could not be mounted, the same
# checks run on an ordinary directory with the errno failpoint
# local.open_upload=enospc armed in every process (ctxstore.failpoints):
# "full" is the failpoint armed, "space freed" is it disarmed.  A diag line
# says which mechanism ran.  Checked:
#   - an INSERT on the full disk fails with 53100 and its hint, and leaves
#     no object and no temporary file behind (the set of files under the
#     store is unchanged); the acknowledged rows still read;
#   - ctxstore.gc, deleting the generations a merge drained, works on the
#     full disk (on the tmpfs freeing enough space for writes to resume),
#     and writes resume without a restart;
#   - full again, then a filler removed: writes resume, without a restart;
#   - a temporary file a crashed upload left is never counted as an object
#     by GC's listing, and GC deletes it once older than gc_grace (0 here);
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
my $tmpfs = defined $disk && $disk ne '';
diag($tmpfs
	? "full disk: a real 20 MB tmpfs at $disk"
	: 'full disk: CX_TEST_SMALL_DISK is unset (no tmpfs could be mounted), '
	  . 'so the errno failpoint local.open_upload=enospc stands for it');

my $node = memwal_node('full_disk');
my $dir = $tmpfs ? "$disk/store_$$" : store_uri("full_disk_$$") =~ s{^file://}{}r;
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
# Every file of the store but its dirty markers: a seal whose version put
# fails leaves its marker, an empty and complete object that only makes
# readers read the shard (docs/FORMAT.md, "Dirty markers").
sub store_files
{
	my @files;
	find({ wanted => sub { push @files, $File::Find::name if -f $_ && $File::Find::name !~ m{/_dirty/} }, no_chdir => 1 }, $dir);
	return join("\n", sort @files);
}

# Arms (or with '' disarms) failpoints in every process, the writer
# included (it applies a reload before its next request).
sub set_failpoints
{
	my ($spec) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET ctxstore.failpoints = '$spec'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		"SELECT current_setting('ctxstore.failpoints') = '$spec'")
	  or die "ctxstore.failpoints did not reach '$spec'";
	return;
}

# Writes a filler file until the disk is full; returns its path.
my $fillers = 0;

sub write_filler
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

# Makes the disk full: fillers on the tmpfs, the failpoint elsewhere.
# Returns what free_space takes.
sub fill_disk
{
	return write_filler() if $tmpfs;
	set_failpoints('local.open_upload=enospc');
	return;
}

# Frees the space fill_disk took: the fillers given, or the failpoint.
sub free_space
{
	my @fillers = grep { defined } @_;
	unlink @fillers if $tmpfs;
	set_failpoints('') unless $tmpfs;
	return;
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

# What a crash between creating an upload's temporary file and renaming
# it leaves (where O_TMPFILE is unavailable).
my $planted = "$dir/data/.planted.parquet.tmp.0123456789abcdef";

sub plant_temporary
{
	open my $fh, '>', $planted or die "$planted: $!";
	print $fh 'not an object';
	close $fh;
	return;
}
plant_temporary();

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
ok(!-e $planted, '... the temporary file a crashed upload left among them');
free_space() unless $tmpfs;    # on the tmpfs GC freed it
is(insert('small1', 0.01), '', 'after GC an INSERT succeeds');
no_restart('after GC');

my $filler2 = fill_disk();
is_full_disk_error(insert('small2', 0.01), 'an INSERT on the disk full again');
free_space($filler, $filler2);
is(insert('small2', 0.01), '', 'with the fillers removed an INSERT succeeds');
no_restart('after the fillers went');

# GC's listing (a dry run, which deletes nothing) is the same with and
# without a temporary file.
plant_temporary();
my $listed_sql = q{SELECT r->>'objects_listed' FROM ctxstore.gc('t', true) r};
my $listed = $node->safe_psql('postgres', $listed_sql);
ok(-e $planted, 'a dry run of GC left the temporary file');
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
