# Independent readers agree: every fragment ctxstore writes (the MemWAL
# generations of the INSERTs below, then the base fragments a merge writes
# from them) is read by DuckDB and by hyparquet (t/parquet_readers.mjs), and
# every value of every row, the Parquet schema each reader reports and the
# column chunks' statistics must match what SELECT returns through ctxstore.
# The table has a column of every type of the type map, and rows with NULLs,
# empty values, multi-megabyte values, NaN and infinities, extreme dates and
# timestamps and long lists with NULL elements.  The readers come from npm (scripts/readers.sh, which
# scripts/test.sh runs; NODE_PATH names them).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use CxMemwal;
use File::Basename qw(basename);
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;

die "NODE_PATH names no readers: run bash scripts/readers.sh install (scripts/test.sh does)\n"
  unless -d ($ENV{NODE_PATH} // '') . '/hyparquet';

my $node = memwal_node('parquet_readers');
my $uri = store_uri('every_type');
(my $dir = $uri) =~ s{^file://}{};
my $work = $node->basedir;
my $script = "$FindBin::RealBin/parquet_readers.mjs";

sub sql { return $node->safe_psql('postgres', @_); }

# No count- or time-triggered merge and no cleanup: the test decides when
# generations become base fragments, and reads both.  The merge writes two
# base fragments, the first of them with two row groups (the writer cuts
# them at 65536 rows), like the generation of the 70000-row INSERT.
sql(qq{
CREATE FOREIGN TABLE every_type (
  id text NOT NULL, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, b bool,
  t text, vc varchar(20), bc char(8), by bytea, u uuid, d date, tm time,
  ts timestamp, tz timestamptz, js json, jb jsonb, n102 numeric(10,2),
  n305 numeric(30,5), n numeric, iv interval, af4 real[], af8 float8[],
  ai4 int4[], ai8 int8[], at text[], ip inet)
  SERVER lake OPTIONS (uri '$uri', merge_after_generations '0',
    cleanup_interval '0', flush_interval '0', target_rows_per_fragment '70000')
});

# Unix microseconds now, by the server's clock.
sub now_us
{
	return sql('SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::int8');
}

# Ordinary rows: every column set (b NULL every fifth row), values spread over
# each type's range.
sub ordinary_rows
{
	my ($prefix, $from, $to) = @_;
	return qq{
INSERT INTO every_type
SELECT '$prefix' || lpad(g::text, 4, '0'), (g * 397 % 65536 - 32768)::int2,
       g * 1000003 - 100000000, g * 9007199254740993, (g - 75) / 3.0 * 10 ^ (g % 60 - 30),
       (g - 75) / 7.0 * 10 ^ (g % 600 - 300), CASE WHEN g % 5 <> 0 THEN g % 2 = 0 END,
       repeat('ä€😀', g % 5) || g, 'v' || g, 'c' || g, decode(md5(g::text), 'hex'),
       md5(g::text)::uuid, date '2026-01-01' + (g - 75) * 977,
       time '00:00' + g * interval '9 min 13.123457 s',
       timestamp '1999-12-31 23:59:59.999999' + (g - 75) * interval '1717 days 1.000001 s',
       timestamptz '1970-01-01 00:00:00+00' + (g - 75) * interval '1 day 0.000003 s',
       json_build_object('g', g, 'k', 'v'), jsonb_build_object('g', g, 'l', jsonb_build_array(1, 2.50, 'x')),
       round((g - 75) * 1234.567, 2), (g - 75) * 123456789012345678.12345, (g - 75)::numeric / 7,
       make_interval(months => g - 75, days => 75 - g, secs => g / 3.0),
       ARRAY[g / 3.0, NULL, -g]::real[], ARRAY[g / 7.0]::float8[], ARRAY[g, NULL, -g],
       ARRAY[g * 10000000000], ARRAY['a' || g, NULL, ''],
       (CASE WHEN g % 2 = 0 THEN '10.0.' || g % 256 || '.1/24' ELSE '2001:db8::' || g END)::inet
  FROM generate_series($from, $to) g};
}

my $before = now_us();
sql(ordinary_rows('g', 1, 100));
sql(q{
INSERT INTO every_type (id) VALUES ('nulls');
INSERT INTO every_type (id, i2, i4, i8, f4, f8, b, t, vc, bc, by, js, jb, n, iv, af4, af8, ai4, ai8, at)
  VALUES ('empty', 0, 0, 0, 0, 0, false, '', '', '', '', '""', '{}', 0, '0', '{}', '{}', '{}', '{}', '{}');
INSERT INTO every_type (id, f4, f8, n, af4, af8)
  VALUES ('nan', 'NaN', 'NaN', 'NaN', '{NaN,Infinity,-Infinity,NULL}', '{NaN,Infinity,-Infinity,NULL}'),
         ('negzero', '-0', '-0', '-0', '{-0}', '{-0}'),
         ('tiny', '1.4e-45', '4.9e-324', ('0.' || repeat('0', 999) || '1')::numeric, '{1.4e-45}', '{4.9e-324}');
INSERT INTO every_type (id, f4, f8, n, d, ts, tz)
  VALUES ('inf', 'Infinity', 'Infinity', 'Infinity', 'infinity', 'infinity', 'infinity'),
         ('ninf', '-Infinity', '-Infinity', '-Infinity', '-infinity', '-infinity', '-infinity');
INSERT INTO every_type (id, i2, i4, i8, f4, f8, d, tm, ts, tz, n102, n305, iv)
  VALUES ('min', -32768, -2147483648, -9223372036854775808, '-3.4028235e38', '-1.7976931348623157e308',
          '4714-11-24 BC', '00:00:00', '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC',
          -99999999.99, '-9999999999999999999999999.99999',
          make_interval(months => '-2147483648'::int4, days => '-2147483648'::int4) + interval '-2562047788:00:54.775807'),
         ('max', 32767, 2147483647, 9223372036854775807, '3.4028235e38', '1.7976931348623157e308',
          '5874897-12-31', '24:00:00', '294246-12-31 23:59:59.999999', '294246-12-31 23:59:59.999999+00',
          99999999.99, '9999999999999999999999999.99999',
          make_interval(months => 2147483647, days => 2147483647) + interval '2562047788:00:54.775807');
INSERT INTO every_type (id, t, js, jb, at, ip)
  VALUES ('unicode', E'tab\there \\ "quoted" ' || chr(1) || ' 😀 ∀ ä', '{"s": "\u00e4 \ud83d\ude00", "n": 1.0e3}',
          '{"s": "\u00e4 \ud83d\ude00", "n": 1.0e3}', ARRAY[E'\n', '😀', NULL], '::1');
INSERT INTO every_type (id, af4, af8, ai4, ai8, at)
  SELECT 'lists', array_agg(CASE WHEN g % 7 <> 0 THEN g / 9.0 END)::real[],
         array_agg(CASE WHEN g % 11 <> 0 THEN g / 13.0 END), array_agg(CASE WHEN g % 3 <> 0 THEN g END),
         array_agg(CASE WHEN g % 5 <> 0 THEN g * 4294967296 END), array_agg(CASE WHEN g % 2 = 0 THEN 'e' || g END)
    FROM generate_series(1, 20000) g;
});
sql(q{
INSERT INTO every_type (id, t, by, js, jb, at)
  SELECT 'big', string_agg(md5(g::text), ''), decode(string_agg(md5(g::text), ''), 'hex'),
         json_build_object('s', string_agg(md5(g::text), '')), jsonb_build_object('s', string_agg(md5(g::text), '')),
         ARRAY[string_agg(md5(g::text), ''), NULL]
    FROM generate_series(1, 131072) g;
});
sql(ordinary_rows('h', 101, 150));
sql(q{
INSERT INTO every_type (id, i4, t, ai4)
  SELECT 'm' || lpad(g::text, 6, '0'), g, 'r' || g, ARRAY[g] FROM generate_series(1, 70000) g;
});
my $after = now_us();

# Every value is there through SELECT first: a reader can only agree with
# what ctxstore itself returns.
is(sql(q{SELECT count(*), length(max(t)) FROM every_type WHERE id IN ('big', 'nulls')}),
	'2|4194304', 'the rows read back through ctxstore, a 4 MB value among them');

# The Parquet bytes of the small generations travel inside the shard
# manifest version that sealed them (docs/FORMAT.md, "Inline generations"):
# a format 3 version starts its body, after the 12-byte frame header, with
# the u64 length of the carried bytes and the bytes (0: it carries none).
# Written out as files, they are read like every other fragment.
sub inline_generations
{
	my @files;
	mkdir "$work/inline";
	for my $version (glob("$dir/_shards/*/_versions/*.shard"))
	{
		open my $fh, '<:raw', $version or die "$version: $!";
		my $bytes = do { local $/; <$fh> };
		close $fh;
		next unless unpack('v', substr($bytes, 4, 2)) == 3;
		my $len = unpack('Q<', substr($bytes, 12, 8));
		next if $len == 0;    # a version listing older ones only
		my $parquet = substr($bytes, 20, $len);
		die "$version: the carried bytes are not a Parquet file"
		  unless substr($parquet, 0, 4) eq 'PAR1' && substr($parquet, -4) eq 'PAR1';
		(my $name = $version) =~ s{.*/(\d+)\.shard$}{$work/inline/$1.parquet};
		open my $out, '>:raw', $name or die "$name: $!";
		print $out $parquet;
		close $out;
		push @files, $name;
	}
	return @files;
}

my @inline = inline_generations();
ok(@inline > 0, 'the small INSERTs are sealed into inline generations');
my @generations = (glob("$dir/data/*.parquet"), @inline);
cmp_ok(scalar @generations, '>=', 5, 'the INSERTs are sealed into Parquet generations');
is(sql(q{SELECT ctxstore.merge_wal('every_type') > 0}), 't', 'merge_wal merges them');
my %was_generation = map { $_ => 1 } @generations;
my @base = grep { !$was_generation{$_} } glob("$dir/data/*.parquet");
cmp_ok(scalar @base, '>=', 2, 'the merge writes several base fragments');

# The job for the readers: the columns as the catalog spells their types,
# the rows as SELECT returns them (canonical form: parquet_readers.mjs sql),
# the fragments in two groups each holding every row once, and the window
# every commit time falls in (a minute of slack: commit times come from the
# writer's clock, which may run ahead of the backend's; docs/OPERATIONS.md
# "Clocks and cross-cluster order").
my @columns = map { my ($n, $t) = split /\|/; { name => $n, type => $t } } split /\n/, sql(q{
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'every_type'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum});
my %job = (
	table => 'every_type',
	columns => \@columns,
	expected => "$work/expected.json",
	groups => { generations => \@generations, base => \@base },
	commit_window => [ $before - 60_000_000, $after + 60_000_000 ],);

sub write_file
{
	my ($path, $text) = @_;
	open my $fh, '>', $path or die "$path: $!";
	print $fh $text;
	close $fh;
	return;
}

sub node
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'node', $script, @args ], '>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return ($? >> 8, $out . $err);
}

write_file("$work/job.json", encode_json(\%job));
my ($rc, $select) = node('sql', "$work/job.json");
is($rc, 0, 'parquet_readers.mjs writes the SELECT') or diag($select);
write_file("$work/expected.json", sql($select));

my $fragments = @generations + @base;
for my $reader ('duckdb', 'hyparquet')
{
	my ($rc, $out) = node('check', $reader, "$work/job.json");
	is($rc, 0, "$reader reads every value of every fragment as SELECT returns it")
	  or diag($out);
	like($out, qr/^$reader: $fragments fragments \((\d+) row groups\), \d+ values compared, 0 differences$/m,
		"$reader read all $fragments fragments");
	cmp_ok($out =~ /\((\d+) row groups\)/ ? $1 : 0, '>', $fragments,
		"$reader read several row groups of a fragment");
}

done_testing();
