package stack

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopPIDTerminates(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		grace time.Duration
	}{
		{"leaves on TERM", []string{"-c", "exec sleep 60"}, 5 * time.Second},
		// ignores TERM (and its child inherits that): only the group-wide KILL ends both
		{"ignores TERM", []string{"-c", "trap '' TERM; sleep 60 & sleep 60; wait"}, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "out.log")
			cmd, exited, err := startDetached("sh", tt.args, t.TempDir(), log)
			if err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			time.Sleep(100 * time.Millisecond)
			if !alive(pid, "sleep") {
				t.Fatalf("pid %d not alive after start", pid)
			}
			if err := stopPID(context.Background(), pid, "sleep", tt.grace); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				t.Fatal("process still not reaped")
			}
			if n := groupSize(pid); n != 0 {
				t.Errorf("%d processes of group %d left behind", n, pid)
			}
		})
	}
}

func TestAliveRejectsOtherCommands(t *testing.T) {
	if !alive(os.Getpid(), "") {
		t.Fatal("own pid not alive")
	}
	if alive(os.Getpid(), "kafka.Kafka-not-this") {
		t.Error("alive matched a command line it should not")
	}
	if alive(0, "") || alive(-1, "") {
		t.Error("non-positive pids are never alive")
	}
}

func TestReadPID(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if pid, err := readPID(write("pm", "4242\n/data\n1700000000\n")); err != nil || pid != 4242 {
		t.Errorf("postmaster.pid style: %d, %v", pid, err)
	}
	if _, err := readPID(write("bad", "x\n")); err == nil {
		t.Error("garbage pidfile: want error")
	}
	if _, err := readPID(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing pidfile: want error")
	}
}

func TestTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	var lines []string
	for i := range 50 {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := tail(p, 3)
	if got != "  line 47\n  line 48\n  line 49" {
		t.Errorf("tail = %q", got)
	}
}

func TestNewClusterID(t *testing.T) {
	for range 200 {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 16 || len(id) != 22 || strings.HasPrefix(id, "-") {
			t.Fatalf("bad cluster id %q (%v)", id, err)
		}
	}
}

func TestFetchKafkaSkipsWhenPresent(t *testing.T) {
	dir := t.TempDir()
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, []byte("<project/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: dir}
	var out strings.Builder
	cfg.Log = &out
	libs := filepath.Join(dir, "kafka", "libs")
	if err := os.MkdirAll(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libs, "kafka_2.13-4.1.1.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libs, fetchMarker), []byte(sha256Hex(t, pom)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "") // mvn must not be needed
	if err := FetchKafka(context.Background(), cfg, pom); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "already") {
		t.Errorf("output %q", out.String())
	}
	// a changed pom means the jars are stale: it must try mvn (absent here) and say so
	if err := os.WriteFile(pom, []byte("<project>changed</project>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := FetchKafka(context.Background(), cfg, pom); err == nil || !strings.Contains(err.Error(), "mvn") {
		t.Errorf("changed pom without mvn: err = %v", err)
	}
}

func sha256Hex(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestWaitGone: a live process is not gone; a killed one is, once its last thread has exited (the
// game day restarts a service on its ports right after).
func TestWaitGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	if waitGone(context.Background(), pid, 200*time.Millisecond) || !threadsLeft(pid) {
		t.Fatal("a live process counted as gone")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	if !waitGone(context.Background(), pid, 5*time.Second) || threadsLeft(pid) {
		t.Fatal("a killed process still counted as alive after 5s")
	}
	<-done
}
