# SPDX-License-Identifier: Apache-2.0
# Plot of the connection sweep of bench/http_bench.py (via bench/report.py's
# data file): requests/s and requests per server CPU-second against wrk
# connection count, for both servers. Called by bench/report.sh with
#   gnuplot -e "datafile='...'; outfile='...'" bench/connections.gp
set terminal svg size 1000,420 dynamic font "sans,11"
set output outfile
set multiplot layout 1,2 title "JWKS GET over HTTP/1.1 (2 keys), one server thread, wrk -t1"
set logscale x 2
set xlabel "connections"
set grid
set key bottom right
set format y "%.0s%c"
set title "requests/s"
plot datafile using 1:2 with linespoints title "oidc-discovery", \
     datafile using 1:3 with linespoints title "nginx"
set title "requests per server CPU-second"
plot datafile using 1:4 with linespoints title "oidc-discovery", \
     datafile using 1:5 with linespoints title "nginx"
unset multiplot
