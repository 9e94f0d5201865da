# SPDX-License-Identifier: MIT
# isolation_curve.png: A's rate loss against B's cap (% of D), bonsai and the kernel's block
# throttle side by side per variant (left); A+B in % of A alone, the 95% target (right).
# Columns of isolation_curve.csv: 1 variant, 2 cap %, 8 bonsai loss, 9 bonsai A+B,
# 12 kernel loss, 13 kernel A+B ("n/a: ..." where the kernel cannot run: not drawn).
set terminal pngcairo size 1100,560 font ",10" noenhanced
set output RES."/isolation_curve.png"
set datafile separator ","
set key below horizontal maxrows 3 box font ",9"
set bmargin 9
set grid
set xlabel "B's cap (% of D: A's and B's readers together, unthrottled)"
set xrange [0:55]
sel(v, col) = (strcol(1) eq v) ? column(col) : NaN
F = RES."/isolation_curve.csv"
set multiplot layout 1,2 title "Isolation curve: B capped by bonsai and by the kernel's throttle at the same caps"
set title "A's rate loss while B runs (%)"
set ylabel "A's loss (%)"
set yrange [*:*]
plot F using 2:(sel("direct", 8)) skip 1 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "O_DIRECT, bonsai", \
     F using 2:(sel("direct", 12)) skip 1 with linespoints lw 2 pt 6 dt 2 lc rgb "#1f77b4" title "O_DIRECT, kernel", \
     F using 2:(sel("buffered", 8)) skip 1 with linespoints lw 2 pt 5 lc rgb "#2ca02c" title "buffered, bonsai", \
     F using 2:(sel("buffered", 12)) skip 1 with linespoints lw 2 pt 4 dt 2 lc rgb "#2ca02c" title "buffered, kernel", \
     F using 2:(sel("socket", 8)) skip 1 with linespoints lw 2 pt 9 lc rgb "#d62728" title "socket, bonsai (no kernel throttle)", \
     x with lines dt 3 lc rgb "#888888" title "loss = cap"
set title "A + B in % of A alone (target >= 95%)"
set ylabel "(A + B) / A alone (%)"
set yrange [0:*]
plot F using 2:(sel("direct", 9)) skip 1 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "O_DIRECT, bonsai", \
     F using 2:(sel("direct", 13)) skip 1 with linespoints lw 2 pt 6 dt 2 lc rgb "#1f77b4" title "O_DIRECT, kernel", \
     F using 2:(sel("buffered", 9)) skip 1 with linespoints lw 2 pt 5 lc rgb "#2ca02c" title "buffered, bonsai", \
     F using 2:(sel("buffered", 13)) skip 1 with linespoints lw 2 pt 4 dt 2 lc rgb "#2ca02c" title "buffered, kernel", \
     F using 2:(sel("socket", 9)) skip 1 with linespoints lw 2 pt 9 lc rgb "#d62728" title "socket, bonsai", \
     95 with lines dt 2 lc rgb "red" title "95%"
unset multiplot
