package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
)

// articleProfileFile writes the shipped spring-article profile pointed at the test shop: its
// topic and group, and the signing key by absolute path (the copy lives elsewhere).
func articleProfileFile(t *testing.T, s *articletest.Shop) string {
	t.Helper()
	b, err := os.ReadFile(s.ProfilePath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	key := filepath.Join(articletest.Root(), "examples", "articleshop", "keys", "buyer-signing.pem")
	for from, to := range map[string]string{
		"topic: flash-sale-orders":                                "topic: " + s.Topic,
		"group: flash-sale-order-consumer":                        "group: " + s.Group,
		"keyFile: ../examples/articleshop/keys/buyer-signing.pem": "keyFile: " + key,
	} {
		if !strings.Contains(text, from) {
			t.Fatalf("the shipped profile no longer has %q", from)
		}
		text = strings.ReplaceAll(text, from, to)
	}
	path := filepath.Join(t.TempDir(), "article.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGamedayDrillArticle drills the Spring-article shop from the command line, through a
// profile file only, buyers arriving on an open schedule: it passes (exit 0) and the JSON report
// says so with every unit sold once.
func TestGamedayDrillArticle(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 25, 15)
	out, code, err := runCLI(t, "gameday", "drill", "--profile", articleProfileFile(t, s), "--sale", s.Sale,
		"--target", s.Base, "--redis-url", s.RedisURL, "--postgres-url", s.PostgresURL,
		"--kafka-brokers", strings.Join(s.Brokers, ","), "--buyers", "150", "--rate", "500/s", "--settle", "30s", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	var rep struct {
		Passed bool   `json:"passed"`
		Sale   string `json:"sale"`
		Items  []struct {
			Reserved, Live int64
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var reserved, live int64
	for _, it := range rep.Items {
		reserved, live = reserved+it.Reserved, live+it.Live
	}
	if !rep.Passed || rep.Sale != s.Sale || len(rep.Items) != 2 || reserved != 40 || live != 40 {
		t.Fatalf("want a passed drill selling 25+15 units:\n%s", out)
	}
}

// TestGamedayDrillBadProfile refuses a malformed profile as a usage error naming its line,
// before anything is bought.
func TestGamedayDrillBadProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: broken\npurchase:\n  method: POST\n  urll: /x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, code, err := runCLI(t, "gameday", "drill", "--profile", path, "--sale", "s", "--target", "http://127.0.0.1:1")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("exit %d, %v: want 2 naming line 4", code, err)
	}
}
