package main

import (
	"strings"
	"testing"
)

// TestUnreachableSaysTheAddressOnce: a database nothing answers at is one line that names it
// once, and the hint fits the address — a check of it, not `fsctl stack up`, which starts no
// database on a port the local stack does not use (a remote database had the same advice).
func TestUnreachableSaysTheAddressOnce(t *testing.T) {
	const addr = "127.0.0.1:1"
	_, code, err := runCLI(t, "migrate", "--postgres-url", "postgres://fsctl@"+addr+"/fsctl?connect_timeout=5")
	if code != exitFailed || err == nil {
		t.Fatalf("exit %d, %v; want %d", code, err, exitFailed)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Count(msg, addr) != 1 {
		t.Errorf("want one line naming %s once:\n%s", addr, msg)
	}
	if strings.Contains(msg, "stack up") || !strings.Contains(msg, "check the address") {
		t.Errorf("the hint does not fit an address beyond the local stack: %s", msg)
	}
}
