<?php
// bin_php.php - php-memcached (libmemcached) against logcounterd, for
// tests/suite_binary.sh, in text (BIN 0) or binary (BIN 1) mode:
// allocations on the shared counters $BIN_SHARED s0..s3 (default PREFIX) (written to OUT as
// "NAME ID" lines), getMulti of 500 keys, a refused set that changes
// nothing; in binary mode increment($key, 1, 500) on a new name (500, then
// 501) and, with USER PASS, SASL PLAIN.
// Usage: php bin_php.php PORT OUT PREFIX BIN [USER PASS]
[$_, $port, $out, $pre, $bin] = $argv;
$user = $argv[5] ?? null;
$pass = $argv[6] ?? null;
$bin = $bin === '1';
function fail($m) { fwrite(STDERR, "php: $m\n"); exit(1); }
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, $bin);
// libmemcached's 1 s poll timeout is short on a loaded test machine
$m->setOption(Memcached::OPT_POLL_TIMEOUT, 10000);
$m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 10000);
if ($user !== null) $m->setSaslAuthData($user, $pass);
$m->addServer('127.0.0.1', (int)$port);
$ids = [];
for ($r = 0; $r < 200; $r++) {
  for ($i = 0; $i < 4; $i++) {
    $n = (getenv("BIN_SHARED") ?: $pre) . "s$i"; // shared with the text client
    $v = $m->increment($n, 1);
    if (!is_int($v) || $v <= 0) fail("increment $n: " . var_export($v, true) . ' ' . $m->getResultMessage());
    $ids[] = "$n $v";
  }
}
$mode = $bin ? 'binary' : 'text';
if ($bin) {
  $nn = "{$pre}new";
  $a = $m->increment($nn, 1, 500);
  $b = $m->increment($nn, 1, 500);
  if ($a !== 500 || $b !== 501) fail("increment(new, 1, 500): " . var_export([$a, $b], true));
  if ($m->get($nn) != '501') fail('get after increment');
}
$keys = [];
for ($i = 0; $i < 500; $i++) {
  $k = "{$pre}m$i";
  $keys[] = $k;
  $v = $bin ? $m->increment($k, 1, $i + 1) : $m->increment($k, $i + 1);
  if ($v !== $i + 1) fail("increment $k: " . var_export($v, true) . ' ' . $m->getResultMessage());
}
$got = $m->getMulti(array_merge($keys, ["{$pre}none"]));
if (!is_array($got) || count($got) != 500) fail('getMulti: ' . (is_array($got) ? count($got) : var_export($got, true)) . ' ' . $m->getResultMessage());
foreach ($keys as $i => $k)
  if ($got[$k] != $i + 1) fail("getMulti $k: " . var_export($got[$k], true));
if ($m->set("{$pre}m7", 'x')) fail('set was accepted');
if ($m->get("{$pre}m7") != '8') fail('set changed the counter');
file_put_contents($out, implode("\n", $ids) . "\n");
echo "php $mode" . ($user !== null ? ' (SASL)' : '') . ': ' . count($ids) . " ids, getMulti 500 keys" . ($bin ? ', increment(new, 1, 500) -> 500, 501' : '') . ", set refused\n";
