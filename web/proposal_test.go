package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/web"
)

// views knows one proposal, p_one, whose answer is markup; p_down is a
// store that does not answer.
type views struct{}

func (views) ProposalView(_ context.Context, id string) (web.ProposalView, error) {
	switch id {
	case "p_one":
		return web.ProposalView{ID: id, Name: "News", State: "pending", Version: 2, Answer: "<script>alert(1)</script>",
			Cards: []web.ProposalCard{{Title: "Write the intro", DependsOn: []string{"Research"}}}}, nil
	case "p_down":
		return web.ProposalView{}, errors.New("connection refused")
	}
	return web.ProposalView{}, fmt.Errorf("proposal %q: %w", id, web.ErrNoProposal)
}

// TestProposalPageAnswers: a proposal is drawn with its text escaped and
// the page's own policy; an unknown one is a 404 and a store that does not
// answer a 503, neither with the page's policy.
func TestProposalPageAnswers(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	r.Get("/proposals/{id}", web.ProposalPage(views{}, slog.New(slog.DiscardHandler)))
	get := func(id string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/proposals/"+id, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Result(), string(body)
	}
	resp, page := get("p_one")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") != "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'" ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") || !strings.Contains(page, "Proposal v2: News") || !strings.Contains(page, "Depends on: Research") {
		t.Fatalf("page = %s", page)
	}
	for id, want := range map[string]int{"p_two": http.StatusNotFound, "p_down": http.StatusServiceUnavailable} {
		resp, _ := get(id)
		if resp.StatusCode != want || resp.Header.Get("Content-Security-Policy") != "" {
			t.Errorf("%s: %d %v, want %d", id, resp.StatusCode, resp.Header, want)
		}
	}
}
