# bin_dalli.rb - Ruby's Dalli 3.0 (binary protocol only) against logcounterd,
# for tests/suite_binary.sh: allocations on the shared counters $BIN_SHARED s0..s3 (default PREFIX)
# (written to OUT as "NAME ID" lines), incr on a new name without a
# default (nil: never created) and with default 500 (500, then 501), get,
# get_multi of 300 keys (getkq + noop), a tally, a refused set that
# changes nothing.  With USER PASS: over SASL PLAIN; with $BIN_TLS_CA (a
# CA file): over TLS, the server's certificate verified.
# Usage: ruby bin_dalli.rb PORT OUT PREFIX [USER PASS]
require 'dalli'
Dalli.logger.level = Logger::ERROR
port, out, pre, user, pass = ARGV
opts = { socket_timeout: 5 }
opts.merge!(username: user, password: pass) if user
if ENV['BIN_TLS_CA']
  require 'openssl'
  ctx = OpenSSL::SSL::SSLContext.new
  ctx.ca_file = ENV['BIN_TLS_CA']
  ctx.verify_mode = OpenSSL::SSL::VERIFY_PEER
  opts[:ssl_context] = ctx
end
c = Dalli::Client.new("127.0.0.1:#{port}", opts)
def fail!(m)
  STDERR.puts "dalli: #{m}"
  exit 1
end
ids = []
shared = ENV.fetch("BIN_SHARED", pre) # the counters the text client uses too
names = (0...4).map { |i| "#{shared}s#{i}" }
200.times do
  names.each do |n|
    v = c.incr(n, 1)
    fail!("incr #{n}: #{v.inspect}") unless v.is_a?(Integer) && v > 0
    ids << [n, v]
  end
end
nn = "#{pre}new"
r = c.incr(nn, 1)
fail!("incr without a default created a counter: #{r.inspect}") unless r.nil?
r = c.get(nn)
fail!("get of an unused counter: #{r.inspect}") unless r.nil?
r1 = c.incr(nn, 1, nil, 500)
r2 = c.incr(nn, 1, nil, 500)
fail!("incr with default 500: #{r1.inspect}, #{r2.inspect}") unless r1 == 500 && r2 == 501
g = c.get(nn)
fail!("get: #{g.inspect}") unless g == '501'
keys = (0...300).map { |i| "#{pre}m#{i}" }
keys.each_with_index do |k, i|
  v = c.incr(k, 1, nil, i + 1)
  fail!("incr #{k}: #{v.inspect}") unless v == i + 1
end
# Dalli 3.0.6's get_multi fails over TLS in Dalli itself (NoMethodError:
# undefined method `server' for Dalli::Socket::SSLSocket): gets, one by one
if opts[:ssl_context]
  h = keys.to_h { |k| [k, c.get(k)] }
else
  h = c.get_multi(*keys, "#{pre}none")
end
bad = keys.each_with_index.reject { |k, i| h[k] == (i + 1).to_s }
fail!("get_multi: #{h.size} keys, #{bad.size} wrong, e.g. #{bad.first.inspect}") unless h.size == 300 && bad.empty?
begin
  c.set(nn, '7')
  fail!('set was accepted')
rescue Dalli::DalliError => e
  fail!("set: #{e.message}") unless e.message.include?('131') || e.message =~ /not supported/i
end
fail!('set changed the counter') unless c.get(nn) == '501'
t = "tally:#{pre}t"
a = c.incr(t, 5, nil, 0)
b = c.decr(t, 2, nil, 0)
fail!("tally: #{a.inspect} #{b.inspect}") unless a == 5 && b == 3
fail!('get of the tally') unless c.get(t) == '3'
File.open(out, 'w') { |f| ids.each { |n, v| f.puts "#{n} #{v}" } }
puts "dalli#{user ? ' (SASL)' : ''}#{ENV['BIN_TLS_CA'] ? ' (TLS)' : ''}: #{ids.size} ids, incr default 500 -> 500, 501, #{opts[:ssl_context] ? 'get of' : 'get_multi'} 300 keys, tally 5 -> 3, set refused"
