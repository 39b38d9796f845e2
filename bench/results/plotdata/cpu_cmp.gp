set terminal pngcairo noenhanced size 1000,650 font "sans,10"
set output "bench/results/cpu_cmp.png"
set key below
set grid
set bmargin 6
set tmargin 4
set label 99 "usb4verbs 1974e0210a67 | full | 2 CPUs AMD EPYC | kernel 6.18.44-fc-v1147 | cable 20 Gb/s" at screen 0.01,0.975 font "sans,7"
set title "CPU seconds per GiB moved, 64 KiB messages: TCP loopback vs usb4verbs (perftest, same bytes)"
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.5
set xtics rotate by -20
set ylabel "CPU-s / GiB"
set yrange [0:*]
plot 'bench/results/plotdata/cpu_cmp.dat' u 3:4:5:xtic(2) t 'whole machine (/proc/stat)', '' u 6:7:8 t 'the benchmark processes (both sides)'
