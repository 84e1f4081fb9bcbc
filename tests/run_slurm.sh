#!/bin/sh
# tests/run_slurm.sh TPUSIM -- a sweep through a real Slurm: starts munged, slurmctld
# and slurmd for this machine alone (a generated slurm.conf in a temporary
# directory, ports on loopback, everything run as the calling user), submits the
# sweep with tools/slurm_sweep.sh as a job array of 3 shards plus the merge job,
# waits, and checks the merged directory against a single-process run byte for
# byte. Skips (exit 0, with a message) where Slurm cannot start here.
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(pwd)
spec=$top/configs/sweeps/ragged_decode_v6e_blocks.yaml
t=$(mktemp -d /tmp/tpusim-slurm-XXXXXX)
chmod 700 "$t"
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do
        w=0; while kill -0 "$p" 2>/dev/null && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$t"
}
trap cleanup EXIT
skip() { echo "cluster-test: skipped: $*"; exit 0; }
fail() {
    echo "FAIL: $*"
    for f in "$t"/*.log "$t"/out/slurm-*.out; do [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }; done
    echo "cluster-test: 0 passed, 1 failed"
    exit 1
}
for c in munged slurmctld slurmd sbatch squeue scontrol; do
    command -v $c >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v $c >/dev/null 2>&1 || skip "$c is not installed (apt-get install slurm-wlm munge)"
done
start=$(date +%s)

# munge: a fresh key and a private socket
mkdir -p "$t/munge" "$t/state" "$t/spool" "$t/out"
chmod 700 "$t/munge"
dd if=/dev/urandom of="$t/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$t/munge/munge.key"
munged -f --key-file="$t/munge/munge.key" --socket="$t/munge/sock" \
    --pid-file="$t/munge/munged.pid" --log-file="$t/munged.log" \
    --seed-file="$t/munge/seed" >"$t/munged.start" 2>&1 \
    || skip "munged does not start here: $(tail -n 1 "$t/munged.start")"
w=0; while [ ! -s "$t/munge/munged.pid" ] && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
pids="$(cat "$t/munge/munged.pid" 2>/dev/null)"

# slurm: this host as the controller and the only node, on free loopback ports
host=$(hostname -s)
cpus=$(nproc)
port=$((20000 + $$ % 20000))
user=$(id -un)
cat >"$t/slurm.conf" <<CONF
ClusterName=tpusimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$t/munge/sock
CredType=cred/munge
StateSaveLocation=$t/state
SlurmdSpoolDir=$t/spool
SlurmctldPidFile=$t/slurmctld.pid
SlurmdPidFile=$t/slurmd.pid
SlurmctldLogFile=$t/slurmctld.log
SlurmdLogFile=$t/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$t/slurm.conf"
slurmctld -i -f "$SLURM_CONF" >"$t/slurmctld.start" 2>&1 \
    || skip "slurmctld does not start here: $(tail -n 1 "$t/slurmctld.start")"
w=0; while [ ! -s "$t/slurmctld.pid" ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
pids="$pids $(cat "$t/slurmctld.pid" 2>/dev/null)"
slurmd -f "$SLURM_CONF" >"$t/slurmd.start" 2>&1 \
    || skip "slurmd does not start here: $(tail -n 1 "$t/slurmd.start")"
w=0; while [ ! -s "$t/slurmd.pid" ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
pids="$pids $(cat "$t/slurmd.pid" 2>/dev/null)"
w=0
until scontrol show node "$host" 2>/dev/null | grep -q 'State=IDLE'; do
    [ $w -lt 300 ] || skip "the Slurm node did not come up in 30 s: $(scontrol show node "$host" 2>&1 | grep -o 'State=[^ ]*')"
    sleep 0.1; w=$((w + 1))
done
up=$(date +%s)

# the sweep: 3 shards and the merge, as a user would submit it
cd "$t/out" || fail "cd"
TPUSIM=$bin TPUSIM_JOBS=1 sh "$top/tools/slurm_sweep.sh" "$spec" "$t/out/merged" 3 \
    --output="$t/out/slurm-%x-%A_%a.out" >"$t/submit.out" 2>&1 || fail "submit: $(cat "$t/submit.out")"
merge=$(sed -n 's/.*merge: job \([0-9]*\) into.*/\1/p' "$t/submit.out")
[ -n "$merge" ] || fail "no merge job id in: $(cat "$t/submit.out")"
w=0
while squeue -h -j "$merge" 2>/dev/null | grep -q .; do
    [ $w -lt 3000 ] || fail "the merge job did not finish in 300 s"
    sleep 0.1; w=$((w + 1))
done
state=$(scontrol show job "$merge" 2>/dev/null | grep -o 'JobState=[A-Z]*')
[ "$state" = JobState=COMPLETED ] || fail "merge job $merge: $state"
done_t=$(date +%s)

# the same sweep in one process, and the two directories byte for byte
"$bin" sweep "$spec" -o "$t/out/single" -j 2 >/dev/null 2>&1 || fail "single-process run"
# the measured figures (each point's wall_s, cpu_s and peak_rss_bytes) differ between runs:
# the same placeholders on both sides before the byte-for-byte comparison
measured() {
    find "$@" -name '*.json' -exec sed -i -e 's/"wall_s": [0-9.]*/"wall_s": W/' \
        -e 's/"cpu_s": [0-9.e-]*/"cpu_s": C/' -e 's/"peak_rss_bytes": [0-9]*/"peak_rss_bytes": R/' {} + \
        && find "$@" -name '*.csv' -exec sed -i 's/,[0-9.]*,[0-9]*$/,W,R/' {} +
}
measured "$t/out/single" "$t/out/merged"
diff -r "$t/out/single" "$t/out/merged" >"$t/diff" 2>&1 || fail "merged != single run: $(head -n 5 "$t/diff")"
[ -s "$t/out/merged/report.md" ] || fail "no report"
echo "cluster-test: Slurm up in $((up - start)) s, sweep of 3 shards + merge in $((done_t - up)) s"
echo "cluster-test: 1 passed, 0 failed"
