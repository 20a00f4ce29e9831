package slack

import (
	"fmt"
	"testing"

	"github.com/bobnet/bobnet/board"
)

// Each workspace has a budget of its own: one spent leaves another's
// whole. A request delivered again gets its first answer and spends no
// more of the budget.
func TestStatusBudgetIsPerWorkspace(t *testing.T) {
	b := newStatusBudget()
	for delivery := range 2 {
		if !b.allow(slackTenant("T1/C1"), "r_again") {
			t.Fatalf("delivery %d of a request: status refused; want it allowed each time", delivery+1)
		}
	}
	n := 1
	for i := range 100 {
		if b.allow(slackTenant("T1/C1"), board.RequestID(fmt.Sprint("r_", i))) {
			n++
		}
	}
	if n < statusBurst || n > statusBurst+1 {
		t.Errorf("100 statuses at once in T1: %d allowed, want the burst (%d)", n, statusBurst)
	}
	if !b.allow(slackTenant("T2/C1"), "r_t2") {
		t.Error("T2 refused a status after T1 spent its budget")
	}
}
