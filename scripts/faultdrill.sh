#!/usr/bin/env bash
# faultdrill.sh: fault drills against checkouts fsctl does not own, as a team runs them on its
# staging: a Toxiproxy server of its own (built from github.com/Shopify/toxiproxy/v2 v2.12.0) in
# front of the stores, the checkout as a process of its own, and `fsctl gameday drill -f FILE`
# driving the faults through the Toxiproxy API and exec/http steps.
#   (a) the Spring-article shop (examples/articleshop), its Redis, PostgreSQL and order writer's
#       Kafka through Toxiproxy: examples/drill-faults.yaml must pass;
#   (b) fsctl serve, run as a separate process and read only through its profile, its Redis and
#       PostgreSQL through Toxiproxy: the same scenario must pass;
#   (c) a planted lie: the article shop told to answer 202 when its Kafka publish fails
#       (--lose-orders-on-publish-error): examples/drill-lie.yaml cuts its Kafka, and the drill
#       must exit 4.
# Needs the local stack (make stack-up). Env: GO, FSCTL, FAULTDRILL_ONLY=c (only the planted lie).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FSCTL=${FSCTL:-bin/fsctl}
TOXI=127.0.0.1:18474
TARGET=127.0.0.1:18091

tmp=$(mktemp -d)
pids=()
cleanup() {
	if [ -f "$tmp/target.pid" ]; then kill "$(cat "$tmp/target.pid")" 2>/dev/null || true; fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

. scripts/lib.sh # waitfor, listening

$GO build -o "$FSCTL" ./cmd/fsctl
$GO build -o bin/articleshop ./examples/articleshop/cmd/articleshop
$GO build -o bin/toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server

eval "$("$FSCTL" stack env)"
hostport() { printf '%s' "$1" | sed -E 's#^[a-z+]+://([^@/]*@)?([^/?]+).*#\2#'; }
redis_hp=$(hostport "$FSCTL_REDIS_URL")
pg_hp=$(hostport "$FSCTL_POSTGRES_URL")
kafka_hp=${FSCTL_KAFKA_BROKERS%%,*}
via() { printf '%s' "$1" | sed -E "s#$2#$3#"; } # URL, host:port, proxy host:port

# The team's Toxiproxy: one proxy in front of each store.
cat >"$tmp/proxies.json" <<EOF
[{"name": "redis", "listen": "127.0.0.1:18479", "upstream": "$redis_hp", "enabled": true},
 {"name": "postgres", "listen": "127.0.0.1:18432", "upstream": "$pg_hp", "enabled": true},
 {"name": "kafka", "listen": "127.0.0.1:18492", "upstream": "$kafka_hp", "enabled": true}]
EOF
bin/toxiproxy-server -host 127.0.0.1 -port "${TOXI#*:}" -config "$tmp/proxies.json" >"$tmp/toxiproxy.log" 2>&1 &
pids+=($!)
waitfor "$TOXI" "toxiproxy-server" "$tmp/toxiproxy.log"
export FSCTL_TOXIPROXY_URL=http://$TOXI

# The scenario's exec steps stop and start the target through these; its http step asks
# DRILL_HEALTH_URL. target RESTART_COMMAND... [-- FIRST_START_ARGS...]: the first start adds the
# arguments after --, which a restart mid-sale must not repeat (the article shop's --item preheats
# the stock from PostgreSQL, which lags the order log while a sale runs).
target() {
	local cmd=() first=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do cmd+=("$1"); shift; done
	if [ $# -gt 0 ]; then shift; first=("$@"); fi
	cat >"$tmp/start.sh" <<EOF
. "$PWD/scripts/lib.sh"
if listening $TARGET; then echo "$TARGET is taken: is the target still running?" >&2; exit 1; fi
nohup $(printf '%q ' "${cmd[@]}") "\$@" >>"$tmp/target.log" 2>&1 &
echo \$! >"$tmp/target.pid"
for _ in \$(seq 1 150); do
	if listening $TARGET && kill -0 "\$(cat "$tmp/target.pid")" 2>/dev/null; then exit 0; fi
	if ! kill -0 "\$(cat "$tmp/target.pid")" 2>/dev/null; then break; fi
	sleep 0.2
done
echo "the target did not come up at $TARGET" >&2; tail -20 "$tmp/target.log" >&2; exit 1
EOF
	cat >"$tmp/stop.sh" <<EOF
pid=\$(cat "$tmp/target.pid")
kill "\$pid"
for _ in \$(seq 1 150); do kill -0 "\$pid" 2>/dev/null || exit 0; sleep 0.1; done
echo "the target (pid \$pid) did not stop" >&2; exit 1
EOF
	export DRILL_START="bash $tmp/start.sh" DRILL_STOP="bash $tmp/stop.sh"
	bash "$tmp/start.sh" "${first[@]}"
}
stop_target() { bash "$tmp/stop.sh" 2>/dev/null || true; }

command -v psql >/dev/null || { echo "faultdrill: psql missing (make deps installs postgresql)" >&2; exit 1; }
ARTICLE_PG=$(printf '%s' "$FSCTL_POSTGRES_URL" | sed -E 's#^(postgres(ql)?://[^/]+)/[^?]*#\1/fsctl_faultdrill_article#')
psql -q "$FSCTL_POSTGRES_URL" -c "DROP DATABASE IF EXISTS fsctl_faultdrill_article WITH (FORCE)" -c "CREATE DATABASE fsctl_faultdrill_article"
article() { # ITEM=QUANTITY [FLAGS...]: the shop, its item preheated at its first start only
	local item=$1
	shift
	target bin/articleshop --addr "$TARGET" --redis-url "$(via "$FSCTL_REDIS_URL" "$redis_hp" 127.0.0.1:18479)" \
		--postgres-url "$(via "$ARTICLE_PG" "$pg_hp" 127.0.0.1:18432)" --kafka-brokers "$FSCTL_KAFKA_BROKERS" \
		--publish-via 127.0.0.1:18492 "$@" -- --item "$item"
}

if [ "${FAULTDRILL_ONLY:-}" != c ]; then
echo "--- faultdrill (a): the Spring-article shop behind Toxiproxy, examples/drill-faults.yaml"
article 7101=300
export DRILL_HEALTH_URL=http://$TARGET/actuator/health
FSCTL_POSTGRES_URL=$ARTICLE_PG "$FSCTL" gameday drill -f examples/drill-faults.yaml \
	--profile profiles/spring-article.yaml --target "http://$TARGET" --sale article --item 7101
stop_target

echo "--- faultdrill (b): fsctl serve as a process of its own behind Toxiproxy, the same scenario"
"$FSCTL" sale create -f examples/sale.yaml --reset >/dev/null
target "$FSCTL" serve --addr "$TARGET" --redis-url "$(via "$FSCTL_REDIS_URL" "$redis_hp" 127.0.0.1:18479)" \
	--postgres-url "$(via "$FSCTL_POSTGRES_URL" "$pg_hp" 127.0.0.1:18432)"
export DRILL_HEALTH_URL=http://$TARGET/healthz
"$FSCTL" gameday drill -f examples/drill-faults.yaml --target "http://$TARGET" --sale black-friday
stop_target

fi
echo "--- faultdrill (c): a planted lie, the article shop answering 202 when its Kafka publish fails"
article 7102=200 --lose-orders-on-publish-error
set +e
FSCTL_POSTGRES_URL=$ARTICLE_PG "$FSCTL" gameday drill -f examples/drill-lie.yaml \
	--profile profiles/spring-article.yaml --target "http://$TARGET" --sale article --item 7102 >"$tmp/lie.out" 2>&1
code=$?
set -e
stop_target
grep -v "preparing buyers" "$tmp/lie.out" | grep -v "^[│├└┌]" | tail -40
if [ "$code" != 4 ]; then
	echo "faultdrill: the planted lie was not caught: exit $code, want 4" >&2
	exit 1
fi
echo "faultdrill: the planted lie was caught (exit 4)"
