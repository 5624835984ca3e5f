#!/bin/sh
# run_corpus.sh NETC DIR: every DIR/valid/*.net must print (exit 0); every DIR/invalid/*.net must
# fail with exit 1 and an "error:" line. Any other outcome (a crash, a hang, a sanitizer report)
# fails the run.
netc=$1
dir=$2
if [ ! -x "$netc" ] || [ ! -d "$dir" ]; then
	echo "usage: run_corpus.sh NETC DIR" >&2
	exit 2
fi
ASAN_OPTIONS=detect_leaks=1
export ASAN_OPTIONS
err=$(mktemp)
trap 'rm -f "$err"' EXIT
fail=0
count=0

check() { # file expected-status
	count=$((count + 1))
	timeout 20 "$netc" print "$1" >/dev/null 2>"$err"
	status=$?
	if grep -q Sanitizer "$err"; then
		echo "FAIL $1: sanitizer report"; cat "$err"; fail=1
	elif [ "$status" -ne "$2" ]; then
		echo "FAIL $1: exit $status, expected $2"; head -5 "$err"; fail=1
	elif [ "$2" -eq 1 ] && ! grep -q "error:" "$err"; then
		echo "FAIL $1: no error message"; fail=1
	fi
}

for f in "$dir"/valid/*.net; do check "$f" 0; done
for f in "$dir"/invalid/*.net; do check "$f" 1; done
echo "parser corpus: $count files, $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
