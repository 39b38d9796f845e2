set terminal pngcairo noenhanced size 1000,650 font "sans,10"
set output "bench/results/lat_size.png"
set key below
set grid
set bmargin 6
set tmargin 4
set label 99 "usb4verbs 1974e0210a67 | full | 2 CPUs AMD EPYC | kernel 6.18.44-fc-v1147 | cable 20 Gb/s" at screen 0.01,0.975 font "sans,7"
set title "Latency vs message size (one-way, perftest typical; median of reps, bars = min..max)"
set logscale xy
set format x '%.0s%cB'
set xlabel "message size"
set ylabel "latency [us]"
plot 'bench/results/plotdata/lat_size.dat' index 0 u 1:3:2:4 w yerrorlines lw 2 t 'ib_send_lat RC (typical)', 'bench/results/plotdata/lat_size.dat' index 1 u 1:3:2:4 w yerrorlines lw 2 t 'ib_write_lat RC (typical)'
