package main

import (
	"strings"
	"testing"
)

// TestServeReservationRunsAlone: the reservation role is a process of its own; mixed with another
// role it is a usage error that says how to split them.
func TestServeReservationRunsAlone(t *testing.T) {
	_, code, err := runCLI(t, "serve", "--role", "reservation,api", "--addr", "127.0.0.1:0")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--reservation-addr") {
		t.Fatalf("exit %d, %v; want %d naming --reservation-addr", code, err, exitUsage)
	}
}
