package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestNewLogger: json writes one JSON object a line, the level filters, and a bad value names the flag.
func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("not shown")
	log.Warn("shown", "order", "o-1")
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil || line["msg"] != "shown" || line["order"] != "o-1" || line["level"] != "WARN" {
		t.Fatalf("json log at warn: %q (%v)", b.String(), err)
	}
	b.Reset()
	if log, err = newLogger(&b, "text", "debug"); err != nil {
		t.Fatal(err)
	}
	log.Debug("details")
	if !strings.Contains(b.String(), "level=DEBUG msg=details") {
		t.Fatalf("text log at debug: %q", b.String())
	}
	for _, bad := range [][2]string{{"xml", "info"}, {"json", "loud"}} {
		if _, err := newLogger(&b, bad[0], bad[1]); err == nil {
			t.Errorf("newLogger(%q, %q) accepted", bad[0], bad[1])
		}
	}
	if _, code, err := runCLI(t, "serve", "--log-format", "xml"); code != exitUsage || err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("serve --log-format xml: exit %d, %v; want a usage error naming the flag", code, err)
	}
}
