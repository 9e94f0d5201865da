# SPDX-License-Identifier: MIT
# shares.png: two tenants' write rates per 50 ms under one capacity, with shares (rate +
# ceiling) and with hard caps, from shares_plot.csv (bench/scenarios/shares.sh).
set terminal pngcairo size 860,420 font ",9"
set output RES."/shares.png"
set datafile separator ","
set key top right box opaque font ",8"
set grid
set xlabel "time (s)"
set ylabel "MiB/s"
set yrange [0:*]
set multiplot layout 2,1 title "bonsai shares: A busy, then both, then B (".TITLE.")"
set title "shares (ceil = capacity)"
plot RES."/shares_plot.csv" every ::1 using ($1/1000):2 with lines lw 1.5 title "A", "" every ::1 using ($1/1000):3 with lines lw 1.5 title "B"
set title "hard caps (ceil = rate)"
plot RES."/shares_plot.csv" every ::1 using ($1/1000):4 with lines lw 1.5 title "A", "" every ::1 using ($1/1000):5 with lines lw 1.5 title "B"
unset multiplot
