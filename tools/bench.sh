#!/bin/sh
# tools/bench.sh TPUSIM -- simulation speed: grid steps simulated per second of
# wall time, and peak memory (with /usr/bin/time), for configs/bench/*.yaml.
# Each scenario runs 3 times per mode; the best wall time is reported. Then the
# speed of block: auto's search (see the end).
bin=$1
out=$(mktemp -d)
now() { date +%s.%N; }
rss_cmd=; [ -x /usr/bin/time ] && rss_cmd="/usr/bin/time -f %M -o $out/rss"
printf '%-26s %-6s %13s %9s %13s %10s\n' scenario mode sim_time_s wall_s steps/s maxrss_MB
# A bench file may say '# args: ...' (more run arguments), '# repeat: N' (runs
# per mode, default 3) and '# needs: VAR' (run only when the environment sets
# VAR, e.g. BENCH_ALL_CHIPS=1 for runs too big for a small machine).
for f in configs/bench/*.yaml; do
    modes=$(sed -n 's/^# modes: //p' "$f"); modes=${modes:-fast exact}
    args=$(sed -n 's/^# args: //p' "$f")
    repeat=$(sed -n 's/^# repeat: //p' "$f"); repeat=${repeat:-3}
    needs=$(sed -n 's/^# needs: //p' "$f")
    if [ -n "$needs" ] && [ -z "$(eval echo \"\${$needs:-}\")" ]; then
        printf '%-26s skipped (set %s=1 to run it)\n' "$(basename "$f" .yaml)" "$needs"
        continue
    fi
    for mode in $modes; do
        best=
        for i in $(seq "$repeat"); do
            s=$(now)
            $rss_cmd "$bin" run "$f" -o "$out/r" -q --fidelity "$mode" --max-steps 100000000000 $args \
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

# block: auto: the search's wall time per distinct matmul shape (tpusim check: load, search,
# checks), and a model of 80 identical layers written out op by op, which searches once per
# distinct shape.
printf '\n%-5s %-18s %9s %6s %8s  %s\n' chip "block: auto m,k,n" searches runs wall_s chosen
for chip in v5e v6e v7; do
    for shape in 1024,1024,1024 4096,4096,4096 8192,8192,8192 16384,16384,16384 \
                 8192,4096,14336 8192,14336,4096; do
        IFS=, read -r m k n <<EOS
$shape
EOS
        printf 'chip: %s\nworkload:\n  - {op: matmul, m: %s, k: %s, n: %s, block: auto}\n' \
            "$chip" "$m" "$k" "$n" > "$out/auto.yaml"
        s=$(now)
        "$bin" check "$out/auto.yaml" > "$out/check.txt" || { echo "FAIL $chip $shape"; exit 1; }
        w=$(awk -v a="$s" -v b="$(now)" 'BEGIN { print b - a }')
        st=$(sed -n 's/^block: auto: [0-9]* ops, \([0-9]*\) searches, \([0-9]*\) runs.*/\1 \2/p' \
             "$out/check.txt")
        pick=$(sed -n 's/^auto [^ ]*: \(.*\) (fastest.*/\1/p' "$out/check.txt")
        printf '%-5s %-18s %9s %6s %8.3f  %s\n' "$chip" "$shape" ${st% *} ${st#* } "$w" "$pick"
    done
done
layer='
  - {op: matmul, name: qkv%d, m: 8192, k: 4096, n: 6144, block: auto}
  - {op: matmul, name: out%d, m: 8192, k: 4096, n: 4096, block: auto}
  - {op: matmul, name: up%d, m: 8192, k: 4096, n: 28672, block: auto}
  - {op: matmul, name: down%d, m: 8192, k: 14336, n: 4096, block: auto}'
{ printf 'chip: v7\nworkload:'; i=0; while [ $i -lt 80 ]; do
      printf "$layer" $i $i $i $i; i=$((i + 1)); done; echo; } > "$out/layers.yaml"
s=$(now)
"$bin" check "$out/layers.yaml" > "$out/check.txt" || { echo "FAIL layers"; exit 1; }
w=$(awk -v a="$s" -v b="$(now)" 'BEGIN { print b - a }')
printf '80 identical layers (v7, 4 matmuls each, written out): %s; %.3f s in all\n' \
    "$(sed -n 's/^block: auto: //p' "$out/check.txt")" "$w"
rm -rf "$out"
