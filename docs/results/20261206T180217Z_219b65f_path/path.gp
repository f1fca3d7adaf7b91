set terminal svg size 1000,480 dynamic background rgb 'white'
set output '/tmp/m/pathrun/20261206T180217Z_f555da136c-dirty/path.svg'
set datafile missing 'NaN'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set key outside right top
set ylabel 'goodput / link rate'
set title 'rudp-bench path (median of rounds)'
set xtics rotate by -20
set grid ytics
plot for [i=2:12] '/tmp/m/pathrun/20261206T180217Z_f555da136c-dirty/path.dat' using i:xtic(1) title columnheader(i)
