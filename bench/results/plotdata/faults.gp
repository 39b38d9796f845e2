set terminal pngcairo noenhanced size 1000,650 font "sans,10"
set output "bench/results/faults.png"
set key below
set grid
set bmargin 6
set tmargin 4
set label 99 "usb4verbs 1974e0210a67 | full | 2 CPUs AMD EPYC | kernel 6.18.44-fc-v1147 | cable 20 Gb/s" at screen 0.01,0.975 font "sans,7"
set title "RC WRITE 64 KiB on a faulty cable (median, bars = min..max; label = machine busy cores)"
set style fill solid 0.5
set boxwidth 0.6
set ylabel "goodput [Gb/s]"
set xrange [-0.6:3.6]
set yrange [0:22.909035]
set y2range [0:1.15]
set y2tics 0.1 nomirror
set ytics nomirror
set y2label "efficiency = goodput / payload capacity"
plot 'bench/results/plotdata/faults.dat' u 1:4:xtic(2) w boxes t 'median', '' u 1:4:3:5 w yerrorbars lc rgb 'black' t 'min..max', '' u 1:4:(sprintf('%.2f cores',$6)) w labels offset 0,1 notitle, 19.9209 w l lw 2 dt 2 lc rgb 'black' t 'payload capacity 19.92 Gb/s (20 Gb/s x 4032/4048)'
