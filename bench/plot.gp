# plot.gp - draws the benchmark charts from DIR/latest.csv:
#   DIR/throughput.png  ids per second by thread count, one line per case
#   DIR/latency.png     p50, p99 and p999 latency by thread count
# bench/run.sh calls it with -e setting dir, machine, and three aligned word
# lists naming the series (the throughput rows' case, mode and block).
set datafile separator ','
csv = dir.'/latest.csv'
n = words(cases)
label(i) = word(cases, i) eq 'seed' ? 'seed (UNSAFE original)' : \
           word(cases, i).' '.word(modes, i). \
           (word(blocks, i) eq '1' ? '' : ' x'.word(blocks, i))
is(i) = strcol(1) eq word(cases, i) && strcol(2) eq word(modes, i) && \
        strcol(4) eq word(blocks, i)

# distinct colours; a dashed line for the reference cases
set linetype 1 lc rgb '#000000' lw 3 pt 7 ps 1.2
set linetype 2 lc rgb '#d62728' lw 2 pt 5 ps 1.1 dt 2
set linetype 3 lc rgb '#1f77b4' lw 3 pt 9 ps 1.3
set linetype 4 lc rgb '#17becf' lw 2 pt 11 ps 1.3
set linetype 5 lc rgb '#2ca02c' lw 2 pt 13 ps 1.2
set linetype 6 lc rgb '#8c564b' lw 2 pt 15 ps 1.2
set linetype 7 lc rgb '#9467bd' lw 2 pt 4 ps 1.2
set linetype 8 lc rgb '#ff7f0e' lw 2 pt 6 ps 1.2 dt 3
set linetype 9 lc rgb '#bcbd22' lw 2 pt 8 ps 1.2 dt 3
set linetype 10 lc rgb '#7f7f7f' lw 2 pt 10 ps 1.2
set linetype 11 lc rgb '#e377c2' lw 3 pt 12 ps 1.3
set linetype 12 lc rgb '#e377c2' lw 2 pt 14 ps 1.3 dt 4
set linetype cycle 12

set terminal pngcairo size 1200,750 font 'Sans,11' noenhanced
set output dir.'/throughput.png'
set title "logcounter: ids per second by thread count (median of the runs)\n".machine
set logscale xy
set xrange [0.8:80]
set xtics (1, 2, 4, 8, 16, 32, 64)
set format y '%.0s%c'
set xlabel 'threads (daemon-incr: client connections)'
set ylabel 'ids per second (log scale)'
set grid xtics ytics mytics
set key outside right top box opaque
plot for [i=1:n] csv using (is(i) ? $3 : NaN):5 with linespoints lt i title label(i)

set terminal pngcairo size 1650,620 font 'Sans,11' noenhanced
set output dir.'/latency.png'
set multiplot layout 1,3 margins 0.05,0.83,0.13,0.86 spacing 0.05,0 \
    title "logcounter: latency per call by thread count, microseconds (median run)\n".machine
set ylabel 'microseconds (log scale)'
set format y '%g'
unset key
set title 'p50'
plot for [i=1:n] csv using (is(i) ? $3 : NaN):6 with linespoints lt i notitle
unset ylabel
set title 'p99'
plot for [i=1:n] csv using (is(i) ? $3 : NaN):7 with linespoints lt i notitle
set title 'p999'
set key at screen 0.995, 0.86 right top box opaque
plot for [i=1:n] csv using (is(i) ? $3 : NaN):8 with linespoints lt i title label(i)
unset multiplot
