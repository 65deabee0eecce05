# lib.sh: what the scripts share. Source it from the repository root: . scripts/lib.sh

# listening HOST:PORT: something accepts connections there (bash's /dev/tcp: no curl needed).
listening() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }

# waitfor HOST:PORT WHAT LOG: wait up to 30 s for WHAT to listen at HOST:PORT; else print its LOG
# and fail.
waitfor() {
	for _ in $(seq 1 150); do
		if listening "$1"; then return 0; fi
		sleep 0.2
	done
	echo "$(basename "$0" .sh): $2 did not come up at $1; its log:" >&2
	cat "$3" >&2
	return 1
}
