package deploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The names the manifests agree on.
const (
	serviceName  = "fsctl-checkout" // the Service, and the ConfigMap and Secret of the checkout
	apiName      = "fsctl-checkout-api"
	consumerName = "fsctl-checkout-consumer"
)

// TestDecodeIsStrict proves the loader refuses what the API server would: without it, a
// misspelt field (readinesProbe) is silently dropped and the manifests only look checked.
func TestDecodeIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n",
		"unknown kind":  "apiVersion: v1\nkind: Servic\nmetadata: {name: x}\n",
		"old version":   "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: http}]}\n",
		"duplicate key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b, a: c}\n",
		"no name":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeObject([]byte(doc)); err == nil {
				t.Errorf("decoded without error:\n%s", doc)
			}
		})
	}
}

// selects reports whether a label selector picks pods with the template's labels.
func selects(t *testing.T, sel *metav1.LabelSelector, pod *corev1.PodTemplateSpec) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(pod.Labels))
}

// containerPort resolves a port by number or name to one the container declares.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// TestWorkloadsSelectTheirOwnPods: the API server refuses a Deployment whose selector misses its
// template; and the API and consumer must not select each other's pods.
func TestWorkloadsSelectTheirOwnPods(t *testing.T) {
	objs := loadManifests(t)
	api, consumer := find[*appsv1.Deployment](t, objs, apiName), find[*appsv1.Deployment](t, objs, consumerName)
	for _, d := range all[*appsv1.Deployment](objs) {
		if !selects(t, d.Spec.Selector, &d.Spec.Template) {
			t.Errorf("Deployment %s: selector %v does not match its pods' labels %v", d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		}
	}
	if selects(t, api.Spec.Selector, &consumer.Spec.Template) || selects(t, consumer.Spec.Selector, &api.Spec.Template) {
		t.Error("the API and consumer Deployments select each other's pods")
	}
	for _, d := range []*appsv1.Deployment{api, consumer} {
		role := d.Spec.Template.Labels["app.kubernetes.io/component"]
		if d.Spec.Template.Labels["app.kubernetes.io/name"] != serviceName || !strings.HasSuffix(d.Name, "-"+role) {
			t.Errorf("Deployment %s: pod labels %v, want name %s and component %s", d.Name, d.Spec.Template.Labels, serviceName, strings.TrimPrefix(d.Name, serviceName+"-"))
		}
	}
	if api.Spec.Replicas != nil {
		t.Errorf("Deployment %s sets replicas: every apply would reset the count the HPA chose", apiName)
	}
}

// TestServiceRoutesToAPIProbedPort: the Service picks the API pods (not the consumer's), on the
// port serve listens on and the probes check.
func TestServiceRoutesToAPIProbedPort(t *testing.T) {
	objs := loadManifests(t)
	svc := find[*corev1.Service](t, objs, serviceName)
	api, consumer := find[*appsv1.Deployment](t, objs, apiName), find[*appsv1.Deployment](t, objs, consumerName)
	sel := &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}
	if !selects(t, sel, &api.Spec.Template) {
		t.Errorf("Service %s selects %v; the API pods are labelled %v", svc.Name, svc.Spec.Selector, api.Spec.Template.Labels)
	}
	if selects(t, sel, &consumer.Spec.Template) {
		t.Errorf("Service %s selects the consumer's pods too (%v): they serve no buyers", svc.Name, svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service %s has %d ports; want the API's only (metrics are scraped from the pods)", svc.Name, len(svc.Spec.Ports))
	}
	sp := svc.Spec.Ports[0]
	target := sp.TargetPort
	if target == (intstr.IntOrString{}) {
		target = intstr.FromInt32(sp.Port)
	}
	c := api.Spec.Template.Spec.Containers[0]
	port, ok := containerPort(c, target)
	if !ok {
		t.Fatalf("Service targetPort %s: no such port on container %s (%v)", target.String(), c.Name, c.Ports)
	}
	_, addrPort, _ := net.SplitHostPort(argFlags(c.Args)["--addr"])
	if addrPort != strconv.Itoa(int(port)) {
		t.Errorf("serve --addr %q, but the Service sends buyers to port %d", argFlags(c.Args)["--addr"], port)
	}
	checkProbes(t, apiName, c, port)
}

// checkProbes: the container's startup and liveness probes GET /healthz and its readiness probe
// GET /readyz, all on port.
func checkProbes(t *testing.T, owner string, c corev1.Container, port int32) {
	t.Helper()
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"readinessProbe", "/readyz", c.ReadinessProbe}, {"livenessProbe", "/healthz", c.LivenessProbe}, {"startupProbe", "/healthz", c.StartupProbe}} {
		if p.probe == nil {
			t.Errorf("%s: no %s", owner, p.name)
			continue
		}
		g := p.probe.HTTPGet
		if g == nil || g.Path != p.path {
			t.Errorf("%s: %s %+v, want GET %s", owner, p.name, p.probe.ProbeHandler, p.path)
			continue
		}
		if pp, ok := containerPort(c, g.Port); !ok || pp != port {
			t.Errorf("%s: %s on port %s, want %d", owner, p.name, g.Port.String(), port)
		}
	}
}

