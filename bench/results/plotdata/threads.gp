set terminal pngcairo noenhanced size 1000,650 font "sans,10"
set output "bench/results/threads.png"
set key below
set grid
set bmargin 6
set tmargin 4
set label 99 "usb4verbs 1974e0210a67 | full | 2 CPUs AMD EPYC | kernel 6.18.44-fc-v1147 | cable 20 Gb/s" at screen 0.01,0.975 font "sans,7"
set title "T threads, each its own RC QP, one context (libibverbs under usb4v-sim exec)"
set xtics (1,2,4)
set xrange [0.5:4.5]
set xlabel "threads"
set ylabel "aggregate goodput [Gb/s]"
set yrange [0:22.909035]
set y2range [0:1.15]
set y2tics 0.1 nomirror
set ytics nomirror
set y2label "efficiency = goodput / payload capacity"
plot 'bench/results/plotdata/threads.dat' index 0 u 1:3:2:4 w yerrorlines lw 2 t 'threads_bw WRITE 4 KiB', 'bench/results/plotdata/threads.dat' index 1 u 1:3:2:4 w yerrorlines lw 2 t 'threads_bw WRITE 64 KiB', 19.9209 w l lw 2 dt 2 lc rgb 'black' t 'payload capacity 19.92 Gb/s (20 Gb/s x 4032/4048)'
