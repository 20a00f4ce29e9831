package systemtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/signing"
)

// contractCall is one exchange through a validating transport: the
// status and the decoded JSON answer (nil when not JSON).
func contractCall(t *testing.T, ct *contractTransport, token, method, url, contentType string, body []byte, h http.Header) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: ct}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp.StatusCode, nil
	}
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestContractMainFlows drives every operation of the API, in its main
// successes and refusals, through a client that checks each exchange
// against openapi.json, and checks the events callbacks receive against
// its OutboundEvent. It then asks that each of those operations and
// statuses was seen, so the flows cannot silently stop reaching one.
func TestContractMainFlows(t *testing.T) {
	t.Parallel()
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.boot(t)
	ct := newContractTransport(t)
	api := func(token, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var raw []byte
		switch v := body.(type) {
		case nil:
		case string:
			raw = []byte(v)
		default:
			raw, _ = json.Marshal(v)
		}
		return contractCall(t, ct, token, method, b.url+path, "application/json", raw, nil)
	}
	get := func(path string) int {
		t.Helper()
		status, _ := contractCall(t, ct, "", "GET", b.url+path, "", nil, nil)
		return status
	}
	stream := func(path string) {
		t.Helper()
		if status, _ := contractCall(t, ct, bootstrap, "GET", b.url+path, "", nil, nil); status != http.StatusOK {
			t.Errorf("GET %s: %d", path, status)
		}
	}
	wait := func(rid any) map[string]any {
		t.Helper()
		var r map[string]any
		until(t, fmt.Sprint("request ", rid), func() bool {
			_, r = api(bootstrap, "GET", fmt.Sprint("/api/v1/requests/", rid), nil)
			return r["state"] == "done" || r["state"] == "failed"
		})
		if r["proposal_id"] == nil {
			t.Fatalf("request %v: %v", rid, r)
		}
		return r
	}
	propose := func(channel, user string) string {
		t.Helper()
		status, out := api(bootstrap, "POST", "/api/v1/channels/"+channel+"/messages", map[string]string{"user": user, "text": "plan our daily research newspaper"})
		if status != http.StatusAccepted {
			t.Fatalf("post message: %d %v", status, out)
		}
		return wait(out["request_id"])["proposal_id"].(string)
	}
	expect := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}

	// Hooks: accepted, redelivered, ignored, unsigned, unknown, not JSON.
	form, _ := os.ReadFile(filepath.Join("..", "testdata", "webhook", "generic-text.json"))
	std, _ := signing.StandardHeaders(formsSecret, "msg_contract_1", time.Now(), form)
	hook := func(name string, h http.Header, body []byte) (int, map[string]any) {
		t.Helper()
		return contractCall(t, ct, "", "POST", b.url+"/api/v1/hooks/"+name, "application/json", body, h)
	}
	status, first := hook("forms", std, form)
	expect("hook", status, http.StatusAccepted)
	status, again := hook("forms", std, form)
	if status != http.StatusAccepted || again["duplicate"] != true || again["request_id"] != first["request_id"] {
		t.Errorf("redelivery: %d %v", status, again)
	}
	ping := []byte(`{"zen":"hi"}`)
	status, ignored := hook("github", http.Header{"X-Github-Event": {"ping"}, "X-Hub-Signature-256": {signing.SHA256Signature(ghHookSecret, ping)}}, ping)
	if status != http.StatusAccepted || ignored["status"] != "ignored" {
		t.Errorf("ping: %d %v", status, ignored)
	}
	status, _ = hook("forms", nil, form)
	expect("unsigned hook", status, http.StatusUnauthorized)
	status, _ = hook("nope", nil, form)
	expect("unknown hook", status, http.StatusNotFound)
	notJSON := []byte(`[1]`)
	status, _ = hook("github", http.Header{"X-Github-Event": {"issues"}, "X-Hub-Signature-256": {signing.SHA256Signature(ghHookSecret, notJSON)}}, notJSON)
	expect("hook body not an object", status, http.StatusBadRequest)

	// The hook's proposal, approved: a board whose card changes reach the
	// callbacks as card.changed.
	formsProposal := wait(first["request_id"])["proposal_id"]
	status, approved := api(bootstrap, "POST", fmt.Sprint("/api/v1/proposals/", formsProposal, "/approve"), map[string]string{"user": "alice"})
	expect("approve", status, http.StatusOK)
	status, _ = api(bootstrap, "POST", fmt.Sprint("/api/v1/proposals/", formsProposal, "/approve"), map[string]string{"user": "alice"})
	expect("approve twice", status, http.StatusConflict)
	boardID := fmt.Sprint(approved["board_id"])

	// Boards: one, its status, the list in pages, refusals.
	status, brd := api(bootstrap, "GET", "/api/v1/boards/"+boardID, nil)
	expect("board", status, http.StatusOK)
	status, _ = api(bootstrap, "GET", "/api/v1/boards/"+boardID+"/status", nil)
	expect("status", status, http.StatusOK)
	status, _ = api(bootstrap, "GET", "/api/v1/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil)
	expect("unknown board", status, http.StatusNotFound)
	status, _ = api(bootstrap, "GET", "/api/v1/boards?limit=1", nil)
	expect("boards", status, http.StatusOK)
	status, _ = api(bootstrap, "GET", "/api/v1/boards?limit=0", nil)
	expect("boards limit 0", status, http.StatusBadRequest)
	stream("/api/v1/boards/" + boardID + "/events")

	// Cards: by id, by handle, blocked, stale, and refusals.
	var free, waiting map[string]any
	for _, c := range brd["cards"].([]any) {
		c := c.(map[string]any)
		if len(c["depends_on"].([]any)) == 0 && free == nil {
			free = c
		}
		if len(c["depends_on"].([]any)) > 0 && waiting == nil {
			waiting = c
		}
	}
	if free == nil || waiting == nil {
		t.Fatalf("no free or waiting card in %v", brd["cards"])
	}
	status, _ = api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", free["id"]), map[string]any{"user": "alice", "status": "In Progress"})
	expect("patch by id", status, http.StatusOK)
	status, card := api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", free["handle"]), map[string]any{"user": "alice", "body": "checked by the contract test"})
	if status != http.StatusOK {
		t.Fatalf("patch by handle: %d %v", status, card)
	}
	status, stale := api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", free["handle"]), map[string]any{"user": "alice", "title": "x", "version": card["version"].(float64) - 1})
	if status != http.StatusConflict || stale["card"] == nil {
		t.Errorf("stale version: %d %v", status, stale)
	}
	status, blocked := api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", waiting["handle"]), map[string]any{"user": "alice", "status": "In Progress"})
	if status != http.StatusConflict || blocked["blocked_by"] == nil {
		t.Errorf("blocked move: %d %v", status, blocked)
	}
	status, _ = api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", free["id"]), map[string]any{"user": "alice"})
	expect("nothing to change", status, http.StatusBadRequest)
	status, _ = api(bootstrap, "PATCH", fmt.Sprint("/api/v1/cards/", free["id"]), map[string]any{"user": "alice", "colour": "red"})
	expect("unknown field", status, http.StatusBadRequest)
	status, _ = api(bootstrap, "PATCH", "/api/v1/cards/NOPE-99", map[string]any{"user": "alice", "status": "Done"})
	expect("unknown handle", status, http.StatusNotFound)
	status, _ = contractCall(t, ct, bootstrap, "PATCH", fmt.Sprint(b.url, "/api/v1/cards/", free["id"]), "text/plain", []byte(`{"user":"alice","status":"Done"}`), nil)
	expect("not JSON", status, http.StatusUnsupportedMediaType)

	// A console request: revised, the old version refused, the new one
	// cancelled.
	pid := propose("general", "alice")
	status, _ = api(bootstrap, "GET", "/api/v1/proposals/"+pid, nil)
	expect("proposal", status, http.StatusOK)
	status, rev := api(bootstrap, "POST", "/api/v1/proposals/"+pid+"/revise", map[string]string{"user": "alice", "feedback": "add a fact checker"})
	expect("revise", status, http.StatusAccepted)
	next := wait(rev["request_id"])["proposal_id"].(string)
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+pid+"/approve", map[string]string{"user": "alice"})
	expect("approve superseded", status, http.StatusConflict)
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+next+"/approve", map[string]string{"user": "mallory"})
	expect("stranger approves", status, http.StatusForbidden)
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+next+"/cancel", map[string]string{"user": "alice"})
	expect("cancel", status, http.StatusOK)
	// Only an expired proposal is offered again.
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+next+"/propose-again", map[string]string{"user": "alice"})
	expect("propose a cancelled one again", status, http.StatusConflict)
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/p_nope/cancel", map[string]string{"user": "alice"})
	expect("cancel unknown", status, http.StatusNotFound)
	status, _ = api(bootstrap, "GET", "/api/v1/requests/r_nope", nil)
	expect("unknown request", status, http.StatusNotFound)
	status, _ = api(bootstrap, "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"hi","admin":true}`)
	expect("unknown field", status, http.StatusBadRequest)
	status, _ = api(bootstrap, "POST", "/api/v1/channels/Bad%20Name/messages", map[string]string{"user": "alice", "text": "hi"})
	expect("bad channel", status, http.StatusBadRequest)
	stream("/api/v1/channels/general/events")
	status, _ = api(bootstrap, "GET", "/api/v1/channels", nil)
	expect("channels", status, http.StatusOK)

	// Policies: two approvals in one channel, one given and withdrawn.
	status, _ = api(bootstrap, "PUT", "/api/v1/policies/console:release", map[string]any{"deciders": []string{"alice", "bob", "carol"}, "approvals": 2, "self_approval": false})
	expect("put policy", status, http.StatusOK)
	status, _ = api(bootstrap, "PUT", "/api/v1/policies/console:release", map[string]any{"deciders": []string{"alice"}, "approvals": 1, "self_approval": true, "extra": 1})
	expect("put policy unknown field", status, http.StatusBadRequest)
	status, _ = api(bootstrap, "GET", "/api/v1/policies/console:release", nil)
	expect("get policy", status, http.StatusOK)
	status, _ = api(bootstrap, "GET", "/api/v1/policies/nonsense", nil)
	expect("get policy bad key", status, http.StatusBadRequest)
	status, _ = api(bootstrap, "GET", "/api/v1/policies", nil)
	expect("policies", status, http.StatusOK)
	rel := propose("release", "alice")
	status, pending := api(bootstrap, "POST", "/api/v1/proposals/"+rel+"/approve", map[string]string{"user": "bob"})
	if status != http.StatusOK || pending["state"] != "pending" {
		t.Errorf("first of two approvals: %d %v", status, pending)
	}
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+rel+"/withdraw", map[string]string{"user": "bob"})
	expect("withdraw", status, http.StatusOK)
	status, _ = api(bootstrap, "POST", "/api/v1/proposals/"+rel+"/withdraw", map[string]string{"user": "bob"})
	expect("withdraw again", status, http.StatusConflict)

	// Tokens: none, unknown, and one without the scope.
	status, _ = api("", "GET", "/api/v1/boards", nil)
	expect("no token", status, http.StatusUnauthorized)
	status, _ = api("nope", "GET", "/api/v1/policies", nil)
	expect("unknown token", status, http.StatusUnauthorized)
	reader, code := b.token(t, "create", "reader", "--scopes", "read")
	if code != 0 {
		t.Fatalf("token create: %d", code)
	}
	status, _ = api(reader, "PATCH", fmt.Sprint("/api/v1/cards/", free["id"]), map[string]any{"user": "alice", "status": "Done"})
	expect("read token writes", status, http.StatusForbidden)
	status, _ = api(reader, "GET", "/api/v1/channels", nil)
	expect("read token reads", status, http.StatusOK)

	// The metrics need the admin token; the public routes none.
	status, _ = contractCall(t, ct, bootstrap, "GET", b.url+"/metrics", "", nil, nil)
	expect("metrics", status, http.StatusOK)
	expect("metrics without a token", get("/metrics"), http.StatusUnauthorized)
	for _, p := range []string{"/healthz", "/readyz", "/api/v1/openapi.json", "/", "/c/general", "/static/app.js",
		"/boards/" + boardID, "/board-static/board.js", "/proposals/" + pid} {
		expect(p, get(p), http.StatusOK)
	}
	expect("board page", get("/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa"), http.StatusNotFound)

	// The callbacks heard the hook's proposal, its board and the card
	// changes, each as openapi.json's OutboundEvent says.
	until(t, "card.changed", func() bool { return strings.Contains(strings.Join(rc.types(), " "), "card.changed") })
	event := loadContract(t).doc.Components.Schemas["OutboundEvent"].Value
	rc.mu.Lock()
	got := append(rc.got[:0:0], rc.got...)
	rc.mu.Unlock()
	for _, p := range got {
		js, _ := json.Marshal(p)
		var v any
		_ = json.Unmarshal(js, &v)
		if err := event.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors(), openapi3.SetSchemaErrorMessageCustomizer(oneLine)); err != nil {
			t.Errorf("callback %s does not match OutboundEvent: %v", p.Type, describe(err))
		}
	}

	for _, want := range []string{
		"deliverHook 202", "deliverHook 400", "deliverHook 401", "deliverHook 404",
		"postMessage 202", "postMessage 400", "getRequest 200", "getRequest 404",
		"getProposal 200", "approveProposal 200", "approveProposal 403", "approveProposal 409",
		"cancelProposal 200", "cancelProposal 404", "reviseProposal 202", "proposeAgain 409",
		"withdrawApproval 200", "withdrawApproval 409",
		"listBoards 200", "listBoards 400", "listBoards 401", "getBoard 200", "getBoard 404", "getBoardStatus 200",
		"streamBoardEvents 200", "streamChannelEvents 200", "listChannels 200",
		"patchCard 200", "patchCard 400", "patchCard 403", "patchCard 404", "patchCard 409", "patchCard 415",
		"putPolicy 200", "putPolicy 400", "getPolicy 200", "getPolicy 400", "listPolicies 200", "listPolicies 401",
		"healthz 200", "readyz 200", "getOpenAPI 200", "metrics 200", "metrics 401", "consolePage 200", "consoleChannelPage 200",
		"consoleStatic 200", "boardPage 200", "boardPage 404", "boardScript 200", "proposalPage 200",
	} {
		op, code, _ := strings.Cut(want, " ")
		var n int
		_, _ = fmt.Sscan(code, &n)
		if !ct.saw(op, n) {
			t.Errorf("the flows never saw %s answer %s", op, code)
		}
	}
}