// TestBlastTargetsService: the blast Job's FSCTL_TARGET is the Service's URL.
func TestBlastTargetsService(t *testing.T) {
	objs := loadManifests(t)
	svc := find[*corev1.Service](t, objs, serviceName)
	blast := find[*batchv1.Job](t, objs, "fsctl-blast").Spec.Template.Spec.Containers[0]
	want := fmt.Sprintf("http://%s:%d", svc.Name, svc.Spec.Ports[0].Port)
	if got, ok := envValue(objs, blast, "FSCTL_TARGET"); !ok || got != want {
		t.Errorf("blast FSCTL_TARGET %q, want %q (the Service %s)", got, want, svc.Name)
	}
}

// envValue resolves a container's variable to a literal or a key of a ConfigMap under k8s/.
func envValue(objs []object, c corev1.Container, name string) (string, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	switch {
	case i < 0:
		return "", false
	case c.Env[i].ValueFrom == nil:
		return c.Env[i].Value, true
	case c.Env[i].ValueFrom.ConfigMapKeyRef != nil:
		ref := c.Env[i].ValueFrom.ConfigMapKeyRef
		for _, cm := range all[*corev1.ConfigMap](objs) {
			if v, ok := cm.Data[ref.Key]; ok && cm.Name == ref.Name {
				return v, true
			}
		}
	}
	return "", false
}

// TestHPAAndPDBCoverAPI: the HPA scales the API Deployment on CPU, which needs a CPU request;
// the PDB guards the API pods; the API has no CPU limit (throttling in a sale's first second).
func TestHPAAndPDBCoverAPI(t *testing.T) {
	objs := loadManifests(t)
	api, consumer := find[*appsv1.Deployment](t, objs, apiName), find[*appsv1.Deployment](t, objs, consumerName)
	hpa := find[*autoscalingv2.HorizontalPodAutoscaler](t, objs, apiName)
	if ref := hpa.Spec.ScaleTargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != api.Name {
		t.Errorf("HPA scales %+v, want apps/v1 Deployment %s", ref, api.Name)
	}
	if !slices.ContainsFunc(hpa.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
	}) {
		t.Errorf("HPA metrics %+v: want CPU", hpa.Spec.Metrics)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
		t.Errorf("HPA minReplicas %v, maxReplicas %d: want 2 <= min <= max", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	for _, c := range api.Spec.Template.Spec.Containers {
		if c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s/%s: no CPU request, so the HPA has no utilization to scale on", apiName, c.Name)
		}
		if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			t.Errorf("%s/%s: a CPU limit throttles the API in the first second of a sale", apiName, c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: no memory limit", apiName, c.Name)
		}
	}
	pdb := find[*policyv1.PodDisruptionBudget](t, objs, apiName)
	if !selects(t, pdb.Spec.Selector, &api.Spec.Template) || selects(t, pdb.Spec.Selector, &consumer.Spec.Template) {
		t.Errorf("PDB %s selects %v: want the API pods and only them", pdb.Name, pdb.Spec.Selector)
	}
}

