#!/usr/bin/env bash
# drill.sh: the game-day style drill (burst, settle, reconcile, invariants) against both targets
# as real processes on the local stack, each driven only by its target profile: fsctl serve
# through the default profile, and the Spring-article shop (examples/articleshop) through
# profiles/spring-article.yaml. Needs the local stack (make stack-up). Exits non-zero when either
# drill fails. Env: GO, FSCTL, DRILL_BUYERS (2000), FSCTL_POSTGRES_URL (the stack's).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FSCTL=${FSCTL:-bin/fsctl}
BUYERS=${DRILL_BUYERS:-2000}
PG=${FSCTL_POSTGRES_URL:-postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable}
# The article shop gets a database of its own on the same server: it is someone else's system.
ARTICLE_PG=$(printf '%s' "$PG" | sed -E 's#^(postgres(ql)?://[^/]+)/[^?]*#\1/fsctl_drill_article#')
SHOP=127.0.0.1:18090
SERVE=127.0.0.1:18080

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

. scripts/lib.sh # waitfor, listening: both servers listen once they are ready

$GO build -o "$FSCTL" ./cmd/fsctl
$GO build -o bin/articleshop ./examples/articleshop/cmd/articleshop

command -v psql >/dev/null || { echo "drill: psql missing (make deps installs postgresql)" >&2; exit 1; }
psql -q "$PG" -c "DROP DATABASE IF EXISTS fsctl_drill_article WITH (FORCE)" -c "CREATE DATABASE fsctl_drill_article"

echo "--- drill: the Spring-article shop through profiles/spring-article.yaml"
bin/articleshop --addr "$SHOP" --postgres-url "$ARTICLE_PG" --item 7001=200 --item 7002=100 >"$tmp/articleshop.log" 2>&1 &
pids+=($!)
waitfor "$SHOP" "the article shop" "$tmp/articleshop.log"
FSCTL_POSTGRES_URL=$ARTICLE_PG "$FSCTL" gameday drill --profile profiles/spring-article.yaml \
	--target "http://$SHOP" --sale article --item 7001 --item 7002 --buyers "$BUYERS"

echo "--- drill: fsctl serve through the default profile"
"$FSCTL" sale create -f examples/sale.yaml --reset >/dev/null
"$FSCTL" serve --addr "$SERVE" >"$tmp/serve.log" 2>&1 &
pids+=($!)
waitfor "$SERVE" "fsctl serve" "$tmp/serve.log"
"$FSCTL" gameday drill --sale black-friday --target "http://$SERVE" --buyers "$BUYERS"
