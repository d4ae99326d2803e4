#!/usr/bin/env bash
# The whole test suite, RUNS times in a row, with BURNERS processes spinning on
# the CPU the whole time (issue 20: flaky tests show under load, so the suite
# must pass with the machine busy). Prints one line per run and a summary;
# exits non-zero when any run failed. Each run's full output is kept in
# LOGDIR/run-N.log.
#
#   scripts/suite_under_load.sh [RUNS] [BURNERS]
#
# RUNS defaults to 5, BURNERS to the number of cores. The suite picks its
# server as `make test` does (TXNQ_TEST_DSN, else Docker, else embedded).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
burners=${2:-$(nproc)}
logdir=${LOGDIR:-.txnq/suite-under-load}
mkdir -p "$logdir"

make --no-print-directory lint install-spark >/dev/null

pids=()
stop_burners() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_burners EXIT
for _ in $(seq "$burners"); do
    .venv/bin/python -c 'while True: pass' &
    pids+=($!)
done
echo "suite_under_load: $runs runs, $burners CPU burners on $(nproc) cores, logs in $logdir"

failed=0
for run in $(seq "$runs"); do
    start=$(date +%s)
    status=0
    .venv/bin/python -m pytest -q -p no:cacheprovider >"$logdir/run-$run.log" 2>&1 || status=$?
    summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$logdir/run-$run.log" | tail -1 || true)
    echo "run $run: exit $status in $(( $(date +%s) - start ))s: ${summary:-no summary line}"
    if [ "$status" -ne 0 ]; then
        failed=$((failed + 1))
        grep -E '^(FAILED|ERROR) ' "$logdir/run-$run.log" || true
    fi
done
echo "suite_under_load: $failed of $runs runs failed"
[ "$failed" -eq 0 ]
