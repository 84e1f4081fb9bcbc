#!/bin/sh
# tools/bench.sh TPUSIM -- simulation speed: grid steps simulated per second of
# wall time, and peak memory (with /usr/bin/time), for configs/bench/*.yaml.
# Each scenario runs 3 times per mode; the best wall time is reported.
bin=$1
out=$(mktemp -d)
now() { date +%s.%N; }
rss_cmd=; [ -x /usr/bin/time ] && rss_cmd="/usr/bin/time -f %M -o $out/rss"
printf '%-26s %-6s %13s %9s %13s %10s\n' scenario mode sim_time_s wall_s steps/s maxrss_MB
for f in configs/bench/*.yaml; do
    modes=$(sed -n 's/^# modes: //p' "$f"); modes=${modes:-fast exact}
    for mode in $modes; do
        best=
        for i in 1 2 3; do
            s=$(now)
            $rss_cmd "$bin" run "$f" -o "$out/r" -q --fidelity "$mode" --max-steps 100000000000 \
                || { echo "FAIL $f"; exit 1; }
            w=$(awk -v a="$s" -v b="$(now)" 'BEGIN { print b - a }')
            best=$(awk -v a="$w" -v b="${best:-1e99}" 'BEGIN { print (a < b) ? a : b }')
        done
        steps=$(sed -n 's/.*"grid_steps": \([0-9]*\).*/\1/p' "$out/r/summary.json" |
                awk '{ s += $1 } END { print s + 0 }')
        t=$(sed -n 's/.*"total_time_s": \([^,]*\),.*/\1/p' "$out/r/summary.json")
        rss=-; [ -f "$out/rss" ] && rss=$(awk '{ printf "%.0f", $1 / 1024 }' "$out/rss")
        awk -v n="$(basename "$f" .yaml)" -v m="$mode" -v t="$t" -v w="$best" -v s="$steps" \
            -v r="$rss" 'BEGIN { printf "%-26s %-6s %13.6g %9.3f %13.0f %10s\n", n, m, t, w,
                                 (w > 0 ? s / w : 0), r }'
    done
done
rm -rf "$out"
