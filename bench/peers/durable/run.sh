#!/usr/bin/env bash
# run.sh restate|temporal [rounds]: demiurge's 5-effect sequential workflow
# on a durable-execution peer and on demiurge, side by side in one run.
#
# It starts the peer's server on loopback in a temporary directory, runs
# `rounds` (default 3) alternating rounds of the peer (the harness in this
# directory) and of demiurge's own benchmarks (go test ./world -bench
# 'Workflow5/sequential|WorkflowThroughput/sequential'), stops the server,
# and prints every figure with the ratios of each round. See
# docs/BENCHMARKS.md. Not run by CI (minutes, and Temporal's CLI takes
# about 6 minutes to build the first time).
#
#   restate:  the server from the npm package @restatedev/restate-server
#             (npm ci in this directory), Go SDK github.com/restatedev/sdk-go
#   temporal: the dev server of `go install github.com/temporalio/cli/cmd/temporal@v1.5.1`
#             (SQLite file, default pragmas), Go SDK go.temporal.io/sdk
set -euo pipefail

peer=${1:-}
rounds=${2:-3}
case "$peer" in
restate | temporal) ;;
*)
	echo "usage: $0 restate|temporal [rounds]" >&2
	exit 2
	;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
server=
cleanup() {
	if [[ -n "$server" ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building the harness and demiurge's world benchmarks"
(cd "$here" && go build -o "$work/durable" .)
(cd "$root" && go test -c -o "$work/world.test" ./world)

case "$peer" in
restate)
	if [[ ! -d "$here/node_modules/@restatedev/restate-server" ]]; then
		(cd "$here" && npm ci --no-audit --no-fund)
	fi
	# The package's bin is a node script that spawns the platform's binary:
	# run the binary itself, so that one pid is the server.
	bin=$(ls "$here"/node_modules/@restatedev/restate-server-*/bin/restate-server | head -n 1)
	echo "== starting restate-server on 127.0.0.1 (data in $work/restate)"
	RESTATE_LISTEN_MODE=tcp \
		RESTATE_BIND_ADDRESS=127.0.0.1:15122 \
		RESTATE_ADVERTISED_ADDRESS=http://127.0.0.1:15122/ \
		RESTATE_INGRESS__BIND_ADDRESS=127.0.0.1:18080 \
		RESTATE_ADMIN__BIND_ADDRESS=127.0.0.1:19070 \
		RESTATE_ADMIN__QUERY_ENGINE__PGSQL_BIND_ADDRESS=127.0.0.1:19071 \
		RESTATE_DISABLE_TELEMETRY=true \
		RESTATE_LOG_FILTER=error \
		"$bin" --no-logo --node-name bench \
		--base-dir "$work/restate" >"$work/server.log" 2>&1 &
	server=$!
	peerargs=(restate -ingress http://127.0.0.1:18080 -admin http://127.0.0.1:19070 -data "$work/restate")
	;;
temporal)
	temporal=$(go env GOPATH)/bin/temporal
	if [[ ! -x "$temporal" ]]; then
		echo "== go install github.com/temporalio/cli/cmd/temporal@v1.5.1 (about 6 minutes)"
		go install github.com/temporalio/cli/cmd/temporal@v1.5.1
	fi
	echo "== starting temporal server start-dev on 127.0.0.1 (SQLite in $work)"
	"$temporal" server start-dev --headless --ip 127.0.0.1 --port 17233 --http-port 17243 \
		--metrics-port 17244 --db-filename "$work/temporal.db" --log-level error >"$work/server.log" 2>&1 &
	server=$!
	# Temporal is ~100× slower a workflow: fewer of them.
	peerargs=(temporal -hostport 127.0.0.1:17233 -db "$work/temporal.db" -n 60 -warmup 5 -window 20s)
	;;
esac

out=$work/out.txt
for r in $(seq 1 "$rounds"); do
	echo "== round $r of $rounds (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
	if ! "$work/durable" "${peerargs[@]}" | tee -a "$out"; then
		echo "the $peer harness failed; the server's log:" >&2
		tail -n 30 "$work/server.log" >&2
		exit 1
	fi
	# The peer's server is stopped (SIGSTOP) while demiurge runs, so its
	# background work (compactions, timers) does not slow demiurge down.
	kill -STOP "$server"
	(cd "$root/world" && "$work/world.test" -test.run '^$' \
		-test.bench 'BenchmarkWorkflow5/sequential|BenchmarkWorkflowThroughput/sequential' \
		-test.benchtime 300x) | grep '^Benchmark' | sed -E 's/-[0-9]+([[:space:]])/\1/' | tee -a "$out"
	kill -CONT "$server"
done

echo
echo "== $peer against demiurge, round by round"
awk -v peer="$peer" '
	function metric(line, name,   i, f) {
		n = split(line, f, "\t")
		for (i = 1; i <= n; i++) if (f[i] ~ (" " name "$")) { split(f[i], v, " "); return v[1] }
		return ""
	}
	/Workflow5\/sequential/ && $1 !~ /^BenchmarkWorkflow5/ { pp50[++np] = metric($0, "p50-ms") }
	/^BenchmarkWorkflow5\/sequential/ { dp50[++nd] = metric($0, "p50-ms"); dbytes[nd] = metric($0, "file-bytes/workflow") }
	/WorkflowThroughput\/sequential/ && $1 !~ /^BenchmarkWorkflowThroughput/ { pthr[++mp] = metric($0, "workflows/s"); pdisk[mp] = metric($0, "disk-bytes/workflow") }
	/^BenchmarkWorkflowThroughput\/sequential/ { dthr[++md] = metric($0, "workflows/s") }
	END {
		printf "%-6s %12s %12s %8s %14s %14s %8s %16s %16s\n", "round", peer " p50 ms", "demiurge", "ratio", peer " wf/s", "demiurge wf/s", "ratio", peer " B/wf", "demiurge B/wf"
		for (i = 1; i <= np; i++)
			printf "%-6d %12.3f %12.3f %8.3f %14.1f %14.1f %8.2f %16s %16s\n", i, pp50[i], dp50[i], dp50[i] / pp50[i], pthr[i], dthr[i], dthr[i] / pthr[i], pdisk[i], dbytes[i]
	}' "$out"
