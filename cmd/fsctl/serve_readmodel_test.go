package main

import (
	"strings"
	"testing"
)

func TestServeReadModelFlag(t *testing.T) {
	f := newServeCmd().Flags().Lookup("read-model")
	if f == nil || f.DefValue != "events" {
		t.Fatalf("--read-model %+v, want a flag defaulting to events", f)
	}
	_, code, err := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--read-model", "cache")
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--read-model") {
		t.Errorf("serve --read-model cache: exit %d, %v; want a usage error", code, err)
	}
}
