#!/usr/bin/env bash
# secure.sh: every operator command on the secure stack (fsctl stack up --secure: Redis TLS-only
# with an ACL user, PostgreSQL verify-full with a SCRAM password, Kafka SASL_SSL SCRAM-SHA-512),
# each pointed at it only by `fsctl stack env`: the demo, a sale created afresh, fsctl serve,
# preflight, a burst with --check-state, the war room, reconcile and its Redis rebuild, and the
# drill; then bad credentials, each of which must fail on one line that names the service.
# Needs the secure stack (make stack-up-secure). Env: FSCTL, SECURE_STACK_DIR (.stack-secure),
# SECURE_BUYERS (1000).
set -euo pipefail
cd "$(dirname "$0")/.."

FSCTL=${FSCTL:-bin/fsctl}
DIR=${SECURE_STACK_DIR:-.stack-secure}
BUYERS=${SECURE_BUYERS:-1000}
SERVE=127.0.0.1:18180
SALE=black-friday

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

. scripts/lib.sh # waitfor
stack_env=$("$FSCTL" stack env --dir "$DIR")
eval "$stack_env"
step() { echo "--- secure: $*"; }

step "demo"
"$FSCTL" demo --buyers "$BUYERS" >"$tmp/demo.out"
tail -1 "$tmp/demo.out"

step "sale create --reset, then fsctl serve on $SERVE"
"$FSCTL" sale create -f examples/sale.yaml --reset >"$tmp/sale.out"
head -2 "$tmp/sale.out"
"$FSCTL" serve --addr "$SERVE" >"$tmp/serve.log" 2>&1 &
pids+=($!)
waitfor "$SERVE" "fsctl serve" "$tmp/serve.log"
target=(--target "http://$SERVE")

step "preflight"
"$FSCTL" preflight --sale "$SALE" "${target[@]}" | tail -3

step "blast --check-state"
"$FSCTL" blast --sale "$SALE" --item console --buyers "$BUYERS" "${target[@]}" --check-state | tail -4

step "warroom --once"
"$FSCTL" warroom --sale "$SALE" "${target[@]}" --once --fail-on crit | tail -3

step "reconcile, then reconcile --rebuild-redis"
"$FSCTL" reconcile --sale "$SALE" | tail -1
"$FSCTL" reconcile --sale "$SALE" --rebuild-redis | tail -1

step "gameday drill"
"$FSCTL" gameday drill --sale "$SALE" "${target[@]}" --buyers "$BUYERS" | tail -2

# Each bad credential must stop the command with its own exit status and one line naming what to fix.
expect() { # STATUS PATTERN -- COMMAND...: the command fails with STATUS and its stderr says PATTERN
	local want=$1 pattern=$2
	shift 3
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	set -e
	if [ "$got" != "$want" ] || ! grep -q -- "$pattern" "$tmp/out" "$tmp/err"; then
		echo "secure: expected exit $want and \"$pattern\" from: $*" >&2
		echo "got exit $got; stdout:" >&2; cat "$tmp/out" >&2
		echo "stderr:" >&2; cat "$tmp/err" >&2
		exit 1
	fi
	echo "refused as it should: exit $got, $(grep -h -m1 -- "$pattern" "$tmp/out" "$tmp/err" | cut -c1-160)"
}
step "bad credentials"
expect 3 "SASL login refused" -- env FSCTL_KAFKA_PASSWORD=wrong "$FSCTL" preflight --sale "$SALE" "${target[@]}"
expect 1 "WRONGPASS" -- env FSCTL_REDIS_PASSWORD=wrong "$FSCTL" reconcile --sale "$SALE"
expect 1 "password authentication failed" -- env PGPASSWORD=wrong PGPASSFILE=/dev/null "$FSCTL" reconcile --sale "$SALE"
expect 2 "kafka-sasl" -- env FSCTL_KAFKA_SASL=gssapi "$FSCTL" reconcile --sale "$SALE"
# A CA that did not sign the stack's certificates: the system's bundle.
other_ca=/etc/ssl/certs/ca-certificates.crt
expect 3 "does not trust" -- env FSCTL_KAFKA_CA="$other_ca" "$FSCTL" preflight --sale "$SALE" "${target[@]}"
expect 1 "does not trust" -- env FSCTL_REDIS_CA="$other_ca" "$FSCTL" reconcile --sale "$SALE"
expect 1 "does not trust" -- env FSCTL_POSTGRES_URL="${FSCTL_POSTGRES_URL/sslrootcert=*/sslrootcert=$other_ca}" "$FSCTL" reconcile --sale "$SALE"
echo "secure: every command ran on the secure stack"
