# SPDX-License-Identifier: MIT
# cost.png: median ns per call of each variant divided by the raw call's, per call kind,
# from the wide table plot.sh derives from results/cost.csv. Run by plot.sh.
set terminal pngcairo size 640,320 font ",9"
set output RES."/cost.png"
set datafile separator ","
set datafile missing "nan"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key top left box opaque font ",8"
set ylabel "median ns per call / raw"
set yrange [0:*]
set grid ytics
set title "cost of an unthrottled call (interleaved runs, ratio of medians)"
plot 1.05 with lines dt 2 lc "red" title "target 1.05 (write)", \
     WIDE using 3:xtic(1) title "LD_PRELOAD, no limits", \
     "" using 4 title "rule on another call", \
     "" using 5 title "non-binding limit", \
     "" using 6 title "trickle (send only)"