// TestPrescalePatchesTheHPA: the kubectl CronJobs patch the HPA that exists, up above its floor
// (within its ceiling) and back down to it, with a Role that allows exactly that.
func TestPrescalePatchesTheHPA(t *testing.T) {
	objs := loadManifests(t)
	hpa := find[*autoscalingv2.HorizontalPodAutoscaler](t, objs, apiName)
	var up, down bool
	checked := map[string]bool{}
	for _, cj := range all[*batchv1.CronJob](objs) {
		spec := cj.Spec.JobTemplate.Spec.Template.Spec
		c := spec.Containers[0]
		if !slices.Equal(c.Command, []string{"kubectl"}) {
			continue
		}
		if len(c.Args) < 3 || c.Args[0] != "patch" || c.Args[1] != "hpa" || c.Args[2] != hpa.Name {
			t.Errorf("CronJob %s: args %v, want kubectl patch hpa %s", cj.Name, c.Args, hpa.Name)
			continue
		}
		var patch struct {
			Spec struct {
				MinReplicas *int32 `json:"minReplicas"`
			} `json:"spec"`
		}
		dec := json.NewDecoder(strings.NewReader(argFlags(c.Args)["--patch"]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&patch); err != nil || patch.Spec.MinReplicas == nil || argFlags(c.Args)["--type"] != "merge" {
			t.Errorf("CronJob %s: --patch %q --type %q (%v): want a merge patch of spec.minReplicas", cj.Name, argFlags(c.Args)["--patch"], argFlags(c.Args)["--type"], err)
			continue
		}
		switch n := *patch.Spec.MinReplicas; {
		case n == *hpa.Spec.MinReplicas:
			down = true
		case n > *hpa.Spec.MinReplicas && n <= hpa.Spec.MaxReplicas:
			up = true
		default:
			t.Errorf("CronJob %s: minReplicas %d, neither the HPA's floor %d nor within (floor, max %d]", cj.Name, n, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
		if !checked[spec.ServiceAccountName] {
			checkPatchRBAC(t, objs, spec.ServiceAccountName, hpa.Name)
			checked[spec.ServiceAccountName] = true
		}
	}
	if !up || !down {
		t.Errorf("pre-scale up %v, down %v: want a CronJob raising the HPA's minReplicas and one setting it back", up, down)
	}
}

// checkPatchRBAC: the service account exists and is bound to a Role of one rule, get and patch
// on the one HPA.
func checkPatchRBAC(t *testing.T, objs []object, sa, hpa string) {
	t.Helper()
	find[*corev1.ServiceAccount](t, objs, sa)
	want := rbacv1.PolicyRule{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"},
		ResourceNames: []string{hpa}, Verbs: []string{"get", "patch"}}
	for _, rb := range all[*rbacv1.RoleBinding](objs) {
		if !slices.Contains(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa}) {
			continue
		}
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.APIGroup != rbacv1.GroupName {
			t.Fatalf("RoleBinding %s: roleRef %+v, want a Role", rb.Name, rb.RoleRef)
		}
		role := find[*rbacv1.Role](t, objs, rb.RoleRef.Name)
		if len(role.Rules) != 1 || fmt.Sprint(role.Rules[0]) != fmt.Sprint(want) {
			t.Errorf("Role %s: rules %+v, want exactly %+v", role.Name, role.Rules, want)
		}
		return
	}
	t.Errorf("no RoleBinding for service account %s", sa)
}

// TestJobsAreBounded: a Job that hangs must not hold nodes forever, CronJobs name their time
// zone, and none overlaps itself.
func TestJobsAreBounded(t *testing.T) {
	objs := loadManifests(t)
	check := func(name string, spec batchv1.JobSpec) {
		if spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds <= 0 {
			t.Errorf("%s: no activeDeadlineSeconds", name)
		}
	}
	for _, j := range all[*batchv1.Job](objs) {
		check("Job "+j.Name, j.Spec)
	}
	every := regexp.MustCompile(`^\*/(\d+) \* \* \* \*$`)
	for _, cj := range all[*batchv1.CronJob](objs) {
		check("CronJob "+cj.Name, cj.Spec.JobTemplate.Spec)
		if cj.Spec.TimeZone == nil {
			t.Errorf("CronJob %s: no timeZone: the schedule would be the controller's local time", cj.Name)
		} else if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			t.Errorf("CronJob %s: timeZone: %v", cj.Name, err)
		}
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			t.Errorf("CronJob %s: concurrencyPolicy %q, want Forbid", cj.Name, cj.Spec.ConcurrencyPolicy)
		}
		if m := every.FindStringSubmatch(cj.Spec.Schedule); m != nil {
			if period, _ := strconv.Atoi(m[1]); *cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds >= int64(period*60) {
				t.Errorf("CronJob %s: a run may last until the next one is due (every %s min)", cj.Name, m[1])
			}
		}
	}
	rc := find[*batchv1.CronJob](t, objs, "fsctl-reconcile").Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if len(rc.Args) == 0 || rc.Args[0] != "reconcile" || argFlags(rc.Args)["--sale"] == "" || argFlags(rc.Args)["--fix"] != "" {
		t.Errorf("reconcile CronJob args %v: want fsctl reconcile --sale, without --fix", rc.Args)
	}
}

