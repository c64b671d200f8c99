package Webtune::Hello;
# A preloaded mod_perl 2 response handler (PerlModule), mounted at /hello by handlers.conf.
# Optional query parameters make a heavier page: io=N waits N ms (a database's answer),
# kb=N pads the body to about N KiB (a page a slow client takes a while to read).
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);
use Time::HiRes ();

sub handler {
    my $r = shift;
    my %q = map { split /=/, $_, 2 } grep { /=/ } split /&/, ($r->args // '');
    my $io = ($q{io} // '') =~ /^(\d{1,4})$/ ? $1 : 0;
    my $kb = ($q{kb} // '') =~ /^(\d{1,5})$/ ? $1 : 0;
    Time::HiRes::sleep($io / 1000) if $io;
    $r->content_type('text/plain');
    my $rows = scalar @Webtune::Data::ROWS;
    $r->print("hello from handler, pid $$, $rows rows\n");
    $r->print(substr($Webtune::Data::ROWS[0], 0, 1023), "\n") for 1 .. $kb;
    return Apache2::Const::OK;
}

1;
