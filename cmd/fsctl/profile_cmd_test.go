package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/profiles"
)

func TestProfileCheckCommand(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 4)
	path := articleProfileFile(t, s)
	ends := []string{"--redis-url", s.RedisURL, "--postgres-url", s.PostgresURL, "--kafka-brokers", strings.Join(s.Brokers, ",")}

	out, code, err := runCLI(t, append([]string{"profile", "check", "--profile", path, "--sale", s.Sale, "--target", s.Base}, ends...)...)
	if code != 0 || !strings.Contains(out, "PROFILE OK") || !strings.Contains(out, "{item:"+s.Items[0]+"}:stock = 4") {
		t.Fatalf("check of the shipped profile: exit %d (%v)\n%s", code, err, out)
	}
	out, code, _ = runCLI(t, append([]string{"profile", "check", "--profile", path, "--sale", s.Sale, "-o", "json"}, ends...)...)
	var rep profile.CheckReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Profile != "spring-article" || len(rep.Lines) < 8 {
		t.Fatalf("json: exit %d\n%s", code, out)
	}

	// Tokens minted ahead, then a burst that reads them instead of signing: the file's users buy.
	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	if _, code, err := runCLI(t, "profile", "tokens", "--profile", path, "--buyers", "20", "--user-prefix", "early-", "--out", tokens); code != 0 {
		t.Fatalf("tokens: %d %v", code, err)
	}
	out, code, err = runCLI(t, append([]string{"blast", "--profile", path, "--tokens", tokens, "--target", s.Base, "--sale", s.Sale,
		"--item", s.Items[0], "--buyers", "20", "--in", "1s", "--max-skew", "0", "-o", "json"}, ends[:4]...)...)
	var sum struct {
		Sold int `json:"sold"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Sold != 4 {
		t.Fatalf("blast with --tokens: exit %d (%v)\n%s", code, err, out)
	}
	s.WaitOrders(s.Items[0], 4)
	tg, err := profile.Connect(context.Background(), s.Profile, s.RedisURL, s.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	live, _, err := tg.DB.LiveBuyers(context.Background(), s.Sale, s.Items[0])
	for u := range live {
		if !strings.HasPrefix(u, "early-") {
			t.Errorf("order of %s: the buyers are the token file's users", u)
		}
	}
	if err != nil || len(live) != 4 {
		t.Fatalf("live buyers %v (%v)", live, err)
	}

	// A query that fails on the live target: exit 1, the query's name and the database's error.
	b, _ := os.ReadFile(path)
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	text := strings.Replace(string(b), "live: SELECT count(*) FROM flash_sale_order ", "live: SELECT count(*) FROM flash_sale_ordr ", 1)
	if err := os.WriteFile(broken, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, _ = runCLI(t, append([]string{"profile", "check", "--profile", broken, "--sale", s.Sale}, ends...)...)
	if code != exitCheck || !strings.Contains(out, "query sql.live: ERROR: relation") || !strings.Contains(out, `"flash_sale_ordr" does not exist`) {
		t.Fatalf("broken query: exit %d\n%s", code, out)
	}
	// preflight's profile group asks through the same pieces: the same line for the same error.
	sqlLive := func(args ...string) string {
		t.Helper()
		out, _, _ := runCLI(t, append(append(args, ends...), "-o", "json")...)
		var rep struct {
			Lines   []finding.Finding `json:"lines"`
			Results []finding.Finding `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		for _, l := range append(rep.Lines, rep.Results...) {
			if l.Check == "sql.live" {
				return fmt.Sprintf("%s %q %q", l.Status, l.Detail, l.Fix)
			}
		}
		t.Fatalf("no sql.live line:\n%s", out)
		return ""
	}
	check, preflight := sqlLive("profile", "check", "--profile", broken, "--sale", s.Sale), sqlLive("preflight", "--profile", broken, "--sale", s.Sale, "--target", s.Base, "--timeout", "3s")
	if check != preflight || !strings.HasPrefix(check, "fail") {
		t.Fatalf("the commands disagree on the broken query:\nprofile check: %s\npreflight:     %s", check, preflight)
	}

	// A malformed profile: exit 2, the line and the field.
	malformed := filepath.Join(t.TempDir(), "malformed.yaml")
	if err := os.WriteFile(malformed, []byte(strings.Replace(string(b), "type: rs256", "type: rs512", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, code, err = runCLI(t, "profile", "check", "--profile", malformed, "--sale", s.Sale)
	if code != 2 || err == nil || !strings.Contains(err.Error(), `token.type: "rs512": want hs256, rs256, file or none`) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("malformed profile: exit %d, %v", code, err)
	}
}

func TestProfileShowAndTokens(t *testing.T) {
	t.Parallel()
	out, code, _ := runCLI(t, "profile", "show")
	if code != 0 || !strings.Contains(out, "deep: fsctl") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	out, code, _ = runCLI(t, "profile", "show", "spring-article")
	if code != 0 || !strings.Contains(out, "/api/flash-sales/items/${item}/purchase") {
		t.Fatalf("show spring-article: %d\n%s", code, out)
	}
	if _, code, err := runCLI(t, "profile", "show", "nope"); code != 2 || !strings.Contains(err.Error(), "fsctl.yaml, spring-article.yaml") {
		t.Fatalf("show nope: %d %v", code, err)
	}
	file := filepath.Join(t.TempDir(), "tokens.txt")
	shipped := filepath.Join(articletest.Root(), "profiles", "spring-article.yaml")
	if _, code, err := runCLI(t, "profile", "tokens", "--profile", shipped, "--buyers", "12", "--out", file); code != 0 {
		t.Fatalf("tokens: %d %v", code, err)
	}
	b, err := os.ReadFile(file)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err != nil || len(lines) != 12 || !strings.HasPrefix(lines[11], "blast-11 ey") {
		t.Fatalf("token file: %v\n%s", err, b)
	}
	if _, code, _ := runCLI(t, "profile", "tokens", "--buyers", "0"); code != 2 {
		t.Fatalf("--buyers 0: exit %d", code)
	}
}

// TestTokensFileIsWhereTheUserStands: --tokens names a file from the working folder, as every
// path on a command line does, not from the folder of the profile it replaces the token of.
func TestTokensFileIsWhereTheUserStands(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("FSCTL_JWT_SECRET", "tokens-from-the-working-folder")
	prof, err := fs.ReadFile(profiles.Files, profiles.Bundled)
	if err == nil {
		err = os.Mkdir("shop", 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join("shop", "profile.yaml"), prof, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, code, err := runCLI(t, "profile", "tokens", "--profile", "shop/profile.yaml", "--sale", "s", "--buyers", "3", "--out", "tokens.txt"); code != 0 {
		t.Fatalf("profile tokens: exit %d: %v", code, err)
	}
	_, _, err = runCLI(t, "blast", "--profile", "shop/profile.yaml", "--tokens", "tokens.txt", "--target", "http://127.0.0.1:1",
		"--sale", "s", "--item", "1", "--stock", "5", "--limit", "1")
	if err == nil || strings.Contains(err.Error(), "tokens.txt") {
		t.Fatalf("blast --tokens tokens.txt from the working folder: %v; want it read, and the unreachable target the error", err)
	}
}
