// Package deploy holds BobNet's deployment files (Dockerfile, compose
// file, Helm chart) and the tests that keep them in step with the program.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// knownVars are the variables `bobnet serve` reads, from `bobnet config
// vars`, with whether each holds a secret.
var knownVars = sync.OnceValues(func() (map[string]bool, error) {
	cmd := exec.Command("go", "run", "../cmd/bobnet", "config", "vars")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go run ../cmd/bobnet config vars: " + err.Error() + ": " + stderr.String())
	}
	vars := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, mark, _ := strings.Cut(sc.Text(), " ")
		vars[name] = mark == "secret"
	}
	if len(vars) < 10 {
		return nil, errors.New("config vars listed only: " + string(out))
	}
	return vars, nil
})

func vars(t *testing.T) map[string]bool {
	t.Helper()
	v, err := knownVars()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// helm runs the helm CLI that make test built (HELM) and returns stdout.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("HELM is not set (make test builds helm and sets it)")
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// object is one rendered Kubernetes object, loosely typed.
type object struct {
	Kind     string
	Metadata struct {
		Name        string
		Labels      map[string]string
		Annotations map[string]string
	}
	Spec map[string]any
}

// render is helm template of the chart with extra --set arguments, split
// into objects.
func render(t *testing.T, set ...string) []object {
	t.Helper()
	args := []string{"template", "bobnet", "helm/bobnet"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	dec := yaml.NewDecoder(bytes.NewReader(helm(t, args...)))
	var objs []object
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// dig walks a loosely typed tree by map keys and list indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// container is the first container of a pod-owning object.
func container(t *testing.T, o object) map[string]any {
	t.Helper()
	c, ok := dig(o.Spec, "template", "spec", "containers", 0).(map[string]any)
	if !ok {
		t.Fatalf("%s %s has no container", o.Kind, o.Metadata.Name)
	}
	return c
}

type envVar struct {
	Name, Value string
	SecretRef   string // secret name/key when from a Secret
}

func envOf(c map[string]any) []envVar {
	var out []envVar
	list, _ := c["env"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		v := envVar{Name: dig(m, "name").(string)}
		if s, ok := dig(m, "value").(string); ok {
			v.Value = s
		}
		if ref, ok := dig(m, "valueFrom", "secretKeyRef").(map[string]any); ok {
			v.SecretRef = ref["name"].(string) + "/" + ref["key"].(string)
		}
		out = append(out, v)
	}
	return out
}

func TestChartLints(t *testing.T) {
	t.Parallel()
	helm(t, "lint", "--strict", "helm/bobnet")
	helm(t, "lint", "--strict", "helm/bobnet", "--set", "ingress.enabled=true", "--set", "serviceMonitor.enabled=true")
}

// TestChartDeploymentProbesSecretsAndMigrations renders the chart and
// checks what running it safely depends on.
func TestChartDeploymentProbesSecretsAndMigrations(t *testing.T) {
	t.Parallel()
	known := vars(t)
	objs := render(t, "replicaCount=3", "ingress.enabled=true", "serviceMonitor.enabled=true")
	deps := find(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments", len(deps))
	}
	d := deps[0]
	if r, _ := d.Spec["replicas"].(int); r != 3 {
		t.Errorf("replicas = %v", d.Spec["replicas"])
	}
	c := container(t, d)
	if p := dig(c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe path = %v", p)
	}
	if p := dig(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe path = %v", p)
	}
	if dig(c, "resources", "requests", "cpu") == nil || dig(c, "resources", "requests", "memory") == nil {
		t.Errorf("no resource requests: %v", c["resources"])
	}
	if args := dig(c, "args", 0); args != "serve" {
		t.Errorf("container args = %v", c["args"])
	}

	// Every secret variable comes from the Secret, never as a value.
	env := envOf(c)
	byName := map[string]envVar{}
	for _, e := range env {
		byName[e.Name] = e
	}
	for name, secret := range known {
		if !secret {
			continue
		}
		e, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("%s is not referenced from the Secret", name)
		case e.SecretRef == "" || e.Value != "":
			t.Errorf("%s is set as a value, not a Secret reference", name)
		case !strings.HasPrefix(e.SecretRef, "bobnet/"):
			t.Errorf("%s refers to %s", name, e.SecretRef)
		}
	}
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("the chart renders a Secret (%s); secrets are the operator's", o.Metadata.Name)
		}
	}

	// Migrations run once, before the pods, as a hook Job.
	jobs := find(objs, "Job")
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs", len(jobs))
	}
	j := jobs[0]
	if hook := j.Metadata.Annotations["helm.sh/hook"]; !strings.Contains(hook, "pre-install") || !strings.Contains(hook, "pre-upgrade") {
		t.Errorf("migration Job hook = %q", hook)
	}
	jc := container(t, j)
	if args := dig(jc, "args", 0); args != "migrate" {
		t.Errorf("migration Job args = %v", jc["args"])
	}
	if jenv := envOf(jc); !slices.ContainsFunc(jenv, func(e envVar) bool { return e.Name == "DATABASE_URL" && e.SecretRef != "" }) {
		t.Errorf("migration Job has no DATABASE_URL from the Secret: %+v", jenv)
	}

	for _, kind := range []string{"Ingress", "PodDisruptionBudget", "ServiceMonitor"} {
		if len(find(objs, kind)) != 1 {
			t.Errorf("no %s", kind)
		}
	}
	if svcs := find(objs, "Service"); len(svcs) != 2 {
		t.Errorf("%d Services, want the public one and the admin one", len(svcs))
	}
	if sm := find(objs, "ServiceMonitor"); len(sm) == 1 && dig(sm[0].Spec, "endpoints", 0, "path") != "/metrics" {
		t.Errorf("ServiceMonitor endpoints = %v", sm[0].Spec["endpoints"])
	}

	// Defaults: no Ingress or ServiceMonitor unless asked for.
	plain := render(t)
	if len(find(plain, "Ingress")) != 0 || len(find(plain, "ServiceMonitor")) != 0 {
		t.Error("Ingress or ServiceMonitor rendered by default")
	}
	if len(find(render(t, "migrations.enabled=false"), "Job")) != 0 {
		t.Error("migration Job rendered when disabled")
	}
}

