package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

func fetchJSON(t *testing.T, url string, wantStatus int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != wantStatus || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestBoardJSON(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	res, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_j", Channel: "c", Plan: *planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{}).Plan})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	httpapi.NewBoards(s, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, storetest.Logger(t)).Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	var got struct {
		Board struct{ ID, Name, Goal string }
		Cards []struct {
			ID, Title, Body, Assignee, Status string
			WorkspaceMode                     string   `json:"workspace_mode"`
			AcceptanceCriteria                []string `json:"acceptance_criteria"`
			DependsOn                         []string `json:"depends_on"`
		}
	}
	fetchJSON(t, srv.URL+"/api/v1/boards/"+string(res.BoardID), http.StatusOK, &got)
	if got.Board.ID != string(res.BoardID) || got.Board.Name != "Daily Research Newspaper" || len(got.Cards) != 10 {
		t.Fatalf("board json = %+v", got)
	}
	links := 0
	for _, c := range got.Cards {
		links += len(c.DependsOn)
		if c.ID == "" || c.Title == "" || c.Status == "" || c.WorkspaceMode == "" || c.DependsOn == nil {
			t.Errorf("card = %+v", c)
		}
	}
	if links != 13 {
		t.Errorf("links = %d", links)
	}
	var st struct {
		Counts  map[string]int
		Waiting []struct{ ID string } `json:"waiting_on_dependencies"`
		Ready   []struct{ ID string } `json:"ready_to_start"`
	}
	fetchJSON(t, srv.URL+"/api/v1/boards/"+string(res.BoardID)+"/status", http.StatusOK, &st)
	if st.Counts["Backlog"] != 9 || st.Counts["Ready"] != 1 || len(st.Ready) != 1 || len(st.Waiting) != 9 {
		t.Fatalf("status json = %+v", st)
	}
	var e struct{ Error string }
	fetchJSON(t, srv.URL+"/api/v1/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa", http.StatusNotFound, &e)
	if !strings.Contains(e.Error, "no board") {
		t.Errorf("error = %q", e.Error)
	}
	fetchJSON(t, srv.URL+"/api/v1/boards/'; DROP TABLE boards;--/status", http.StatusNotFound, &e)
}
