# plot-peers.gp - draws DIR/peers.png from DIR/latest.csv: logcounter beside
# its peers, ids per second by thread (connection) count, single ids on the
# left, blocks of 100 and 1000 on the right; logcounter solid, raw memcached
# incr dotted, Redis and PostgreSQL dashed.  bench/run.sh calls it with -e
# setting dir and machine when the CSV has peer rows.
set datafile separator ','
csv = dir.'/latest.csv'
is(c, m, b) = strcol(1) eq c && strcol(2) eq m && strcol(4) eq b && $3 <= 32

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
set key at graph 0.5, -0.16 center top vertical maxrows 4 box font ',10' Left reverse

set title 'one id per call'
plot csv using (is('memcached-incr','raw','1') ? $3 : NaN):5 w lp lc rgb '#000000' lw 2 dt 3 pt 7 t 'memcached incr, raw (no log)', \
     ''  using (is('next','default','1') ? $3 : NaN):5 w lp lc rgb '#1f77b4' lw 3 pt 9 t 'logcounter lc_next default', \
     ''  using (is('next','sync','1') ? $3 : NaN):5 w lp lc rgb '#17becf' lw 3 pt 11 t 'logcounter lc_next sync', \
     ''  using (is('daemon-incr','coalesce','1') ? $3 : NaN):5 w lp lc rgb '#2ca02c' lw 3 pt 13 t 'logcounterd incr (coalesce)', \
     ''  using (is('redis-incr','aof-everysec','1') ? $3 : NaN):5 w lp lc rgb '#d62728' lw 2 dt 2 pt 5 t 'Redis INCR, AOF everysec', \
     ''  using (is('redis-incr','aof-always','1') ? $3 : NaN):5 w lp lc rgb '#ff7f0e' lw 2 dt 2 pt 4 t 'Redis INCR, AOF always', \
     ''  using (is('pg-nextval','default','1') ? $3 : NaN):5 w lp lc rgb '#9467bd' lw 2 dt 2 pt 6 t 'PostgreSQL nextval()'

set title 'blocks: 100 or 1000 ids per call'
unset ylabel
set key maxrows 3
plot csv using (is('next_n','default','100') ? $3 : NaN):5 w lp lc rgb '#1f77b4' lw 3 pt 9 t 'lc_next_n x100', \
     ''  using (is('next_n','default','1000') ? $3 : NaN):5 w lp lc rgb '#0b3d91' lw 3 pt 11 t 'lc_next_n x1000', \
     ''  using (is('redis-incrby','aof-everysec','100') ? $3 : NaN):5 w lp lc rgb '#d62728' lw 2 dt 2 pt 5 t 'Redis INCRBY 100 (everysec)', \
     ''  using (is('redis-incrby','aof-everysec','1000') ? $3 : NaN):5 w lp lc rgb '#8b0000' lw 2 dt 2 pt 4 t 'Redis INCRBY 1000 (everysec)', \
     ''  using (is('pg-nextval-block','default','100') ? $3 : NaN):5 w lp lc rgb '#9467bd' lw 2 dt 2 pt 6 t 'PostgreSQL nextval() x100', \
     ''  using (is('pg-nextval-block','default','1000') ? $3 : NaN):5 w lp lc rgb '#4b2a7b' lw 2 dt 2 pt 7 t 'PostgreSQL nextval() x1000'
unset multiplot
