#!/bin/sh
# seed_sweep.sh RUNS TEST...: runs each unit test of build/tests RUNS times, each run with the fresh
# seed it draws itself, and prints the seed of every run that failed with the lines that say why
# (replay one with NETC_TEST_SEED=N build/tests/TEST). A tolerance that rounding alone can exceed
# fails once in hundreds of runs, and CI draws new seeds every time: sweep a numbers test after
# changing it or its tolerance (docs/testing.md, "Numbers against the reference").
# Exit 1 when a run failed, 2 on a usage error.
set -u
cd "$(dirname "$0")/.."
usage() {
	echo "usage: scripts/seed_sweep.sh RUNS TEST..." >&2
	exit 2
}
runs=${1:-}
case $runs in '' | *[!0-9]* | 0) usage ;; esac
shift
[ $# -gt 0 ] || usage
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for test in "$@"; do
	exe=build/tests/$test
	[ -x "$exe" ] || { echo "seed_sweep.sh: $exe: no such test (build it first)" >&2; exit 2; }
	bad=0
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		if ! "$exe" >"$log" 2>&1; then
			bad=$((bad + 1))
			grep -m1 'seed' "$log"
			grep 'FAIL' "$log" | head -5
		fi
	done
	echo "$test: $bad of $runs runs failed"
	[ $bad -eq 0 ] || failed=1
done
exit $failed
