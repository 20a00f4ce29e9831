package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bobnet/bobnet/web"
)

// TestNoticeEscapesAndIsNotCached: a notice is the one page it was
// before it moved here, byte for byte, with its text escaped, its status,
// and no caching.
func TestNoticeEscapesAndIsNotCached(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	web.WriteNotice(rec, http.StatusBadRequest, web.Notice{Title: "Not <installed>", Text: "Slack said a&b.", Link: "/slack/install?x=1&y=2", LinkText: "Again"})
	want := `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Not &lt;installed&gt;</title></head>
<body><main>
<h1>Not &lt;installed&gt;</h1>
<p>Slack said a&amp;b.</p>
<p><a href="/slack/install?x=1&amp;y=2">Again</a></p>
</main></body></html>
`
	if rec.Code != http.StatusBadRequest || rec.Body.String() != want || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %v\n%s", rec.Code, rec.Header(), rec.Body)
	}
	rec = httptest.NewRecorder()
	web.WriteNotice(rec, http.StatusOK, web.Notice{Title: "Installed", Text: "Done."})
	if rec.Code != http.StatusOK || rec.Body.String() != "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Installed</title></head>\n<body><main>\n<h1>Installed</h1>\n<p>Done.</p>\n\n</main></body></html>\n" {
		t.Fatalf("%d\n%q", rec.Code, rec.Body)
	}
}
