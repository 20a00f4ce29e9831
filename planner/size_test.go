package planner_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// countingTransport counts the bytes read from every answer's body.
type countingTransport struct{ read atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = countingBody{resp.Body, &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// A model server answering 20 MB is read up to the cap, not to its end:
// the call fails as an invalid output "model output too large", without a
// repair call (which would read as much again), keeping at most the cap
// of what it read.
func TestHugeOutputIsCutOff(t *testing.T) {
	t.Parallel()
	huge := `{"kind":"answer","answer":"` + strings.Repeat("a", 20<<20) + `"}`
	for _, stream := range []planner.StreamMode{planner.StreamOff, planner.StreamOn} {
		name := "plain"
		if stream == planner.StreamOn {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := plannertest.NewServer(t, plannertest.Reply{Content: huge, Chunks: 400}, plannertest.Reply{Content: huge, Chunks: 400})
			counter := &countingTransport{}
			c := newClient(srv.URL(), func(c *planner.ClientConfig) {
				c.Stream = stream
				c.HTTPClient = &http.Client{Transport: counter}
			})
			out, err := c.Plan(context.Background(), planner.PromptInput{Message: "plan", Profiles: planner.DefaultProfiles()}, opts)
			if n := counter.read.Load(); n > 2<<20 {
				t.Errorf("read %d bytes of the answer, want at most about the 1 MiB cap", n)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("model calls = %d, want 1 (no repair of a cut-off answer)", n)
			}
			var inv *planner.InvalidOutputError
			if !errors.As(err, &inv) || !errors.Is(err, planner.ErrOutputTooLarge) || !strings.Contains(err.Error(), "model output too large") {
				t.Fatalf("err = %.200v, want an invalid output, too large", err)
			}
			for _, raw := range inv.Raw {
				if len(raw) > planner.MaxResponseBody {
					t.Errorf("kept %d bytes of raw output", len(raw))
				}
			}
			if out.Tokens <= 0 {
				t.Errorf("tokens = %d: a cut-off answer still cost something", out.Tokens)
			}
		})
	}
}