// TestChartScrapesTheAdminPort: the pod listens for BOBNET_ADMIN_LISTEN on
// a container port named admin, which only a ClusterIP Service of its own
// exposes, and the ServiceMonitor selects that Service alone and scrapes
// /metrics on that port (the http port's /metrics needs an admin token).
func TestChartScrapesTheAdminPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		port int
	}{
		{[]string{"serviceMonitor.enabled=true", "service.type=LoadBalancer", "ingress.enabled=true"}, 9090},
		{[]string{"serviceMonitor.enabled=true", "admin.port=9191"}, 9191},
	} {
		objs := render(t, tc.set...)
		c := container(t, find(objs, "Deployment")[0])
		var listen []string
		for _, e := range envOf(c) {
			if e.Name == "BOBNET_ADMIN_LISTEN" {
				listen = append(listen, e.Value)
			}
		}
		if want := fmt.Sprintf("0.0.0.0:%d", tc.port); len(listen) != 1 || listen[0] != want {
			t.Errorf("%v: BOBNET_ADMIN_LISTEN = %q, want once %q", tc.set, listen, want)
		}
		ports := map[string]any{}
		list, _ := c["ports"].([]any)
		for _, p := range list {
			ports[fmt.Sprint(dig(p, "name"))] = dig(p, "containerPort")
		}
		if ports["admin"] != tc.port || ports["http"] != 8080 {
			t.Errorf("%v: container ports = %v", tc.set, ports)
		}

		var admin, public *object
		for _, svc := range find(objs, "Service") {
			switch svc.Metadata.Name {
			case "bobnet-admin":
				admin = &svc
			case "bobnet":
				public = &svc
			}
		}
		if admin == nil || public == nil {
			t.Fatalf("%v: no admin or public Service", tc.set)
		}
		if admin.Spec["type"] != "ClusterIP" || dig(admin.Spec, "ports", 0, "name") != "admin" || dig(admin.Spec, "ports", 0, "targetPort") != "admin" ||
			dig(admin.Spec, "ports", 0, "port") != tc.port || dig(admin.Spec, "ports", 1) != nil {
			t.Errorf("%v: admin Service = %v", tc.set, admin.Spec)
		}
		if dig(public.Spec, "ports", 0, "name") != "http" || strings.Contains(fmt.Sprint(public.Spec["ports"]), "admin") {
			t.Errorf("%v: the public Service exposes the admin port: %v", tc.set, public.Spec["ports"])
		}

		sm := find(objs, "ServiceMonitor")
		if len(sm) != 1 {
			t.Fatalf("%v: %d ServiceMonitors", tc.set, len(sm))
		}
		if dig(sm[0].Spec, "endpoints", 0, "port") != "admin" || dig(sm[0].Spec, "endpoints", 0, "path") != "/metrics" || dig(sm[0].Spec, "endpoints", 1) != nil {
			t.Errorf("%v: ServiceMonitor endpoints = %v", tc.set, sm[0].Spec["endpoints"])
		}
		selects := func(svc *object) bool {
			want, _ := dig(sm[0].Spec, "selector", "matchLabels").(map[string]any)
			for k, v := range want {
				if svc.Metadata.Labels[k] != v {
					return false
				}
			}
			return len(want) > 0
		}
		if !selects(admin) || selects(public) {
			t.Errorf("%v: the ServiceMonitor selects the admin Service %v and the public one %v; want only the admin one", tc.set, selects(admin), selects(public))
		}
	}
	// BOBNET_ADMIN_LISTEN is the chart's to set, from admin.port.
	if out, err := helmErr(t, "template", "bobnet", "helm/bobnet", "--set", "env.BOBNET_ADMIN_LISTEN=0.0.0.0:1"); err == nil || !strings.Contains(out, "set admin.port") {
		t.Errorf("env.BOBNET_ADMIN_LISTEN rendered: %v %s", err, out)
	}
}

