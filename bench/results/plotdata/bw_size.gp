set terminal pngcairo noenhanced size 1000,650 font "sans,10"
set output "bench/results/bw_size.png"
set key below
set grid
set bmargin 6
set tmargin 4
set label 99 "usb4verbs 1974e0210a67 | full | 2 CPUs AMD EPYC | kernel 6.18.44-fc-v1147 | cable 20 Gb/s" at screen 0.01,0.975 font "sans,7"
set title "Bandwidth vs message size (perftest, one QP; median, bars = min..max)"
set logscale x 2
set format x '%.0s%cB'
set xlabel "message size"
set ylabel "goodput [Gb/s]"
set yrange [0:22.909035]
set y2range [0:1.15]
set y2tics 0.1 nomirror
set ytics nomirror
set y2label "efficiency = goodput / payload capacity"
plot 'bench/results/plotdata/bw_size.dat' index 0 u 1:3:2:4 w yerrorlines lw 2 t 'write RC', 'bench/results/plotdata/bw_size.dat' index 1 u 1:3:2:4 w yerrorlines lw 2 t 'write UC', 'bench/results/plotdata/bw_size.dat' index 2 u 1:3:2:4 w yerrorlines lw 2 t 'send RC', 'bench/results/plotdata/bw_size.dat' index 3 u 1:3:2:4 w yerrorlines lw 2 t 'send UC', 'bench/results/plotdata/bw_size.dat' index 4 u 1:3:2:4 w yerrorlines lw 2 t 'send UD', 'bench/results/plotdata/bw_size.dat' index 5 u 1:3:2:4 w yerrorlines lw 2 t 'read RC', 19.9209 w l lw 2 dt 2 lc rgb 'black' t 'payload capacity 19.92 Gb/s (20 Gb/s x 4032/4048)'
