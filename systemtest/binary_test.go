package systemtest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// buildBobnet builds the bobnet command into the test's folder and
// returns its path, for the tests that run it as a process (replicas, a
// replica killed mid-work, its command line).
func buildBobnet(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bobnet")
	if out, err := exec.Command("go", "build", "-tags", "goolm", "-o", bin, "../cmd/bobnet").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
