package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is one document of a file under k8s/, decoded into its Kubernetes API type.
type object struct {
	file string
	obj  metav1.Object
}

// newObject returns an empty object of the API type of apiVersion and kind: the kinds the
// manifests may use. Any other kind is refused, so a typo in either is a failure too.
func newObject(apiVersion, kind string) metav1.Object {
	switch apiVersion + " " + kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	case "batch/v1 CronJob":
		return &batchv1.CronJob{}
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}
	}
	return nil
}

// decodeObject decodes one YAML document strictly, as the API server's strict field validation
// would: an unknown kind, an unknown or misspelt field, a wrong type or a key given twice is an
// error. A document of comments only is nil.
func decodeObject(doc []byte) (metav1.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm == (metav1.TypeMeta{}) {
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(j) == "null" {
			return nil, nil
		}
	}
	obj := newObject(tm.APIVersion, tm.Kind)
	if obj == nil {
		return nil, fmt.Errorf("unknown kind %q of apiVersion %q", tm.Kind, tm.APIVersion)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s without metadata.name", tm.Kind)
	}
	return obj, nil
}

// loadManifests decodes every document of every file under k8s/.
func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("k8s/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under k8s/ (%v)", err)
	}
	var out []object
	seen := map[string]string{}
	for _, path := range files {
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			t.Errorf("%s: only manifests belong under k8s/", path)
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(f))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			obj, err := decodeObject(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", path, i, err)
				continue
			}
			if obj == nil {
				continue
			}
			id := fmt.Sprintf("%T %s", obj, obj.GetName())
			if prev, dup := seen[id]; dup {
				t.Errorf("%s: %s is defined in %s too", path, id, prev)
			}
			seen[id] = path
			out = append(out, object{file: path, obj: obj})
		}
		f.Close()
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// find returns the object of type T named name, or fails the test.
func find[T metav1.Object](t *testing.T, objs []object, name string) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.obj.(T); ok && v.GetName() == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T named %q under k8s/", zero, name)
	return zero
}

// all returns every object of type T.
func all[T metav1.Object](objs []object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// pod is a workload's pod template, named for its workload ("Job/fsctl-blast").
type pod struct {
	owner string
	meta  *metav1.ObjectMeta
	spec  *corev1.PodSpec
}

// pods returns the pod template of every Deployment, Job and CronJob.
func pods(objs []object) []pod {
	var out []pod
	for _, o := range objs {
		var tpl *corev1.PodTemplateSpec
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			tpl = &v.Spec.Template
		case *batchv1.Job:
			tpl = &v.Spec.Template
		case *batchv1.CronJob:
			tpl = &v.Spec.JobTemplate.Spec.Template
		default:
			continue
		}
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o.obj), "*v1.")
		out = append(out, pod{owner: kind + "/" + o.obj.GetName(), meta: &tpl.ObjectMeta, spec: &tpl.Spec})
	}
	return out
}

// argFlags returns the --name=value arguments of args as name → value ("true" for a bare --name).
func argFlags(args []string) map[string]string {
	flags := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); strings.HasPrefix(a, "--") {
			if !ok {
				v = "true"
			}
			flags[k] = v
		}
	}
	return flags
}

// TestBlastJobShardsByCompletionIndex checks what makes the Job one burst: every pod runs,
// all at once, pod i is shard i of exactly completions shards, all share one --at, and each
// writes its own records file where the volume is mounted.
func TestBlastJobShardsByCompletionIndex(t *testing.T) {
	job := find[*batchv1.Job](t, loadManifests(t), "fsctl-blast").Spec
	completions, parallelism := job.Completions, job.Parallelism
	if job.CompletionMode == nil || *job.CompletionMode != batchv1.IndexedCompletion ||
		completions == nil || parallelism == nil || *completions < 2 || *completions != *parallelism {
		t.Fatalf("completionMode %v, completions %v, parallelism %v: want Indexed and completions == parallelism",
			job.CompletionMode, completions, parallelism)
	}
	if job.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: a restarted shard would fire after --at", job.Template.Spec.RestartPolicy)
	}
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v: a retried shard would fire after --at", job.BackoffLimit)
	}
	c := job.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "blast" {
		t.Fatalf("args %v: want the blast command", c.Args)
	}
	flags := argFlags(c.Args[1:])
	if want := "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(int(*completions)); flags["--shard"] != want {
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
}
