#!/bin/sh
# tests/run_parallel.sh TPUSIM -- the GNU parallel one-liner of docs/reference.md
# ("Sweeps on a cluster") run for real on this machine: 3 shards of a sweep
# through `parallel`, merged, byte for byte the same directory as a single run.
# Skips (with a message) when GNU parallel is not installed (make deps installs it).
bin=$1
n=0; fail=0
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
if ! command -v parallel >/dev/null 2>&1; then
    echo "parallel: skipped: GNU parallel is not installed (apt-get install parallel)"
    exit 0
fi
t=$(mktemp -d)
spec=tests/data/sweeps/matmul_blocks.yaml
start=$(date +%s)
parallel --will-cite "$bin" sweep "$spec" --shard {}/3 -o "$t/sh-{}-of-3" -j 1 ::: 0 1 2 \
    >"$t/par.out" 2>&1 && ok || { bad "parallel: $(tail -n 5 "$t/par.out")"; }
"$bin" sweep merge "$t/merged" "$t"/sh-*-of-3 >"$t/merge.out" 2>&1 && ok \
    || bad "merge: $(cat "$t/merge.out")"
"$bin" sweep "$spec" -o "$t/single" -j 2 >/dev/null 2>&1 && ok || bad "single run"
# the measured figures (each point's wall_s, cpu_s and peak_rss_bytes) differ between runs:
# the same placeholders on both sides before the byte-for-byte comparison
measured() {
    find "$@" -name '*.json' -exec sed -i -e 's/"wall_s": [0-9.]*/"wall_s": W/' \
        -e 's/"cpu_s": [0-9.e-]*/"cpu_s": C/' -e 's/"peak_rss_bytes": [0-9]*/"peak_rss_bytes": R/' {} + \
        && find "$@" -name '*.csv' -exec sed -i 's/,[0-9.]*,[0-9]*$/,W,R/' {} +
}
measured "$t/single" "$t/merged" && diff -r "$t/single" "$t/merged" >"$t/diff" 2>&1 && ok || bad "merged != single: $(head -n 5 "$t/diff")"
end=$(date +%s)
rm -rf "$t"
echo "parallel: $((n - fail)) passed, $fail failed ($((end - start)) s)"
[ "$fail" = 0 ]