// TestRolesWorkersAndMetrics: the API and consumer run their own role, the lifecycle jobs run on
// the consumer only, and each pod serves /metrics on the port its scrape annotations name.
func TestRolesWorkersAndMetrics(t *testing.T) {
	objs := loadManifests(t)
	svc := find[*corev1.Service](t, objs, serviceName)
	for _, tc := range []struct {
		name, role string
		workers    bool
	}{{apiName, "api", false}, {consumerName, "consumer", true}} {
		tpl := find[*appsv1.Deployment](t, objs, tc.name).Spec.Template
		c := tpl.Spec.Containers[0]
		flags := argFlags(c.Args)
		if flags["--role"] != tc.role {
			t.Errorf("%s: --role %q, want %s", tc.name, flags["--role"], tc.role)
		}
		if w, err := strconv.ParseBool(cmp.Or(flags["--workers"], "true")); err != nil || w != tc.workers {
			t.Errorf("%s: --workers %q, want %v", tc.name, flags["--workers"], tc.workers)
		}
		_, port, err := net.SplitHostPort(flags["--metrics-addr"])
		if err != nil {
			t.Errorf("%s: --metrics-addr %q: %v", tc.name, flags["--metrics-addr"], err)
		}
		mp, ok := containerPort(c, intstr.FromString("metrics"))
		if !ok || strconv.Itoa(int(mp)) != port {
			t.Errorf("%s: container port metrics %d, --metrics-addr port %q", tc.name, mp, port)
		}
		if tc.role == "consumer" {
			// a consumer alone listens on the metrics port only, which answers the probes too
			checkProbes(t, tc.name, c, mp)
		}
		for k, v := range map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": port, "prometheus.io/path": "/metrics"} {
			if tpl.Annotations[k] != v {
				t.Errorf("%s: annotation %s %q, want %q", tc.name, k, tpl.Annotations[k], v)
			}
		}
		if slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port }) {
			t.Errorf("Service %s exposes the metrics port %s", svc.Name, port)
		}
		if v, _ := envValue(objs, c, "OTEL_SERVICE_NAME"); v != serviceName+"-"+tc.role {
			t.Errorf("%s: OTEL_SERVICE_NAME %q, want %s-%s", tc.name, v, serviceName, tc.role)
		}
	}
}

// readmeCreated returns what README.md has the reader create by hand (kubectl create secret
// generic / configmap): "Secret/NAME" or "ConfigMap/NAME" → key → the value as written.
func readmeCreated(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), " ")
	out := map[string]map[string]string{}
	for _, m := range regexp.MustCompile(`kubectl create (secret generic|configmap) ([a-z0-9.-]+)(.*)`).FindAllStringSubmatch(text, -1) {
		id := "ConfigMap/" + m[2]
		if m[1] != "configmap" {
			id = "Secret/" + m[2]
		}
		out[id] = map[string]string{}
		for _, l := range regexp.MustCompile(`--from-literal=([A-Za-z0-9._-]+)=(\S*)`).FindAllStringSubmatch(m[3], -1) {
			out[id][l[1]] = l[2]
		}
	}
	return out
}

