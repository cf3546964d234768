# Helpers shared by the MemWAL TAP tests (t/04x_*.pl): clusters with ctxstore
# preloaded, clients that insert while printing which COMMITs were
# acknowledged, killing a whole cluster with SIGKILL, and the exactly-once
# check of acknowledged rows.
package CxMemwal;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(memwal_node store_uri start_scripts acked_statement start_clients acked_so_far
  wait_for_acks finish_clients kill9_cluster wait_until check_exactly_once
  stored_ids);

# Seconds any single wait of these tests may take before it counts as a hang.
my $deadline = $PostgreSQL::Test::Utils::timeout_default;

sub store_uri
{
	my ($name) = @_;
	my $root = $ENV{CTXSTORE_STORE_ROOT} // PostgreSQL::Test::Utils::tempdir();
	return "file://$root/$name";
}

# A started cluster with ctxstore preloaded, the extension and server "lake".
sub memwal_node
{
	my ($name, $extra_conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ctxstore'
max_connections = 40
restart_after_crash = on
log_min_messages = info
} . ($extra_conf // ''));
	$node->start;
	$node->safe_psql('postgres',
		'CREATE EXTENSION ctxstore; CREATE SERVER lake FOREIGN DATA WRAPPER ctxstore;');
	return $node;
}

# Polls $cond->() every 50 ms until it is true; false after the deadline.
sub wait_until
{
	my ($cond, $seconds) = @_;
	my $end = time + ($seconds // $deadline);
	while (time < $end)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return 0;
}

# Starts one psql session per script of @$scripts (SQL text), named
# "$prefix-<n>" in $node's directory; each prints what its script echoes.
# A session ends when its script does or when its connection is lost.
sub start_scripts
{
	my ($node, $prefix, $scripts) = @_;
	my @clients;
	for my $c (1 .. @$scripts)
	{
		my $base = $node->basedir . "/$prefix-$c";
		open my $fh, '>', "$base.sql" or die "$base.sql: $!";
		print $fh $scripts->[ $c - 1 ];
		close $fh;
		# Output to files: IPC::Run only moves scalar data while pumped.
		push @clients,
		  {
			out => "$base.out",
			run => IPC::Run::start(
				[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', "$base.sql" ],
				'>', "$base.out", '2>', "$base.err",
				IPC::Run::timeout($deadline))
		  };
	}
	return \@clients;
}

# psql lines that run $sql and print "ack $what" only if it succeeded.
sub acked_statement
{
	my ($sql, $what) = @_;
	return "$sql;\n\\if :ERROR\n\\else\n\\echo ack $what\n\\endif\n";
}

# Starts $nclients psql sessions, each inserting $per_client single-row
# transactions (id "$prefix-<client>-<i>") into $table and printing
# "ack <id>" only after a COMMIT that succeeded.
sub start_clients
{
	my ($node, $table, $prefix, $nclients, $per_client) = @_;
	my @scripts;
	for my $c (1 .. $nclients)
	{
		push @scripts, join('', map {
			acked_statement("INSERT INTO $table (id, n) VALUES ('$prefix-$c-$_', $_)",
				"$prefix-$c-$_")
		} 1 .. $per_client);
	}
	return start_scripts($node, $prefix, \@scripts);
}

# Acknowledged ids printed so far, as a hash.
sub acked_so_far
{
	my ($clients) = @_;
	my %acked;
	for my $c (@$clients)
	{
		next unless -e $c->{out};
		$acked{$_} = 1
		  for PostgreSQL::Test::Utils::slurp_file($c->{out}) =~ /^ack (\S+)$/mg;
	}
	return \%acked;
}

# Waits until the clients have had at least $n commits acknowledged.
sub wait_for_acks
{
	my ($clients, $n) = @_;
	return wait_until(sub { scalar(keys %{ acked_so_far($clients) }) >= $n });
}

# Waits (bounded) for every client to end; returns the acknowledged ids.
sub finish_clients
{
	my ($clients) = @_;
	my $hung = 0;
	for my $c (@$clients)
	{
		eval { $c->{run}->finish; };
		if ($@)
		{
			$hung++;
			$c->{run}->kill_kill;
		}
	}
	is($hung, 0, 'every client session ended in bounded time');
	return acked_so_far($clients);
}

# The pids of the postmaster's children.
sub children_of
{
	my ($ppid) = @_;
	my @pids;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line;
		# pid (comm) state ppid ...; comm may hold spaces and parentheses.
		push @pids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $ppid;
	}
	return @pids;
}

# SIGKILL to the postmaster and every process of the cluster at once (a
# machine crash, as far as the store is concerned); returns once all are gone.
sub kill9_cluster
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	my @pids = ($pm, children_of($pm));
	kill 'KILL', @pids;
	$node->kill9;
	wait_until(sub { !grep { kill(0, $_) } @pids })
	  or die 'processes of the killed cluster are still there';
	return;
}

# Ids of rows stored under $prefix, with their counts.
sub stored_ids
{
	my ($node, $table, $prefix) = @_;
	my %stored;
	$stored{$_}++
	  for split /\n/,
	  $node->safe_psql('postgres', "SELECT id FROM $table WHERE id LIKE '$prefix-%'");
	return \%stored;
}

# Every acknowledged id is stored, and no id is stored twice.
sub check_exactly_once
{
	my ($node, $table, $prefix, $acked, $what) = @_;
	my $stored = stored_ids($node, $table, $prefix);
	my @dups = grep { $stored->{$_} > 1 } keys %$stored;
	my @lost = grep { !$stored->{$_} } keys %$acked;
	cmp_ok(scalar(keys %$acked), '>', 0, "$what: some commits were acknowledged");
	is(scalar(@dups), 0, "$what: no row is stored twice")
	  or diag('duplicated: ' . join(' ', (sort @dups)[ 0 .. ($#dups < 9 ? $#dups : 9) ]));
	is(scalar(@lost), 0, "$what: every acknowledged row is stored")
	  or diag('lost: ' . join(' ', (sort @lost)[ 0 .. ($#lost < 9 ? $#lost : 9) ]));
	note("$what: " . scalar(keys %$acked) . ' acknowledged, '
		  . scalar(keys %$stored) . ' stored');
	return;
}

1;
