# SPDX-License-Identifier: MIT
# cpu.png: percent of one core used by the limited process while held at 10 MiB/s with
# 4 KiB calls, per limiter, from results/cpu.csv (the unthrottled row is left out).
set terminal pngcairo size 640,300 font ",9"
set output RES."/cpu.png"
set datafile separator ","
set style fill solid 0.8 border -1
set boxwidth 0.6
set ylabel "% of one core"
set yrange [0:*]
set grid ytics
set key top left
set title "CPU while throttled at 10 MiB/s, 4 KiB calls"
plot RES."/cpu.csv" every ::1 using 0:(strcol(2) eq "none" ? NaN : $7):xtic(strcol(2)." / ".strcol(1)) with boxes notitle, \
     2 with lines dt 2 lc "red" title "target 2%"
