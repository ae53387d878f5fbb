# bin_perl.pl - Cache::Memcached::Fast (text protocol) against logcounterd,
# for tests/suite_binary.sh: incr and incr_multi on the shared counters
# PREFIXs0..s3 (written to OUT as "NAME ID" lines), get_multi of 300 keys
# made by incr_multi.  Usage: perl bin_perl.pl PORT OUT PREFIX
use strict;
use warnings;
use Cache::Memcached::Fast;
my ($port, $out, $pre) = @ARGV;
# timeouts for a loaded test machine (the default io_timeout is 1 s)
my $m = Cache::Memcached::Fast->new({ servers => ["127.0.0.1:$port"], io_timeout => 10, connect_timeout => 5 });
sub fail { print STDERR "perl: $_[0]\n"; exit 1 }
my $shared = $ENV{BIN_SHARED} // $pre; # the counters the text client uses too
my @names = map { "${shared}s$_" } 0 .. 3;
my @ids;
for my $r (1 .. 100) {
  for my $n (@names) {
    my $v = $m->incr($n, 1);
    fail("incr $n: " . ($v // 'undef')) unless defined $v && $v =~ /^\d+$/ && $v > 0;
    push @ids, "$n $v";
  }
  my @v = $m->incr_multi(map { [$_, 2] } @names);
  for my $i (0 .. 3) {
    fail("incr_multi $names[$i]: " . ($v[$i] // 'undef')) unless defined $v[$i] && $v[$i] =~ /^\d+$/;
    push @ids, "$names[$i] " . ($v[$i] - 1), "$names[$i] $v[$i]"; # a block of 2
  }
}
my @keys = map { "${pre}m$_" } 0 .. 299;
my @made = $m->incr_multi(map { [$keys[$_], $_ + 1] } 0 .. 299);
for my $i (0 .. 299) { fail("incr_multi $keys[$i]: " . ($made[$i] // 'undef')) unless defined $made[$i] && $made[$i] == $i + 1 }
my $h = $m->get_multi(@keys, "${pre}none");
fail('get_multi: ' . scalar(keys %$h) . ' keys') unless scalar(keys %$h) == 300;
for my $i (0 .. 299) { fail("get_multi $keys[$i]: $h->{$keys[$i]}") unless $h->{$keys[$i]} == $i + 1 }
open(my $f, '>', $out) or fail("$out: $!");
print $f "$_\n" for @ids;
close $f;
print 'perl Cache::Memcached::Fast: ' . scalar(@ids) . " ids (incr, incr_multi), get_multi 300 keys\n";
