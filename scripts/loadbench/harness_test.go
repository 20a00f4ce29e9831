package main

import (
	"bytes"
	"strings"
	"testing"
)

// The cluster workload without a cluster to run on says what it needs
// and runs nothing.
func TestClusterWorkloadNeedsAClusterURL(t *testing.T) {
	t.Setenv("LOADBENCH_CLUSTER_URL", "")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-workloads", "cluster", "-bin", "does-not-exist"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "-cluster-url") || stdout.Len() != 0 {
		t.Fatalf("stderr %q, stdout %q; want a word on -cluster-url and no table", stderr.String(), stdout.String())
	}
}
