#!/bin/sh
# tools/slurm_sweep.sh -- a tpusim sweep on a Slurm cluster: one job array of N
# shards, then a merge job that runs once they all succeeded.
#
#   tools/slurm_sweep.sh SPEC.yaml OUT N [sbatch options...]
#
# submits `tpusim sweep SPEC.yaml --shard I/N -o OUT-shard-I-of-N` as array
# tasks 0..N-1 and `tpusim sweep merge OUT OUT-shard-*-of-N` with
# --dependency=afterok on the array, and prints both job ids. OUT and the
# shard directories must be on a file system every node sees (the job runs in
# the submitting directory). TPUSIM names the binary (default: tpusim on the
# PATH, as the nodes see it); TPUSIM_JOBS the points each task runs at once
# (default: the task's --cpus-per-task, else 1). Extra sbatch options (a
# partition, a time limit, --cpus-per-task=4) apply to both jobs. A requeued
# task resumes its shard (--resume); a failed task leaves the merge pending
# (resubmit that task, or `scancel` the merge and merge by hand).
#
# The same file is the batch script of both jobs: sbatch runs it with
# SLURM_ARRAY_TASK_ID set (a shard) or TPUSIM_SWEEP_MERGE=1 (the merge).
#SBATCH --job-name=tpusim-sweep
#SBATCH --ntasks=1
#SBATCH --output=slurm-%x-%A_%a.out
set -eu

if [ $# -lt 3 ]; then
    echo "usage: tools/slurm_sweep.sh SPEC.yaml OUT N [sbatch options...]" >&2
    exit 2
fi
spec=$1 out=$2 n=$3
shift 3
bin=${TPUSIM:-tpusim}

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    i=$SLURM_ARRAY_TASK_ID
    exec "$bin" sweep "$spec" --shard "$i/$n" -o "$out-shard-$i-of-$n" --resume \
        -j "${TPUSIM_JOBS:-${SLURM_CPUS_PER_TASK:-1}}"
fi
if [ "${TPUSIM_SWEEP_MERGE:-}" = 1 ]; then
    set --
    i=0
    while [ "$i" -lt "$n" ]; do
        set -- "$@" "$out-shard-$i-of-$n"
        i=$((i + 1))
    done
    exec "$bin" sweep merge "$out" "$@"
fi

case $n in
'' | *[!0-9]*) echo "tools/slurm_sweep.sh: N must be a number of shards, got '$n'" >&2; exit 2 ;;
esac
[ "$n" -ge 1 ] || { echo "tools/slurm_sweep.sh: N must be at least 1" >&2; exit 2; }
array=$(sbatch --parsable --array="0-$((n - 1))" "$@" "$0" "$spec" "$out" "$n")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --job-name=tpusim-sweep-merge \
    --output="slurm-%x-%j.out" --export=ALL,TPUSIM_SWEEP_MERGE=1 "$@" "$0" "$spec" "$out" "$n")
merge=${merge%%;*}
echo "submitted shards: job array $array (0-$((n - 1))); merge: job $merge into $out"
