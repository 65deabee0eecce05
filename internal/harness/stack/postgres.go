package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgOSUser runs PostgreSQL when fsctl runs as root: the server refuses to run as root.
const pgOSUser = "postgres"

// postgresService is one PostgreSQL cluster made by initdb, with superuser fsctl and trust auth on
// loopback, started and stopped with pg_ctl.
type postgresService struct{ c Config }

func (p postgresService) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.c.PostgresPort) }

// base is the folder holding the cluster and its log: <Dir>/postgres, or a fallback under /var/tmp
// when fsctl runs as root and the postgres user cannot traverse Dir (e.g. a checkout under /root).
func (p postgresService) base() (dir string, fallback bool) {
	primary := filepath.Join(p.c.Dir, "postgres")
	if os.Geteuid() != 0 {
		return primary, false
	}
	fb := filepath.Join(p.c.fallbackDir(), "postgres")
	switch {
	case fileExists(filepath.Join(fb, "data", "PG_VERSION")):
		return fb, true
	case fileExists(filepath.Join(primary, "data", "PG_VERSION")):
		return primary, false
	case exec.Command(runuser(), "-u", pgOSUser, "--", "test", "-x", p.c.Dir).Run() == nil:
		return primary, false
	}
	return fb, true
}

func (p postgresService) dataDir() string { b, _ := p.base(); return filepath.Join(b, "data") }
func (p postgresService) logFile() string { b, _ := p.base(); return filepath.Join(b, "postgres.log") }

func (p postgresService) status() ServiceStatus {
	pid, ok := pidFromFile(filepath.Join(p.dataDir(), "postmaster.pid"), "postgres")
	return ServiceStatus{Name: "postgres", Address: p.addr(), PID: pid, Running: ok, DataDir: p.dataDir(), LogFile: p.logFile()}
}

// conf is re-written on every start so the flags' port always wins over what initdb once saw.
func (p postgresService) conf(data string) string {
	sockets := data
	if len(filepath.Join(data, ".s.PGSQL.00000")) > 100 {
		sockets = "" // the socket path would overflow sun_path; TCP on loopback is all the stack needs
	}
	return fmt.Sprintf(`# Written by fsctl stack up on every start; change the stack's flags instead.
port = %d
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
max_connections = 200
`, p.c.PostgresPort, strings.ReplaceAll(sockets, "'", "''")) + p.secureConf(data)
}

// secureConf is what a secure stack adds: TLS with the stack's certificate (copied into the data
// folder, where the postgres user owns it), and passwords stored as SCRAM.
func (p postgresService) secureConf(data string) string {
	if !p.c.Secure {
		return ""
	}
	return fmt.Sprintf(`ssl = on
ssl_cert_file = '%s'
ssl_key_file = '%s'
ssl_min_protocol_version = 'TLSv1.2'
password_encryption = 'scram-sha-256'
`, filepath.Join(data, "server.crt"), filepath.Join(data, "server.key"))
}

// pgHBA is a secure stack's pg_hba.conf: TLS and a SCRAM password on every TCP connection, a
// password on the local socket too, and nothing trusted.
const pgHBA = `# Written by fsctl stack up --secure on every start: TLS and a password, or no connection.
local   all all                scram-sha-256
hostssl all all 127.0.0.1/32   scram-sha-256
hostssl all all ::1/128        scram-sha-256
`

// secure puts a secure stack's TLS files and pg_hba.conf into the data folder, owned by the
// postgres user (PostgreSQL refuses a key others can read), and writes the pgpass file clients
// use (PGPASSFILE).
func (p postgresService) secure(data string) error {
	if !p.c.Secure {
		return nil
	}
	s := p.c.secrets()
	for src, dst := range map[string]string{s.ServerCert(): "server.crt", s.ServerKey(): "server.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := p.writeFile(filepath.Join(data, dst), string(b)); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(data, dst), 0o600); err != nil {
			return err
		}
	}
	if err := p.writeFile(filepath.Join(data, "pg_hba.conf"), pgHBA); err != nil {
		return err
	}
	pw, err := s.Password("postgres")
	if err != nil {
		return err
	}
	pass := fmt.Sprintf("127.0.0.1:%[1]d:*:%[2]s:%[3]s\nlocalhost:%[1]d:*:%[2]s:%[3]s\n", p.c.PostgresPort, PostgresUser, pw)
	return writeSecret(s.PGPassFile(), []byte(pass))
}

// initdbAuth is how initdb sets up logins: trust on a plain stack; on a secure one SCRAM, with
// the generated password handed over in a file only the postgres user reads, removed after.
func (p postgresService) initdbAuth(base string) (args []string, cleanup func(), err error) {
	if !p.c.Secure {
		return []string{"--auth=trust"}, func() {}, nil
	}
	pw, err := p.c.secrets().Password("postgres")
	if err != nil {
		return nil, nil, err
	}
	file := filepath.Join(base, "initdb-password")
	if err := p.writeFile(file, pw+"\n"); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(file, 0o600); err != nil {
		return nil, nil, err
	}
	return []string{"--auth=scram-sha-256", "--pwfile=" + file}, func() { _ = os.Remove(file) }, nil
}

