#!/bin/sh
# profile_check.sh: `netc bench --profile` on an NVIDIA GPU, and the issue's bar for it: the
# kernels' times sum to within 10% of the step run whole. Two halves, as the GPU machine has only
# a runtime-only netc:
#
#   here (with the compiler):  scripts/gpu/profile_check.sh compile DIR [ARCH [MODEL...]]
#     compiles models/MODEL.net for ARCH (default sm_90) into DIR/MODEL.bundle (default models:
#     mnist cifar10_tf alexnet_bench);
#   on the GPU machine:        scripts/gpu/profile_check.sh run DIR [NETC]
#     for every bundle in DIR: netc bench --profile --trace DIR/MODEL.trace.json on DEVICE
#     (default cuda), the table in DIR/MODEL.profile.txt, and the ratio of the kernels' sum to
#     the step run whole. A bundle records no FLOP or byte counts, so its rows show '-' there;
#     `netc bench MODEL.net --profile` on the compiling machine's CPU shows them. Exit status 0
#     when every ratio is within 0.9 and 1.1 and the device's events timed the kernels.
#
# On a GPU the kernels are timed with CUDA (or HIP) events recorded between launches queued back
# to back on one stream, held behind a gate until the first 128 are queued, with no wait per
# kernel (runtime/launch_timing.c); the step run whole replays a captured graph. The run also
# prints test_rt_cuda's profile of its two hand-written kernels when build/tests/test_rt_cuda is
# there (a runtime-only build makes it).
set -e
mode=$1 dir=$2
[ -n "$mode" ] && [ -n "$dir" ] || { echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2; exit 2; }
case $mode in
compile)
	arch=${3:-sm_90}
	shift 3 2>/dev/null || shift $#
	models=${*:-mnist cifar10_tf alexnet_bench}
	mkdir -p "$dir"
	for m in $models; do
		build/netc compile "models/$m.net" --target "$arch" -o "$dir/$m.bundle"
	done
	;;
run)
	netc=${3:-build/netc}
	status=0
	for b in "$dir"/*.bundle; do
		m=$(basename "$b" .bundle)
		"$netc" bench "$b" --device "${DEVICE:-cuda}" --steps 20 --repeats 5 --trace "$dir/$m.trace.json" \
			> "$dir/$m.profile.txt"
		ratio=$(sed -n 's/^sum of kernels \/ step run whole: \([0-9.]*\)%.*/\1/p' "$dir/$m.profile.txt")
		events=$(grep -c "^kernels timed by the device's events" "$dir/$m.profile.txt" || true)
		echo "$m: kernels' sum / step = $ratio% (events: $events)"
		[ "$events" = 1 ] || { echo "$m: the kernels were not timed with events" >&2; status=1; }
		awk -v r="$ratio" 'BEGIN { exit !(r >= 90 && r <= 110) }' || status=1
	done
	tests=$(dirname "$netc")/tests
	[ -x "$tests/test_rt_cuda" ] && { "$tests/test_rt_cuda" || status=1; }
	exit $status
	;;
*)
	echo "usage: $0 compile DIR [ARCH [MODEL...]] | run DIR [NETC]" >&2
	exit 2
	;;
esac
