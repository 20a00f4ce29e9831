package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSlackStubNotesOnlyTheFinalPreview(t *testing.T) {
	s := newSlackStub()
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(method, contentType, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/"+method, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out["ok"] != true {
			t.Fatalf("%s: %v %v; want ok", method, out, err)
		}
		return out
	}
	form := "application/x-www-form-urlencoded"
	// A reply without buttons, a preview's draft, then the preview.
	post("chat.postMessage", form, url.Values{"channel": {"C1"}, "text": {"on it"}}.Encode())
	if _, ok := s.previewAt("C1"); ok {
		t.Fatal("a message without the Approve button counted as the preview")
	}
	out := post("chat.postMessage", form, url.Values{"channel": {"C1"}, "blocks": {`[{"type":"actions","elements":[{"action_id":"bobnet_approve"}]}]`}}.Encode())
	if out["ts"] == "" || out["channel"] != "C1" {
		t.Errorf("chat.postMessage answer %v; want the channel and a ts", out)
	}
	first, ok := s.previewAt("C1")
	if !ok {
		t.Fatal("the preview was not noted")
	}
	time.Sleep(2 * time.Millisecond)
	post("chat.update", "application/json", `{"channel":"C1","blocks":[{"action_id":"bobnet_approve"}]}`)
	if again, _ := s.previewAt("C1"); !again.Equal(first) {
		t.Error("a later update moved the preview's arrival")
	}
	post("chat.stopStream", "application/json; charset=utf-8", `{"channel":"C2","blocks":[{"action_id":"bobnet_approve"}]}`)
	if _, ok := s.previewAt("C2"); !ok {
		t.Error("a stream's end carrying the preview (JSON) was not noted")
	}
	// Calls that cannot carry a preview do not count, and unknown methods are ok.
	post("views.publish", form, url.Values{"channel": {"C3"}, "view": {"bobnet_approve"}}.Encode())
	post("some.newMethod", form, "")
	if got := s.waitPreviews([]string{"C1", "C2", "C3"}, 20*time.Millisecond); len(got) != 2 {
		t.Errorf("previews = %v; want C1 and C2", got)
	}
	if auth := post("auth.test", form, ""); auth["user_id"] == "" {
		t.Errorf("auth.test = %v; want a bot user", auth)
	}
}