// oneLine says a schema error without the schema and the value.
func oneLine(err *openapi3.SchemaError) string {
	return "/" + strings.Join(err.JSONPointer(), "/") + ": " + err.Reason
}

// TestHookAnswersAreDistinguishable: read as written (open to fields
// added later), the document still lets a hook's 202 match exactly one of
// Accepted and Ignored.
func TestHookAnswersAreDistinguishable(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	answer := doc.Paths.Value("/api/v1/hooks/{name}").Post.Responses.Status(http.StatusAccepted).Value.Content.Get("application/json").Schema.Value
	for _, body := range []string{`{"request_id":"r_1"}`, `{"request_id":"r_1","duplicate":true}`, `{"status":"ignored"}`} {
		var v any
		_ = json.Unmarshal([]byte(body), &v)
		if err := answer.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s does not match exactly one shape: %v", body, err)
		}
	}
	var both any
	_ = json.Unmarshal([]byte(`{"request_id":"r_1","status":"ignored"}`), &both)
	if answer.VisitJSON(both, openapi3.EnableJSONSchema2020()) == nil {
		t.Error("an answer with both request_id and status matches")
	}
}

// TestContractCatchesMismatches: the validating client fails a test for
// an answer with an undeclared status, an undescribed field, a missing
// required one, and a request the document refuses that was taken.
func TestContractCatchesMismatches(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	for _, tc := range []struct {
		name, method, path, reqBody string
		status                      int
		respBody                    string
		want                        string
	}{
		{"undeclared status", "GET", "/api/v1/boards", "", http.StatusTeapot, `{"error":"x"}`, "status is not supported"},
		{"undescribed field", "GET", "/healthz", "", 200, `{"status":"ok","uptime":3}`, "uptime"},
		{"missing field", "GET", "/api/v1/requests/r_1", "", 200, `{"id":"r_1"}`, "state"},
		{"accepted and ignored at once", "POST", "/api/v1/hooks/x", `{}`, 202, `{"request_id":"r_1","status":"ignored"}`, "oneOf"},
		{"refused request taken", "POST", "/api/v1/channels/general/messages", `{"user":"a","text":"t","admin":true}`, 202, `{"request_id":"r_1"}`, "refuses this request"},
		{"unknown route answered", "GET", "/api/v1/nope", "", 200, `{}`, "not in openapi.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://bobnet.test"+tc.path, strings.NewReader(tc.reqBody))
			req.Header.Set("Content-Type", "application/json")
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(tc.respBody))}
			_, err := c.check(req, []byte(tc.reqBody), resp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