// helmErr runs helm expecting it may fail, and returns its stderr.
func helmErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("HELM is not set (make test builds helm and sets it)")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stderr.String(), err
}

// TestEveryVariableSetIsOneBobNetKnows checks the chart, the compose file
// and the example env file against the variables bobnet serve reads, so a
// renamed or misspelt variable fails here instead of being ignored.
// The chart's redis values become BOBNET_REDIS_MODE and
// BOBNET_REDIS_STREAMS; a mode BobNet does not know stops the render.
func TestChartRedisModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set           []string
		mode, streams string
	}{
		{nil, "single", ""},
		{[]string{"redis.mode=cluster"}, "cluster", ""},
		{[]string{"redis.mode=sentinel", "redis.streams=4"}, "sentinel", "4"},
	} {
		got := map[string]string{}
		for _, e := range envOf(container(t, find(render(t, tc.set...), "Deployment")[0])) {
			got[e.Name] = e.Value
		}
		if got["BOBNET_REDIS_MODE"] != tc.mode || got["BOBNET_REDIS_STREAMS"] != tc.streams {
			t.Errorf("%v: BOBNET_REDIS_MODE %q, BOBNET_REDIS_STREAMS %q; want %q, %q", tc.set, got["BOBNET_REDIS_MODE"], got["BOBNET_REDIS_STREAMS"], tc.mode, tc.streams)
		}
	}
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("HELM is not set (make test builds helm and sets it)")
	}
	for _, bad := range []string{"redis.mode=replicated", "env.BOBNET_REDIS_MODE=cluster"} {
		out, err := exec.Command(bin, "template", "bobnet", "helm/bobnet", "--set", bad).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "redis.mode") {
			t.Errorf("--set %s rendered (%v): %s", bad, err, out)
		}
	}
}

func TestEveryVariableSetIsOneBobNetKnows(t *testing.T) {
	t.Parallel()
	known := vars(t)
	check := func(where, name string) {
		if _, ok := known[name]; !ok {
			t.Errorf("%s sets %s, which bobnet serve does not read", where, name)
		}
	}

	// The compose file's bobnet service.
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command     []string
			Environment map[string]string
			EnvFile     any `yaml:"env_file"`
		}
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	svc, ok := compose.Services["bobnet"]
	if !ok || len(svc.Environment) == 0 {
		t.Fatal("compose.yaml has no bobnet service with an environment")
	}
	for name := range svc.Environment {
		check("compose.yaml", name)
	}
	// Redis in compose keeps an append-only file.
	if r := compose.Services["redis"]; !slices.Contains(r.Command, "--appendonly") || r.Command[slices.Index(r.Command, "--appendonly")+1] != "yes" {
		t.Errorf("compose Redis command = %q, want --appendonly yes", r.Command)
	}

	// The example env file compose reads.
	ex, err := os.ReadFile("bobnet.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ex), "\n") {
		line = strings.TrimSpace(line)
		if name, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			check("bobnet.env.example", name)
		}
	}

	// The Dockerfile's ENV lines.
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(df), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENV "); ok {
			name, _, _ := strings.Cut(rest, "=")
			check("Dockerfile", name)
		}
	}

	// The chart, rendered with everything on.
	if os.Getenv("HELM") == "" {
		t.Log("HELM is not set: the chart's variables are not checked here")
		return
	}
	for _, name := range chartVars(t, "ingress.enabled=true", "serviceMonitor.enabled=true") {
		check("the chart", name)
	}
	// The check sees a variable added through values.
	if names := chartVars(t, "env.BOBNET_NOT_A_SETTING=1"); !slices.Contains(names, "BOBNET_NOT_A_SETTING") {
		t.Errorf("a variable set through values is not seen: %q", names)
	}
}

// chartVars are the names of the variables the rendered chart sets on its
// containers.
func chartVars(t *testing.T, set ...string) []string {
	t.Helper()
	var names []string
	for _, o := range render(t, set...) {
		if o.Kind != "Deployment" && o.Kind != "Job" {
			continue
		}
		for _, e := range envOf(container(t, o)) {
			names = append(names, e.Name)
		}
	}
	return names
}

func TestChartValuesHoldNoSecretValues(t *testing.T) {
	t.Parallel()
	known := vars(t)
	raw, err := os.ReadFile(filepath.Join("helm", "bobnet", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Env map[string]any
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	for name := range values.Env {
		if known[name] {
			t.Errorf("values.yaml env sets the secret %s; refer to it through secret.required or secret.optional", name)
		}
	}
}
