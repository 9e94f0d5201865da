# SPDX-License-Identifier: MIT
# streaming_sweep.png: the BONSAI paper's Fig 11 on this machine (bench/scenarios/streaming.sh,
# STREAM_FULL=1; issue #35): per-stream rate against the number of paced 2 Mbit/s streams
# under one service cap, per server: the mean over the streams, bars from the slowest to the
# fastest; dashed, the fair share min(a stream's pace, cap / N).
set terminal pngcairo size 860,480 font ",9" noenhanced
set output RES."/streaming_sweep.png"
set datafile separator ","
F = RES."/streaming_sweep.csv"
servers = system("tail -n +2 ".F." | cut -d, -f1 | awk '!seen[$0]++' | tr '\\n' ' '")
cap = system("sed -n 2p ".F." | cut -d, -f3") / 1e6
set title sprintf("streams under a %.0f MB/s writes:fd=socket service cap: per-stream rate (mean, slowest-fastest)", cap)
set xlabel "streams (N)"
set ylabel "KB/s per stream"
set yrange [0:*]
set grid
set key top right box opaque
plot for [i=1:words(servers)] F every ::1 using ($2 + (i - 1) * 0.8):(strcol(1) eq word(servers, i) ? $6 / 1e3 : NaN):($7 / 1e3):($8 / 1e3) \
       with yerrorlines lw 1.5 title word(servers, i), \
     F every ::1 using 2:(strcol(1) eq word(servers, 1) ? $9 / 1e3 : NaN) with lines dt 2 lc "black" title "fair share min(pace, cap/N)"
