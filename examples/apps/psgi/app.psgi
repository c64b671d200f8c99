# The PSGI example for Starman.
use strict;
use warnings;
my @table = map { $_ x 16 } 1 .. 50000;    # built at load: shared with --preload-app

sub {
    my $total = 0;
    $total += length $table[$_ * 50] for 0 .. 999;
    return [200, ['Content-Type' => 'text/plain'], ["hello from psgi, pid $$, $total\n"]];
};
