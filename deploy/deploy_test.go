package deploy

import (
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// manifest is the part of a Kubernetes object the test reads.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name string `yaml:"name"`
					} `yaml:"env"`
					VolumeMounts []struct {
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readManifests(t *testing.T, path string) []manifest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []manifest
	dec := yaml.NewDecoder(f)
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
}

// TestBlastJobShardsByCompletionIndex checks what makes the Job one burst: every pod runs,
// all at once, pod i is shard i of exactly completions shards, all share one --at, and each
// writes its own records file where the volume is mounted.
func TestBlastJobShardsByCompletionIndex(t *testing.T) {
	ms := readManifests(t, "k8s/blast-job.yaml")
	i := slices.IndexFunc(ms, func(m manifest) bool { return m.Kind == "Job" })
	if i < 0 {
		t.Fatalf("no Job in %d documents", len(ms))
	}
	job := ms[i].Spec
	if job.CompletionMode != "Indexed" || job.Completions < 2 || job.Completions != job.Parallelism {
		t.Fatalf("completionMode %q, completions %d, parallelism %d: want Indexed and completions == parallelism",
			job.CompletionMode, job.Completions, job.Parallelism)
	}
	if job.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("restartPolicy %q: a restarted shard would fire after --at", job.Template.Spec.RestartPolicy)
	}
	c := job.Template.Spec.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(a, "=")
		flags[k] = v
	}
	if c.Args[0] != "blast" {
		t.Errorf("args %v: want the blast command", c.Args)
	}
	if want := "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(job.Completions); flags["--shard"] != want {
		t.Errorf("--shard %q, want %q", flags["--shard"], want)
	}
	if !strings.HasPrefix(flags["--records"], "/out/") || !strings.Contains(flags["--records"], "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("--records %q: want a file per completion index under /out", flags["--records"])
	}
	if len(c.VolumeMounts) == 0 || c.VolumeMounts[0].MountPath != "/out" {
		t.Errorf("mounts %+v: the records need a volume at /out", c.VolumeMounts)
	}
	if flags["--at"] == "" {
		t.Error("no --at: the pods would each pick their own release")
	}
	// Kubernetes leaves a $(VAR) it cannot resolve as it is: every one must be in the env.
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	for _, a := range c.Args {
		for _, ref := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(a, -1) {
			if !slices.Contains(env, ref[1]) {
				t.Errorf("arg %q uses $(%s), which the container's env does not define", a, ref[1])
			}
		}
	}
}
