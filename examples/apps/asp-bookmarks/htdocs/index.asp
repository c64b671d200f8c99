<%
  # Every visit writes $Session: one more view, and a bookmark added (?add=URL, or one of
  # twenty pages in turn), the last ten kept. Nested data is stored back whole, as
  # Apache::ASP (MLDBM) sees only assignments at the top level of $Session.
  my $views = $Session->{views} + 1;
  my $add = $Request->QueryString('add') || '/page/' . ($views % 20);
  my @marks = ({ url => $add, at => time }, @{ $Session->{bookmarks} || [] });
  splice @marks, 10 if @marks > 10;
  $Session->{bookmarks} = \@marks;
  $Session->{views} = $views;
%>
<html><head><title><%= Bookmarks_Title() %></title></head><body>
<h1><%= Bookmarks_Title() %></h1>
<p>views in this session: <%= $views %>;
sessions started: <%= $Application->{sessions_started} %>;
live: <%= $Application->{sessions_live} %></p>
<ul>
<% for my $m (@marks) { %>  <li><a href="<%= $Server->HTMLEncode($m->{url}) %>"><%= $Server->HTMLEncode($m->{url}) %></a></li>
<% } %></ul>
</body></html>
