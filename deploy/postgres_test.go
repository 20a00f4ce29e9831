package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestChartMultiHostPostgres: with postgres.hosts the chart sets
// DATABASE_URL from them (no password in it, target_session_attrs
// kept), PGPASSWORD from the Secret, and no DATABASE_URL from the Secret,
// on the pods and the migration Job alike; several hosts without
// target_session_attrs=read-write are refused with a message that says so.
func TestChartMultiHostPostgres(t *testing.T) {
	t.Parallel()
	objs := render(t, "postgres.hosts={pg-a:5432,pg-b:5432}", "postgres.user=bn", "postgres.database=boards")
	for _, kind := range []string{"Deployment", "Job"} {
		list := find(objs, kind)
		if len(list) != 1 {
			t.Fatalf("%d %ss", len(list), kind)
		}
		var urls, passwords []envVar
		for _, e := range envOf(container(t, list[0])) {
			switch e.Name {
			case "DATABASE_URL":
				urls = append(urls, e)
			case "PGPASSWORD":
				passwords = append(passwords, e)
			}
		}
		want := "postgres://bn@pg-a:5432,pg-b:5432/boards?sslmode=require&target_session_attrs=read-write"
		if len(urls) != 1 || urls[0].Value != want || urls[0].SecretRef != "" {
			t.Errorf("%s DATABASE_URL = %+v, want the value %s alone", kind, urls, want)
		}
		if len(passwords) != 1 || passwords[0].SecretRef != "bobnet/PGPASSWORD" {
			t.Errorf("%s PGPASSWORD = %+v, want from the Secret bobnet/PGPASSWORD", kind, passwords)
		}
	}

	// One host (a service that follows the primary) needs no session
	// check; several do.
	render(t, "postgres.hosts={pg-rw:5432}", "postgres.options=sslmode=require")
	out, err := helmFails(t, "template", "bobnet", "helm/bobnet", "--set", "postgres.hosts={pg-a:5432,pg-b:5432}", "--set", "postgres.options=sslmode=require")
	if err == nil || !strings.Contains(out, "target_session_attrs=read-write") {
		t.Errorf("several hosts without target_session_attrs=read-write: err %v, %s", err, out)
	}
}

// helmFails runs helm expecting it may fail, and returns its stderr.
func helmFails(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Skip("HELM is not set (make test builds helm and sets it)")
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stderr.String(), err
}
