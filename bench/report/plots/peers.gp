# SPDX-License-Identifier: MIT
# peers.png: the rate seen by the receiver in 10 ms windows at a 10 MiB/s cap, one panel
# per medium, bonsai against the peer limiter on the same workload (results/series/).
set terminal pngcairo size 860,560 font ",9" noenhanced
set output RES."/peers.png"
set datafile separator ","
set key top right box opaque font ",8"
set xlabel "time (s)"
set ylabel "MiB/s per 10 ms"
set xrange [1:2]
set yrange [0:*]
set grid
S = RES."/series/"
have(f) = system("test -s ".f." && echo 1 || echo 0") + 0
set multiplot layout 3,1 title "10 MiB/s cap, 10 ms windows, one second shown"
set title "pipe: cat /dev/zero | limiter | reader"
plot S."pipe_bonsai.csv" every ::1 using 1:2 with steps lw 1.5 title "bonsai", \
     (have(S."pipe_pv.csv") ? S."pipe_pv.csv" : S."pipe_bonsai.csv") every ::1 using 1:(have(S."pipe_pv.csv") ? $2 : NaN) with steps title "pv -L", \
     10 with lines dt 2 lc "red" title "cap"
set title "loopback TCP: 4 KiB send()s"
plot S."tcp_bonsai.csv" every ::1 using 1:2 with steps lw 1.5 title "bonsai", \
     (have(S."tcp_trickle.csv") ? S."tcp_trickle.csv" : S."tcp_bonsai.csv") every ::1 using 1:(have(S."tcp_trickle.csv") ? $2 : NaN) with steps title "trickle", \
     10 with lines dt 2 lc "red" title "cap"
set title "disk: O_DIRECT 64 KiB reads"
if (have(S."blk_bonsai.csv")) {
  plot S."blk_bonsai.csv" every ::1 using 1:2 with steps lw 1.5 title "bonsai", \
       (have(S."blk_kernel.csv") ? S."blk_kernel.csv" : S."blk_bonsai.csv") every ::1 using 1:(have(S."blk_kernel.csv") ? $2 : NaN) with steps title "kernel blkio throttle", \
       10 with lines dt 2 lc "red" title "cap"
} else {
  set label 1 "kernel block throttle comparison skipped on this machine" at graph 0.5, 0.5 center
  plot 10 with lines dt 2 lc "red" title "cap"
  unset label 1
}
unset multiplot
