# Loaded once by the Apache parent (PerlRequire), before the children are forked: what is
# built here is shared copy-on-write by every child, as the mod_perl guide advises.
use strict;
use warnings;
use ModPerl::Registry ();
use Webtune::Hello ();

# A read-only table every request consults: 8 MiB shared by all the children.
package Webtune::Data;
our @ROWS = map { 'r' x 1024 } 1 .. 8192;

1;
