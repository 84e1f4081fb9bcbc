#!/bin/sh
# tests/run_browser.sh TPUSIM -- a run's and a sweep's report.html in a real
# browser: headless Chromium loads each page from the file system (no
# network), the log must show no console error, the DOM must hold the tables
# and the SVG plots, and a screenshot must be a non-blank 1200x900 image
# (tools/pngcheck.py). Skips (exit 0, with a message) when Chromium is not
# installed and cannot be; `make browser-test` tries apt-get first.
bin=$1
browser=
for c in chromium chromium-browser google-chrome; do
    command -v $c >/dev/null 2>&1 && { browser=$c; break; }
done
if [ -z "$browser" ]; then
    echo "browser: skipped: no chromium (apt-get install chromium chromium-driver)"
    exit 0
fi
command -v python3 >/dev/null || { echo "browser: skipped: python3 is needed for the PNG check"; exit 0; }
fail=0; n=0
t=$(mktemp -d)
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
# the flags keep Chromium off the network and out of the user's profile
chrome() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$t/profile" --enable-logging=stderr --v=0 --window-size=1200,900 "$@"
}
"$bin" run -o "$t/run" -q || bad "run"
"$bin" sweep tests/data/sweeps/matmul_blocks.yaml -o "$t/sweep" -j 2 >/dev/null 2>&1 || bad "sweep"
# issue 28.4: a serving sweep's report: the latency-throughput plot and the knee
"$bin" sweep tests/data/sweeps/serve_rate.yaml -o "$t/serve" -j 2 --set serve.slo.ttft=20ms \
    >/dev/null 2>&1 || bad "serve sweep"
for page in run sweep serve; do
    f="$t/$page/report.html"
    [ -s "$f" ] || { bad "$page: no report.html"; continue; }
    ! grep -qi '<script\|https\?://[^ "<]*\.\(js\|css\)\|<link ' "$f" && ok \
        || bad "$page: report.html loads something"
    chrome --dump-dom "file://$f" > "$t/$page.dom" 2> "$t/$page.log"
    grep -q 'Uncaught\|ERROR:CONSOLE\|CONSOLE.*[Ee]rror' "$t/$page.log" \
        && bad "$page: console errors: $(grep 'Uncaught\|CONSOLE' "$t/$page.log" | head -3)" || ok
    if [ $page = run ]; then
        grep -q '<table id="ops">' "$t/$page.dom" && grep -q '<svg id="timeline"' "$t/$page.dom" \
            && grep -q '<ol id="critical-path">' "$t/$page.dom" && grep -q 'id="cores"' "$t/$page.dom" \
            && grep -q 'id="command">tpusim run -o ' "$t/$page.dom" && ok || bad "run: DOM lacks its parts"
        # the console keeps its lines (issue 32.13: it was one run-on line)
        [ "$(awk '/<pre id="console">/ { on = 1 } on { n++ } on && /<\/pre>/ { exit } END { print n + 0 }' \
            "$t/$page.dom")" -gt 5 ] && ok || bad "run: the console is not line by line"
    elif [ $page = serve ]; then
        grep -q '<table id="points">' "$t/$page.dom" && grep -q '<p id="serving-knee">knee: point' "$t/$page.dom" \
            && grep -q '<title>Latency against throughput</title>' "$t/$page.dom" \
            && ok || bad "serve: DOM lacks the points, the knee or the latency-throughput plot"
    else
        grep -q '<table id="points">' "$t/$page.dom" && [ "$(grep -c '<svg' "$t/$page.dom")" -ge 3 ] \
            && grep -q 'id="command">tpusim sweep tests/data/sweeps/matmul_blocks.yaml' "$t/$page.dom" \
            && ok || bad "sweep: DOM lacks the table, the plots or the command"
    fi
    chrome --screenshot="$t/$page.png" "file://$f" > /dev/null 2> "$t/$page.shot.log"
    python3 tools/pngcheck.py "$t/$page.png" 1200 900 && ok || bad "$page: screenshot"
done
rm -rf "$t"
echo "browser: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
