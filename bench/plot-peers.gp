# plot-peers.gp - draws DIR/peers.png from DIR/latest.csv: logcounter beside
# its peers, ids per second by thread (connection) count, single ids on the
# left, blocks of 100 and 1000 on the right; logcounter solid, raw memcached
# incr dotted, Redis and PostgreSQL dashed.  bench/run.sh calls it with -e
# setting dir and machine when the CSV has peer rows.  Only the series that
# have rows are drawn (a BENCH_CASES subset leaves some out), so each plot
# command is built from the series found in the CSV.
set datafile separator ','
csv = dir.'/latest.csv'
is(c, m, b) = strcol(1) eq c && strcol(2) eq m && strcol(4) eq b && $3 <= 32
has(c, m, b) = int(system(sprintf("grep -c '^%s,%s,[0-9]*,%s,' '%s'", \
                                  c, m, b, csv))) > 0
# series(c, m, b, style, title): one plot element, or '' without rows
series(c, m, b, s, t) = has(c, m, b) ? \
  sprintf("'%s' using (is('%s','%s','%s') ? $3 : NaN):5 w lp %s t '%s'", \
          csv, c, m, b, s, t) : ''
join(a, b) = a eq '' ? b : b eq '' ? a : a.', '.b

set terminal pngcairo size 1500,800 font 'Sans,11' noenhanced
set output dir.'/peers.png'
set multiplot layout 1,2 margins 0.06,0.98,0.27,0.87 spacing 0.07,0 \
    title "logcounter and its peers: ids per second by thread (connection) count, median run\n".machine
set logscale xy
set xrange [0.8:40]
set xtics (1, 2, 4, 8, 16, 32)
set format y '%.0s%c'
set xlabel 'threads = client connections'
set ylabel 'ids per second (log scale)'
set grid xtics ytics mytics
set key at graph 0.5, -0.16 center top vertical maxrows 5 box font ',10' Left reverse

set title 'one id per call'
p = series('memcached-incr', 'raw', '1', "lc rgb '#000000' lw 2 dt 3 pt 7", 'memcached incr, raw (no log)')
p = join(p, series('next', 'default', '1', "lc rgb '#1f77b4' lw 3 pt 9", 'logcounter lc_next default'))
p = join(p, series('next', 'sync', '1', "lc rgb '#17becf' lw 3 pt 11", 'logcounter lc_next sync'))
p = join(p, series('next', 'prefetch', '1', "lc rgb '#0b3d91' lw 3 pt 15", 'logcounter lc_next prefetch auto'))
p = join(p, series('daemon-incr', 'coalesce', '1', "lc rgb '#2ca02c' lw 3 pt 13", 'logcounterd incr (coalesce)'))
p = join(p, series('daemon-incr', 'prefetch', '1', "lc rgb '#006400' lw 3 pt 12", 'logcounterd incr (prefetch auto)'))
p = join(p, series('redis-incr', 'aof-everysec', '1', "lc rgb '#d62728' lw 2 dt 2 pt 5", 'Redis INCR, AOF everysec'))
p = join(p, series('redis-incr', 'aof-always', '1', "lc rgb '#ff7f0e' lw 2 dt 2 pt 4", 'Redis INCR, AOF always'))
p = join(p, series('pg-nextval', 'default', '1', "lc rgb '#9467bd' lw 2 dt 2 pt 6", 'PostgreSQL nextval()'))
if (p ne '') { eval 'plot '.p }

set title 'blocks: 100 or 1000 ids per call'
unset ylabel
set key maxrows 3
p = series('next_n', 'default', '100', "lc rgb '#1f77b4' lw 3 pt 9", 'lc_next_n x100')
p = join(p, series('next_n', 'default', '1000', "lc rgb '#0b3d91' lw 3 pt 11", 'lc_next_n x1000'))
p = join(p, series('redis-incrby', 'aof-everysec', '100', "lc rgb '#d62728' lw 2 dt 2 pt 5", 'Redis INCRBY 100 (everysec)'))
p = join(p, series('redis-incrby', 'aof-everysec', '1000', "lc rgb '#8b0000' lw 2 dt 2 pt 4", 'Redis INCRBY 1000 (everysec)'))
p = join(p, series('pg-nextval-block', 'default', '100', "lc rgb '#9467bd' lw 2 dt 2 pt 6", 'PostgreSQL nextval() x100'))
p = join(p, series('pg-nextval-block', 'default', '1000', "lc rgb '#4b2a7b' lw 2 dt 2 pt 7", 'PostgreSQL nextval() x1000'))
if (p ne '') { eval 'plot '.p }
unset multiplot
