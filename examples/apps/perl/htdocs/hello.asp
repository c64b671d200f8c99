<% my $n = 3; %>
<html><body>
<% for my $i (1 .. $n) { %>row <%= $i %> from Apache::ASP, pid <%= $$ %><br>
<% } %>
</body></html>
