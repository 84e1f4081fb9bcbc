#!/bin/sh
# tools/check_globals.sh BUILD_DIR -- tpusim keeps no writable global state:
# every object file's symbols in writable data sections (.data, .bss,
# .data.rel, .data.rel.local, thread-local data) must be on the allow-list
# below. Run state hangs off one struct per run (house style). Prints each
# violation as "object: section symbol" and exits 1, else "globals: ok".
b=${1:?usage: check_globals.sh BUILD_DIR}
# the one documented writable global: the SIGINT flag (base/interrupt.c)
allow="base/interrupt.o:got_sigint"
command -v objdump >/dev/null || { echo "check_globals: objdump not found"; exit 2; }
bad=0
for o in $(cd "$b" && ls base/*.o topology/*.o models/*.o kernels/*.o outputs/*.o workload/*.o config/*.o engine/*.o study/*.o serving/*.o cli/*.o 2>/dev/null); do
    out=$(objdump -t "$b/$o" | awk -v o="$o" -v allow=" $allow " '
        $3 == "O" || $2 == "O" {
            sec = ($3 == "O") ? $4 : $3
            name = $NF
            if (sec ~ /^\.(data|bss|data\.rel|data\.rel\.local|tdata|tbss)(\..*)?$/ &&
                sec !~ /^\.data\.rel\.ro/ && index(allow, " " o ":" name " ") == 0)
                printf "%s: %s %s\n", o, sec, name
        }')
    if [ -n "$out" ]; then
        echo "$out"
        bad=1
    fi
done
[ $bad -eq 0 ] && echo "globals: ok" || { echo "globals: writable state found"; exit 1; }
