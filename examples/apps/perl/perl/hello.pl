# A ModPerl::Registry script at /perl/hello.pl: compiled once per child, then cached.
use strict;
print "Content-Type: text/plain\r\n\r\n";
print "hello from registry, pid $$\n";
