package gameday

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

func noteSink(lines *[]string) *Env {
	return &Env{Note: func(format string, args ...any) { *lines = append(*lines, format) }}
}

// TestExecStep: a command's exit status and last lines are kept; a failure and a timeout (the
// command's children killed with it) are errors that say so; the run goes on.
func TestExecStep(t *testing.T) {
	var notes []string
	env := noteSink(&notes)
	ctx := context.Background()
	note, err := execStep{Argv: []string{"sh", "-c", "echo one; echo two"}, Timeout: 5 * time.Second}.Apply(ctx, env)
	if err != nil || !strings.Contains(note, "exited 0") || !strings.Contains(note, "one | two") {
		t.Errorf("a command that works: %q %v", note, err)
	}
	_, err = execStep{Shell: "echo bad >&2; exit 3", Timeout: 5 * time.Second}.Apply(ctx, env)
	if err == nil || !strings.Contains(err.Error(), "exited 3, want 0; it said: bad") {
		t.Errorf("a command that fails: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		// sh's child sleep holds the output open: only killing the group ends it.
		_, err := execStep{Shell: "sleep 60 & sleep 60", Timeout: 300 * time.Millisecond}.Apply(ctx, env)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timed out after 300ms and was killed") {
			t.Errorf("a command past its timeout: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a command past its timeout was not killed")
	}
}

// TestHTTPStep: the request goes with its ${VARIABLES} from the environment, never shown; a status
// other than the one expected is an error naming it; an unset variable is found by Check.
func TestHTTPStep(t *testing.T) {
	t.Setenv("SHOP_ADMIN_TOKEN", "s3cret-token")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer s3cret-token":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/admin/pause" && r.Method == http.MethodPost:
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, "no such switch", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	var notes []string
	env := noteSink(&notes)
	pause := httpStep{Method: "POST", URL: srv.URL + "/admin/pause", Headers: map[string]string{"Authorization": "Bearer ${SHOP_ADMIN_TOKEN}"}, Expect: 202, Timeout: 5 * time.Second}
	note, err := pause.Apply(context.Background(), env)
	if err != nil || !strings.Contains(note, "answered 202") {
		t.Errorf("the pause switch: %q %v", note, err)
	}
	wrong := pause
	wrong.URL = srv.URL + "/admin/paws"
	if _, err := wrong.Apply(context.Background(), env); err == nil || !strings.Contains(err.Error(), "answered 404, want 202: no such switch") {
		t.Errorf("a wrong path: %v", err)
	}
	unset := pause
	unset.Headers = map[string]string{"Authorization": "Bearer ${SHOP_TOKEN_TYPO}"}
	if err := unset.Check(); err == nil || !strings.Contains(err.Error(), "SHOP_TOKEN_TYPO not set") {
		t.Errorf("an unset variable: %v", err)
	}
	for _, n := range append(notes, note) {
		if strings.Contains(n, "s3cret") {
			t.Errorf("a note shows the token: %q", n)
		}
	}
}

// TestScenarioCheckNamesTheStep: before any load, a program not on PATH and a variable not set are
// found and named by their steps' lines.
func TestScenarioCheckNamesTheStep(t *testing.T) {
	const base = "name: x\nsale:\n  items:\n    - {id: a, quantity: 10}\nbuyers: 10\nrate: 5/s\nsteps:\n"
	sc, err := Parse([]byte(base +
		"  - {at: 1s, fault: exec, command: [kubectl-typo, delete, pod, -l, app=shop]}\n" +
		"  - {at: 2s, fault: exec, command: \"echo ok && true\"}\n" +
		"  - {at: 3s, fault: http, url: \"https://shop.example/admin/pause?token=${FSCTL_TEST_UNSET}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = sc.Check()
	for _, want := range []string{"step (line 8): exec `kubectl-typo delete pod -l app=shop`: kubectl-typo not found on PATH", "step (line 10): http POST", "FSCTL_TEST_UNSET not set"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check: %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "line 9") {
		t.Errorf("a shell line of builtins and programs on PATH was refused: %v", err)
	}
	for doc, want := range map[string]string{
		base + "  - {at: 1s, fault: exec}\n":                                                  "exec: say the command",
		base + "  - {at: 1s, fault: exec, command: [ls], timeout: 0s}\n":                      "timeout must be positive",
		base + "  - {at: 1s, fault: http, url: shop.example/pause}\n":                         `url "shop.example/pause": want http:// or https://`,
		base + "  - {at: 1s, fault: http, url: http://x, expect: 700}\n":                      "steps[0].expect: want 0..599",
		base + "  - {at: 1s, fault: http, url: http://x, headers: {Authorization: [a, b]}}\n": "steps[0].headers.Authorization: want a single value",
		base + "  - {at: 1s, fault: http, url: http://x, headers: Bearer}\n":                  "steps[0].headers: want a mapping of header names to values",
	} {
		_, err := Parse([]byte(doc))
		var fe *yamlfield.Error
		if !errors.As(err, &fe) || fe.Line != 8 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want line 8 saying %q", doc[len(base):], err, want)
		}
	}
}