func (p postgresService) up(ctx context.Context, log io.Writer) (int, bool, error) {
	base, fallback := p.base()
	data, logFile := filepath.Join(base, "data"), filepath.Join(base, "postgres.log")
	pidFile := filepath.Join(data, "postmaster.pid")
	if pid, ok := pidFromFile(pidFile, "postgres"); ok {
		return pid, false, p.wait(ctx, logFile)
	}
	if portTaken(p.c.PostgresPort) {
		return 0, false, fmt.Errorf("port %d is taken by a process this stack did not start; stop it or pick another --postgres-port", p.c.PostgresPort)
	}
	initdb, err := pgBin("initdb")
	if err != nil {
		return 0, false, err
	}
	pgctl, err := pgBin("pg_ctl")
	if err != nil {
		return 0, false, err
	}
	if fallback {
		fmt.Fprintf(log, "%-9s user %s cannot reach %s; keeping its data in %s\n", "postgres", pgOSUser, p.c.Dir, base)
	}
	if err := p.prepare(base); err != nil {
		return 0, false, err
	}
	if !fileExists(filepath.Join(data, "PG_VERSION")) {
		_ = os.RemoveAll(data) // a half-made cluster from an interrupted initdb
		auth, cleanup, err := p.initdbAuth(base)
		if err != nil {
			return 0, false, err
		}
		_, err = p.run(ctx, base, initdb, append([]string{"-D", data, "-U", PostgresUser, "-E", "UTF8", "--no-locale"}, auth...)...)
		cleanup()
		if err != nil {
			return 0, false, err
		}
		if err := appendLine(filepath.Join(data, "postgresql.conf"), "include = 'fsctl.conf'"); err != nil {
			return 0, false, err
		}
		fmt.Fprintf(log, "%-9s initialised %s\n", "postgres", data)
	}
	if err := p.writeFile(filepath.Join(data, "fsctl.conf"), p.conf(data)); err != nil {
		return 0, false, err
	}
	if err := p.secure(data); err != nil {
		return 0, false, err
	}
	if _, err := p.run(ctx, base, pgctl, "start", "-w", "-t", "60", "-D", data, "-l", logFile); err != nil {
		return 0, false, fmt.Errorf("%w\nlog %s:\n%s", err, logFile, tail(logFile, 20))
	}
	if err := p.createDatabase(ctx); err != nil {
		return 0, false, err
	}
	if err := p.wait(ctx, logFile); err != nil {
		return 0, false, err
	}
	pid, _ := pidFromFile(pidFile, "postgres")
	return pid, true, nil
}

// prepare makes base and hands it to the postgres user when fsctl runs as root.
func (p postgresService) prepare(base string) error {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, err := lookupUser(pgOSUser)
	if err != nil {
		return err
	}
	return os.Chown(base, uid, gid)
}

// writeFile writes a file into the cluster, owned by the user the server runs as.
func (p postgresService) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		uid, gid, err := lookupUser(pgOSUser)
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	}
	return nil
}

// run runs a PostgreSQL tool, as the postgres user when fsctl is root.
func (p postgresService) run(ctx context.Context, dir, bin string, args ...string) ([]byte, error) {
	if os.Geteuid() == 0 {
		return runTool(ctx, dir, runuser(), append([]string{"-u", pgOSUser, "--", bin}, args...)...)
	}
	return runTool(ctx, dir, bin, args...)
}

func (p postgresService) createDatabase(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url, err := p.c.postgresURL("postgres")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to create database %s: %w", PostgresDatabase, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", PostgresDatabase).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", PostgresDatabase, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{PostgresDatabase}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", PostgresDatabase, err)
	}
	return nil
}

func (p postgresService) wait(ctx context.Context, logFile string) error {
	url, err := p.c.postgresURL(PostgresDatabase)
	if err != nil {
		return err
	}
	dead := func() error { return nil } // pg_ctl -w already waited for the postmaster
	err = waitReady(ctx, 30*time.Second, dead, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		return conn.Ping(ctx)
	})
	if err != nil {
		return fmt.Errorf("connect %s: %w\nlog %s:\n%s", p.c.Endpoints().PostgresURL, err, logFile, tail(logFile, 20))
	}
	return nil
}

func (p postgresService) down(ctx context.Context) error {
	data := p.dataDir()
	pidFile := filepath.Join(data, "postmaster.pid")
	pid, ok := pidFromFile(pidFile, "postgres")
	if !ok {
		return nil
	}
	// A fast shutdown rolls back open transactions and checkpoints; it is the clean way that does not
	// wait for idle clients (a test that forgot to close its pool) to leave.
	if pgctl, err := pgBin("pg_ctl"); err == nil {
		if _, err := p.run(ctx, filepath.Dir(data), pgctl, "stop", "-D", data, "-m", "fast", "-w", "-t", "60"); err == nil && waitGone(ctx, pid, 5*time.Second) {
			return nil
		}
	}
	return stopPID(ctx, pid, "postgres", 30*time.Second)
}

// runuser finds util-linux's runuser, which lives in sbin, missing from some CI users' PATH.
func runuser() string {
	if p, err := exec.LookPath("runuser"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/runuser", "/sbin/runuser"} {
		if fileExists(p) {
			return p
		}
	}
	return "runuser"
}

// pgBin finds a PostgreSQL server tool on PATH or in Debian's versioned /usr/lib/postgresql/N/bin.
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql", "*", "bin", name))
	version := func(p string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p)))); return v }
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	if len(matches) == 0 {
		return "", fmt.Errorf("%s not found on PATH nor in /usr/lib/postgresql/*/bin; run `make deps` (apt-get install postgresql)", name)
	}
	return matches[0], nil
}

func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("PostgreSQL refuses to run as root and OS user %q is missing (apt-get install postgresql creates it): %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("user %s: %w", name, err)
	}
	return uid, gid, nil
}

func appendLine(path, line string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.Contains(string(b), line) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "\n%s\n", line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
