package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// A model that answers 20 MB, or 200 KiB of prose twice, fails the request
// without megabytes in the audit log: each raw output kept is at most
// 64 KiB, marked as cut.
func TestHugeModelOutputIsCappedInTheAudit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		calls   int
		reason  string
	}{
		{"20 MB answer", `{"kind":"answer","answer":"` + strings.Repeat("a", 20<<20) + `"}`, 1, "model output too large"},
		{"200 KiB of prose", strings.Repeat("Sure, here is your board! ", 200<<10/26), 2, "no JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := bottest.New(t)
			env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: tt.content} })
			id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
			if err != nil {
				t.Fatal(err)
			}
			st := env.WaitRequest(t, id)
			if st.State != board.RequestFailed || st.Reply == nil || !strings.Contains(st.Reply.Text, "valid plan") {
				t.Fatalf("status = %+v", st)
			}
			if n := len(env.Model.Requests()); n != tt.calls {
				t.Errorf("model calls = %d, want %d", n, tt.calls)
			}
			evs, err := env.Store.Audit(context.Background(), board.AuditFilter{Channel: "console:general"})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range evs {
				if e.Action != "plan_failed" {
					continue
				}
				found = true
				if len(e.Detail) > 2*(64<<10)+4096 {
					t.Errorf("audit row detail = %d bytes", len(e.Detail))
				}
				var d struct {
					Raw    []string
					Errors []struct{ Message string }
				}
				if err := json.Unmarshal(e.Detail, &d); err != nil {
					t.Fatal(err)
				}
				for _, raw := range d.Raw {
					if len(raw) > 64<<10+100 {
						t.Errorf("raw output kept: %d bytes", len(raw))
					}
					if len(raw) > 64<<10 && !strings.Contains(raw, "[truncated:") {
						t.Errorf("a cut raw output is not marked as cut: ...%s", raw[len(raw)-60:])
					}
				}
				if len(d.Errors) == 0 || !strings.Contains(d.Errors[0].Message, tt.reason) {
					t.Errorf("audit errors = %+v, want %q", d.Errors, tt.reason)
				}
			}
			if !found {
				t.Fatal("no plan_failed audit row")
			}
		})
	}
}
