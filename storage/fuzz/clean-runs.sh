#!/bin/sh
# Sums build-fuzz/runs.log per harness since its last failed run: the
# executions and seconds each harness has run clean, and the date of its
# last run, as a Markdown table for docs/RELIABILITY.md ("Fuzzing").
#   sh fuzz/clean-runs.sh [build-fuzz/runs.log]
awk '
{
	split($3, rc, "="); split($4, runs, "="); split($5, secs, "=")
	name = $2
	if (rc[2] != 0) { clean_runs[name] = 0; clean_secs[name] = 0; failed[name] = 1; next }
	clean_runs[name] += runs[2]; clean_secs[name] += secs[2]
	last[name] = substr($1, 1, 10)
}
END {
	for (name in clean_runs)
		if (last[name] != "")
			printf "| `%s` | %d | %d | %s |\n", name, clean_runs[name], clean_secs[name], last[name]
}' "${1:-build-fuzz/runs.log}" | sort
