<?php
// The php-fpm example: a little work per request.
$sum = 0;
for ($i = 0; $i < 20000; $i++) { $sum += $i % 7; }
echo "hello from php-fpm, pid " . getmypid() . ", sum $sum\n";
