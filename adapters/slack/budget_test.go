package slack

import "testing"

// Each workspace has a budget of its own: one spent leaves another's
// whole.
func TestStatusBudgetIsPerWorkspace(t *testing.T) {
	b := newStatusBudget()
	n := 0
	for range 100 {
		if b.allow(slackTenant("T1/C1")) {
			n++
		}
	}
	if n < statusBurst || n > statusBurst+1 {
		t.Errorf("100 statuses at once in T1: %d allowed, want the burst (%d)", n, statusBurst)
	}
	if !b.allow(slackTenant("T2/C1")) {
		t.Error("T2 refused a status after T1 spent its budget")
	}
}
