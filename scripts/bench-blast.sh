#!/usr/bin/env bash
# bench-blast.sh: fsctl blast against vegeta's attacker and wrk on one trivial endpoint (a Go
# server of its own process answering 204), printed as one table of ratios. The figures are
# only comparable within one run: on a 2-core box every generator takes CPU from the server.
# Needs no stack. Env: GO, WRK_DURATION (10s), BLAST_BENCH_CONNS (pool size of the throughput
# run and wrk's connections, 200), BLAST_BENCH_REQUESTS, BLAST_BENCH_BUYERS (skew burst, 50000).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
WRK_DURATION=${WRK_DURATION:-10s}
CONNS=${BLAST_BENCH_CONNS:-200}

tmp=$(mktemp -d)
server=""
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# The endpoint lives outside the test binary so wrk and the benchmarks hit the very same server.
cat >"$tmp/main.go" <<'GO'
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
}
GO
(cd "$tmp" && GOFLAGS= "$GO" build -o trivial main.go)
"$tmp/trivial" >"$tmp/addr" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/addr" ] && break; sleep 0.1; done
[ -s "$tmp/addr" ] || { echo "bench-blast: the trivial server did not start" >&2; exit 1; }
url="http://$(head -1 "$tmp/addr")"

echo "machine: $(nproc) cores, ulimit -n $(ulimit -n), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "endpoint: $url (204, no body)"
# The benchmarks of blast against the trivial endpoint only: BenchmarkBlastReadTraffic runs the
# bundled checkout on the local stack, and make bench (which starts the stack) runs it.
bench='^BenchmarkBlast(VsVegeta|PreparedBuyer|HTTPVersions)'
echo "+ BLAST_BENCH_URL=$url $GO test -run '^\$' -bench '$bench' -benchtime 1x -benchmem ./benchmarks/"
BLAST_BENCH_URL=$url BLAST_BENCH_CONNS=$CONNS "$GO" test -run '^$' -bench "$bench" -benchtime 1x -benchmem \
	-timeout 10m ./benchmarks/ | tee "$tmp/bench.txt"

wrk_rps=""
if command -v wrk >/dev/null 2>&1; then
	echo "+ wrk -t$(nproc) -c$CONNS -d$WRK_DURATION $url/"
	wrk -t"$(nproc)" -c"$CONNS" -d"$WRK_DURATION" "$url/" | tee "$tmp/wrk.txt"
	wrk_rps=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/wrk.txt")
else
	echo "wrk not installed"
fi

# A benchmark line is "Name-P N value unit value unit ...": index every metric by its unit.
awk -v wrk="$wrk_rps" -v conns="$CONNS" '
/^Benchmark/ { for (i = 3; i < NF; i += 2) if (!(($(i + 1)) in m)) m[$(i + 1)] = $i } # the first benchmark to report a unit names it
END {
	b = m["blast-req/s"]; v = m["vegeta-req/s"]
	if (b == "" || v == "" || m["blast-release-ms"] == "") { print "bench-blast: benchmark figures missing" > "/dev/stderr"; exit 1 }
	printf "\n%-44s %12s %10s\n", "throughput, " conns " connections", "req/s", "x blast"
	printf "%-44s %12.0f %10.2f\n", "fsctl blast (prepared buyers, warmed pool)", b, 1
	printf "%-44s %12.0f %10.2f\n", "fsctl blast --engine raw (pipelined bytes)", m["raw-req/s"], m["raw-req/s"] / b
	printf "%-44s %12.0f %10.2f\n", "vegeta attacker (unreachable rate)", v, v / b
	if (wrk != "") printf "%-44s %12.0f %10.2f\n", "wrk", wrk, wrk / b
	else printf "%-44s %12s %10s\n", "wrk", "not installed", "-"
	c = m["blast-cpu-us/req"]
	if (c != "") {
		printf "\n%-44s %12s %10s\n", "CPU per request (this process)", "us", "x blast"
		printf "%-44s %12.1f %10.2f\n", "fsctl blast (from the release)", c, 1
		printf "%-44s %12.1f %10.2f\n", "vegeta attacker", m["vegeta-cpu-us/req"], m["vegeta-cpu-us/req"] / c
	}
	r = m["blast-release-ms"]
	printf "\n%-44s %12s %10s\n", "release of " m["buyers"] " buyers", "spread ms", "x blast"
	printf "%-44s %12.1f %10.2f\n", "blast http engine (first to last sent)", r, 1
	printf "%-44s %12.1f %10.2f\n", "blast on the wire (first to last written)", m["blast-written-ms"], m["blast-written-ms"] / r
	printf "%-44s %12.1f %10.2f\n", "blast --engine raw (first to last written)", m["raw-written-ms"], m["raw-written-ms"] / r
	printf "%-44s %12.1f %10.2f\n", "vegeta pacer (result timestamps)", m["vegeta-release-ms"], m["vegeta-release-ms"] / r
	printf "\n%-44s %12.0f\n", "prepared buyer: bytes allocated", m["alloc-B/buyer"]
	printf "%-44s %12.0f\n", "prepared buyer: live heap bytes", m["heap-B/buyer"]
	printf "%-44s %12.1f\n", "prepared buyer: allocations", m["allocs/buyer"]
	printf "%-44s %12.0f\n", "prepared buyer, raw engine: bytes allocated", m["raw-alloc-B/buyer"]
	printf "%-44s %12.0f\n", "prepared buyer, raw engine: live heap bytes", m["raw-heap-B/buyer"]
	printf "%-44s %12.1f\n", "prepared buyer, raw engine: allocations", m["raw-allocs/buyer"]
}' "$tmp/bench.txt"
