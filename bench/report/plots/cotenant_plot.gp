# SPDX-License-Identifier: MIT
# Two panels like the BONSAI paper's Figures 5 and 12: per-second MB/s of tenants A and B,
# (a) without limits, (b) with B capped by bonsai (cap as a dotted line).
# Usage: gnuplot -e "load 'VARS.gp'; png='OUT.png'" bench/report/plots/cotenant_plot.gp
#   VARS.gp (written by cotenant_report.py) sets csv, bstart, duration, cap, ymax, title_a, title_b, what.

set terminal pngcairo size 1000,760 font "DejaVu Sans,11" noenhanced
set output png
set datafile separator ","
set key top right box opaque
set grid ytics lc rgb "#dddddd"
set xrange [0:duration + 0.5]
set yrange [0:ymax]
set xlabel "time (s)"
set ylabel "MB/s"
set style arrow 1 nohead dt 2 lc rgb "#888888" lw 1.5

run_is(name, col) = (strcol(1) eq name && strlen(strcol(col)) > 0) ? column(col) : NaN

set multiplot layout 2,1 title "Co-tenant isolation: " . what font ",13"
set arrow 1 from bstart, 0 to bstart, ymax arrowstyle 1
set label 1 " B's readers start" at bstart, ymax * 0.95 left tc rgb "#666666"

set title title_a
plot csv using 2:(run_is("without", 3)) skip 1 with linespoints lw 2 pt 7 ps 0.6 lc rgb "#1f77b4" title "A (uncapped)", \
     csv using 2:(run_is("without", 4)) skip 1 with linespoints lw 2 pt 5 ps 0.6 lc rgb "#d62728" title "B (2 readers, uncapped)"

set title title_b
plot csv using 2:(run_is("with", 3)) skip 1 with linespoints lw 2 pt 7 ps 0.6 lc rgb "#1f77b4" title "A (uncapped)", \
     csv using 2:(run_is("with", 4)) skip 1 with linespoints lw 2 pt 5 ps 0.6 lc rgb "#d62728" title "B (2 readers, capped)", \
     (x >= bstart ? cap : NaN) with lines dt 3 lw 2 lc rgb "#d62728" title "B's cap"

unset multiplot
