package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fsctlBin is the fsctl binary TestMain builds once, asked about its flags by the tests;
// buildErr says why there is none.
var fsctlBin, buildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fsctl-deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(dir, "fsctl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/fsctl")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go build ./cmd/fsctl: %v\n%s", err, out)
	} else {
		fsctlBin = bin
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runFsctl runs the built fsctl with args in an empty environment (no FSCTL_ variable of the
// machine running the test changes a default) and returns its output.
func runFsctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(fsctlBin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// isFsctl reports whether a container runs the fsctl image (the repository's Dockerfile).
func isFsctl(c corev1.Container) bool {
	name, _, _ := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
	return name == "fsctl"
}

var (
	helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)
	varRef   = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	fsctlVar = regexp.MustCompile(`\bFSCTL_[A-Z_]+\b`)
)

// TestFsctlArgsAreRealFlags asks the fsctl binary about every fsctl container: the args name a
// subcommand and flags it lists in its help (not deprecated, not hidden), every $(VAR) in them is
// in the container's env, every FSCTL_ variable set is one the subcommand reads (or one the args
// use), and fsctl itself parses the args, with the variables' values, without an error.
func TestFsctlArgsAreRealFlags(t *testing.T) {
	objs := loadManifests(t)
	helps := map[string]string{}
	var seen int
	for _, p := range pods(objs) {
		for _, c := range slices.Concat(p.spec.InitContainers, p.spec.Containers) {
			if !isFsctl(c) {
				continue
			}
			seen++
			t.Run(p.owner+"/"+c.Name, func(t *testing.T) {
				if len(c.Command) != 0 {
					t.Errorf("command %v: the image's entrypoint is fsctl; give the subcommand in args", c.Command)
				}
				n := slices.IndexFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-") })
				if n < 0 {
					n = len(c.Args)
				}
				sub := c.Args[:n]
				if len(sub) == 0 {
					t.Fatalf("args %v: no subcommand", c.Args)
				}
				key := strings.Join(sub, " ")
				if _, ok := helps[key]; !ok {
					out, err := runFsctl(t, append(slices.Clone(sub), "--help")...)
					if err != nil {
						t.Fatalf("fsctl %s --help: %v\n%s", key, err, out)
					}
					helps[key] = out
				}
				help := helps[key]
				known := map[string]bool{}
				for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
					known[m[1]] = true
				}
				for _, a := range c.Args[n:] {
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if !strings.HasPrefix(a, "--") || !known[name] {
						t.Errorf("arg %q: fsctl %s --help lists no such flag (want --name=value)", a, key)
					}
				}
				env := map[string]bool{}
				for _, e := range c.Env {
					env[e.Name] = true
				}
				used := map[string]bool{}
				for _, m := range varRef.FindAllStringSubmatch(strings.Join(c.Args, " "), -1) {
					used[m[1]] = true
					if !env[m[1]] {
						t.Errorf("args use $(%s), which the env does not define: Kubernetes would pass it on as it is", m[1])
					}
				}
				reads := map[string]bool{}
				for _, v := range fsctlVar.FindAllString(help, -1) {
					reads[v] = true
				}
				for name := range env {
					if strings.HasPrefix(name, "FSCTL_") && !used[name] && !reads[name] {
						t.Errorf("env %s: fsctl %s reads no such variable", name, key)
					}
				}
				args := resolveArgs(objs, c)
				if out, err := runFsctl(t, append(args, "--help")...); err != nil {
					t.Errorf("fsctl %s refuses the args: %v\n%s", strings.Join(args, " "), err, out)
				}
			})
		}
	}
	if seen == 0 {
		t.Fatal("no fsctl container under k8s/")
	}
}

// resolveArgs expands the $(VAR) references of a container's args as the kubelet would: from a
// literal value or a ConfigMap under k8s/. A value only the cluster knows (a Secret, a ConfigMap
// made by hand, the completion index) stands as 0, which every flag type parses.
func resolveArgs(objs []object, c corev1.Container) []string {
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := envValue(objs, c, varRef.FindStringSubmatch(ref)[1]); ok {
				return v
			}
			return "0"
		})
	}
	return args
}
