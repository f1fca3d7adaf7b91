set terminal svg size 1000,480 dynamic background rgb 'white'
set output 'docs/results/20261205T080618Z_a05a40e9d1/many.svg'
set datafile missing 'NaN'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set key outside right top
set ylabel 'MiB/s'
set title 'rudp-bench many (median of rounds)'
set xtics rotate by -20
set grid ytics
plot for [i=2:11] 'docs/results/20261205T080618Z_a05a40e9d1/many.dat' using i:xtic(1) title columnheader(i)
