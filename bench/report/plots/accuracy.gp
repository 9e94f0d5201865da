# SPDX-License-Identifier: MIT
# accuracy.png: signed long-run rate error and CV(100 ms) against the cap, one series per
# workload, from results/accuracy.csv (machine-bound points left out). Run by plot.sh.
set terminal pngcairo size 860,320 font ",9"
set output RES."/accuracy.png"
set datafile separator ","
set datafile missing "nan"
set key top left box opaque font ",8"
set logscale x 2
set xlabel "cap (MiB/s)"
set grid
set multiplot layout 1,2 title "bonsai: rate accuracy at the receiving end"
set ylabel "long-run error (%)"
set yrange [-10:2]
plot 0.5 with lines dt 2 lc "red" title "target +-0.5%", -0.5 with lines dt 2 lc "red" notitle, \
     RES."/accuracy.csv" every ::1 using ($3/1048576):(strcol(1) eq "dd_devnull" ? $6 : NaN) with points pt 7 title "dd -> /dev/null", \
     "" every ::1 using ($3/1048576):(strcol(1) eq "cat_pipe" && strstrt(strcol(12), "machine") == 0 ? $6 : NaN) with points pt 5 title "cat | pipe", \
     "" every ::1 using ($3/1048576):(strcol(1) eq "threads4" && strstrt(strcol(12), "machine") == 0 ? $6 : NaN) with points pt 9 title "4 threads", \
     "" every ::1 using ($3/1048576):(strcol(1) eq "procs4" && strstrt(strcol(12), "machine") == 0 ? $6 : NaN) with points pt 11 title "4 processes"
set ylabel "CV of 100 ms windows"
set logscale y
set yrange [0.001:3]
plot 0.02 with lines dt 2 lc "red" title "target 0.02 (at 10 MiB/s)", \
     RES."/accuracy.csv" every ::1 using ($3/1048576):(strcol(1) eq "cat_pipe" && strstrt(strcol(12), "machine") == 0 && $8 > 0 ? $8 : NaN) with points pt 5 title "cat | pipe", \
     "" every ::1 using ($3/1048576):(strcol(1) eq "threads4" && strstrt(strcol(12), "machine") == 0 && $8 > 0 ? $8 : NaN) with points pt 9 title "4 threads", \
     "" every ::1 using ($3/1048576):(strcol(1) eq "procs4" && strstrt(strcol(12), "machine") == 0 && $8 > 0 ? $8 : NaN) with points pt 11 title "4 processes"
unset multiplot