// TestReferencesResolve: every ConfigMap, Secret, key, claim and service account a pod names is
// defined under k8s/ or created by a command in README.md, and the blast Job signs its buyers
// with the checkout's JWT secret.
func TestReferencesResolve(t *testing.T) {
	objs := loadManifests(t)
	keys := readmeCreated(t)
	add := func(id string, ks ...string) {
		if keys[id] == nil {
			keys[id] = map[string]string{}
		}
		for _, k := range ks {
			keys[id][k] = "(manifest)"
		}
	}
	for _, cm := range all[*corev1.ConfigMap](objs) {
		add("ConfigMap/" + cm.Name)
		for k := range cm.Data {
			add("ConfigMap/"+cm.Name, k)
		}
	}
	for _, s := range all[*corev1.Secret](objs) {
		add("Secret/" + s.Name)
		for k := range s.StringData {
			add("Secret/"+s.Name, k)
		}
		for k := range s.Data {
			add("Secret/"+s.Name, k)
		}
	}
	for _, o := range objs {
		switch o.obj.(type) {
		case *corev1.PersistentVolumeClaim:
			add("PersistentVolumeClaim/" + o.obj.GetName())
		case *corev1.ServiceAccount:
			add("ServiceAccount/" + o.obj.GetName())
		}
	}
	need := func(owner, id, key string) {
		if ks, ok := keys[id]; !ok {
			t.Errorf("%s: %s is neither under k8s/ nor created in README.md", owner, id)
		} else if _, ok := ks[key]; key != "" && !ok {
			t.Errorf("%s: %s has no key %q", owner, id, key)
		}
	}
	for _, p := range pods(objs) {
		if sa := p.spec.ServiceAccountName; sa != "" {
			need(p.owner, "ServiceAccount/"+sa, "")
		}
		for _, v := range p.spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				need(p.owner, "PersistentVolumeClaim/"+v.PersistentVolumeClaim.ClaimName, "")
			}
		}
		for _, c := range slices.Concat(p.spec.InitContainers, p.spec.Containers) {
			for _, e := range c.Env {
				switch vf := e.ValueFrom; {
				case vf == nil:
				case vf.ConfigMapKeyRef != nil:
					need(p.owner+" "+e.Name, "ConfigMap/"+vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key)
				case vf.SecretKeyRef != nil:
					need(p.owner+" "+e.Name, "Secret/"+vf.SecretKeyRef.Name, vf.SecretKeyRef.Key)
				}
			}
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					need(p.owner, "ConfigMap/"+e.ConfigMapRef.Name, "")
				}
				if e.SecretRef != nil {
					need(p.owner, "Secret/"+e.SecretRef.Name, "")
				}
			}
		}
	}
	// The two JWT secrets are two objects (the blast may run elsewhere) of one value.
	jwt := func(c corev1.Container) string {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "FSCTL_JWT_SECRET" })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
			t.Fatalf("%s: FSCTL_JWT_SECRET does not come from a Secret", c.Name)
		}
		ref := c.Env[i].ValueFrom.SecretKeyRef
		return keys["Secret/"+ref.Name][ref.Key]
	}
	blast := jwt(find[*batchv1.Job](t, objs, "fsctl-blast").Spec.Template.Spec.Containers[0])
	checkout := jwt(find[*appsv1.Deployment](t, objs, apiName).Spec.Template.Spec.Containers[0])
	if blast == "" || blast != checkout {
		t.Errorf("README.md creates the blast's JWT secret from %q and the checkout's from %q: want the same", blast, checkout)
	}
}

// TestPodsAreLockedDown: every pod runs as a non-root user (fsctl's 65532), and the checkout's
// containers on a read-only root filesystem without privilege escalation.
func TestPodsAreLockedDown(t *testing.T) {
	for _, p := range pods(loadManifests(t)) {
		sc := p.spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
			t.Errorf("%s: want runAsNonRoot and runAsUser 65532 (distroless nonroot)", p.owner)
		}
		if p.meta.Labels["app.kubernetes.io/name"] != serviceName {
			continue
		}
		for _, c := range p.spec.Containers {
			cs := c.SecurityContext
			if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
				cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
				t.Errorf("%s/%s: want readOnlyRootFilesystem and no allowPrivilegeEscalation", p.owner, c.Name)
			}
		}
	}
}
