#!/bin/sh
# fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer harnesses (build-fuzz: clang-19, NETC_FUZZ=ON)
# and fuzzes each target (frontend onnx bundle checkpoint idx cifar npy image; default all) for
# SECONDS (default 15, what scripts/test.sh runs) from its seeds in fuzz/corpus/. Exit 1 on any finding (a crash,
# a sanitizer report, a leak, a timeout, running out of memory), with the reproducer's path; 2 on a
# usage error. docs/testing.md has the long run's figures and how to reproduce a finding.
#
# Environment: FUZZ_JOBS (1 or 2, default 2) targets at once, one process each; FUZZ_RUNS a number
# of executions after which a target stops before its SECONDS are up (the long run's bar); FUZZ_OUT
# a folder to keep the logs and grown corpora in (default a temporary one, removed unless something
# was found). The repository's corpus folders are never written: each run starts from a copy.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=${1:-15}
[ $# -gt 0 ] && shift
targets=${*:-frontend onnx bundle checkpoint idx cifar npy image}
jobs=${FUZZ_JOBS:-2}
case $seconds in '' | *[!0-9]* | 0)
	echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]  (SECONDS a whole number above 0)" >&2
	exit 2 ;;
esac
case $jobs in 1 | 2) ;; *) echo "fuzz.sh: FUZZ_JOBS is 1 or 2, not '$jobs'" >&2; exit 2 ;; esac
runs=${FUZZ_RUNS:--1}
case $runs in -1) ;; '' | *[!0-9]*) echo "fuzz.sh: FUZZ_RUNS is a number of executions, not '$runs'" >&2; exit 2 ;; esac
for t in $targets; do
	case $t in frontend | onnx | bundle | checkpoint | idx | cifar | npy | image) ;;
	*) echo "fuzz.sh: unknown target '$t' (targets: frontend onnx bundle checkpoint idx cifar npy image)" >&2; exit 2 ;;
	esac
done

CC=clang-19 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETC_FUZZ=ON -DNETC_WERROR=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzzers >/dev/null

out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/netc-fuzz.XXXXXX")}
mkdir -p "$out"

# Per target: the largest input worth trying (a little above the largest seed), the dictionary,
# and seed folders besides fuzz/corpus/<target>.
max_len() {
	case $1 in
	frontend) echo 4096 ;;    # every model but googlenet.net (9 KB; 50 times slower through the passes)
	onnx) echo 8192 ;;        # the seeds are small models of one or a few operators (up to 5 KB)
	bundle) echo 40960 ;;     # tiny.bundle is 33 KB, most of it code the reader does not look in
	checkpoint) echo 4096 ;;  # ckpt.safetensors is 2.5 KB
	idx) echo 4096 ;;         # four small IDX files
	cifar) echo 24576 ;;      # six one-record files (3073 bytes each), and room for one more record
	npy) echo 4096 ;;         # the seeds are small arrays (under 200 bytes)
	image) echo 8192 ;;       # the seeds are small images (under 1 KB)
	esac
}
dict() {
	case $1 in
	frontend) echo fuzz/net.dict ;;
	onnx) echo fuzz/onnx.dict ;;
	bundle | checkpoint) echo "fuzz/$1.dict" ;;
	idx | cifar) echo fuzz/data.dict ;;
	npy | image) echo "fuzz/$1.dict" ;;
	esac
}
seeds() {
	[ "$1" = frontend ] && echo models tests/parser/valid tests/parser/invalid tests/lit/inputs
	return 0
}

# Fuzzes target $1; writes $out/$1/status: "ok RUNS EXEC_PER_S" or "finding REPRODUCER".
run_target() {
	t=$1
	dir=$out/$t
	mkdir -p "$dir/corpus" "$dir/artifacts"
	cp -R "fuzz/corpus/$t/." "$dir/corpus/"
	# -close_fd_mask=3: the readers' error messages go nowhere; sanitizer reports still reach the log
	# shellcheck disable=SC2046
	if "build-fuzz/fuzz/fuzz_$t" "$dir/corpus" $(seeds "$t") \
		-max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
		-dict="$(dict "$t")" -artifact_prefix="$dir/artifacts/" -close_fd_mask=3 -print_final_stats=1 \
		>"$dir/log" 2>&1; then
		rc=0
	else
		rc=$?
	fi
	found=$(find "$dir/artifacts" -type f ! -name 'slow-unit-*' | head -n 1)
	if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
		echo "finding ${found:-"(no reproducer written; exit status $rc)"}" >"$dir/status"
	else
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
		echo "ok ${runs:-0} ${rate:-0}" >"$dir/status"
	fi
}

set -- $targets
while [ $# -gt 0 ]; do
	run_target "$1" &
	first=$!
	second=
	if [ "$jobs" -eq 2 ] && [ $# -gt 1 ]; then
		run_target "$2" &
		second=$!
		shift
	fi
	shift
	wait "$first"
	[ -z "$second" ] || wait "$second"
done

fail=0
total=0
date=$(date -u +%Y-%m-%d)
echo "fuzz.sh: $seconds s per target, $date"
for t in $targets; do
	read -r what a b <"$out/$t/status"
	if [ "$what" = ok ]; then
		total=$((total + a))
		printf '  %-10s %12s runs  %7s runs/s  0 findings\n' "$t" "$a" "$b"
	else
		fail=1
		printf '  %-10s FINDING: %s\n' "$t" "$a $b"
		grep -m 1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY:' \
			"$out/$t/log" | sed 's/^/             /' || true
		echo "             log: $out/$t/log"
		[ "$a" = "(no" ] || echo "             reproduce: $root/build-fuzz/fuzz/fuzz_$t $a"
	fi
done
echo "  total      $total runs"
if [ "$fail" -ne 0 ]; then
	echo "fuzz.sh: FAILED: a finding is a bug: fix it at its root and add the reproducer to fuzz/corpus/<target>/"
	exit 1
fi
[ -n "${FUZZ_OUT:-}" ] || rm -rf "$out"
exit 0
