package web

import "net/http"

// noticePage is parsed when first drawn (lazyTemplate): most servers
// never show one.
var noticePage = lazyTemplate("notice.html.tmpl", nil)

// noticePolicy keeps a notice out of caches: it may carry a one-time
// link. Its Content-Security-Policy is the site's (SecurityHeaders).
var noticePolicy = policy{Cache: "no-store"}

// Notice is a page that says one thing, with at most one link: the Slack
// install page and what an install ended in.
type Notice struct {
	Title, Text, Link, LinkText string
}

// WriteNotice answers with n as a page, with status.
func WriteNotice(w http.ResponseWriter, status int, n Notice) {
	page, err := draw(noticePage(), n)
	if err != nil {
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	_ = writePage(w, status, noticePolicy, page)
}
