package Webtune::Hello;
# A preloaded mod_perl 2 response handler (PerlModule), mounted at /hello by handlers.conf.
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

sub handler {
    my $r = shift;
    $r->content_type('text/plain');
    my $rows = scalar @Webtune::Data::ROWS;
    $r->print("hello from handler, pid $$, $rows rows\n");
    return Apache2::Const::OK;
}

1;
