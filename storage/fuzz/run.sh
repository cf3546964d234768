#!/bin/sh
# Runs libFuzzer harnesses for a bounded time each, some at a time, and ends
# with "N passed, N failed" (make fuzz, make fuzz-check).
#   sh fuzz/run.sh SECONDS JOBS NAME...     (from storage/, after make fuzz-build)
# A harness passes when its run ends without a crash, leak, timeout (an input
# over 10 s) or out-of-memory (over 2 GiB); the failing input is left as
# build-fuzz/NAME-crash-* (or leak-, timeout-, oom-), the log as
# build-fuzz/NAME.log.  Each result is appended to build-fuzz/runs.log.
# No leak is suppressed.  An allocation too large for the allocator returns
# NULL, as malloc does outside ASan, so that a decoder's handling of it is
# what is tested; one that succeeds beyond 2 GiB is an out-of-memory finding.

# One harness (the script calls itself so through xargs).
if [ "$1" = "--one" ]; then
	name=$2
	secs=$3
	log=build-fuzz/$name.log
	mkdir -p "build-fuzz/corpus/$name" "build-fuzz/seeds/$name"
	ASAN_OPTIONS=allocator_may_return_null=1 \
		"build-fuzz/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="build-fuzz/$name-" \
		"build-fuzz/corpus/$name" "build-fuzz/seeds/$name" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
	if [ "$rc" -eq 0 ]; then
		echo "ok   $name: ${runs:-?} runs in ${took:-?} s"
	else
		echo "FAIL $name: see $log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix)' "$log" | head -4 |
			sed 's/^/    /'
	fi
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $name rc=$rc runs=${runs:-?} seconds=${took:-?}" \
		>> build-fuzz/runs.log
	exit 0
fi

secs=$1
jobs=$2
shift 2
out=$(printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh "$0" --one {} "$secs")
echo "$out"
passed=$(echo "$out" | grep -c '^ok ')
failed=$(echo "$out" | grep -c '^FAIL ')
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq $# ]
