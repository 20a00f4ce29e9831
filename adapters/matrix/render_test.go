package matrix

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// hostile is model text that would be live if rendered as is.
var hostile = []string{
	`<script>alert(1)</script>`,
	`<a href="https://evil.example/login">click</a>`,
	`<img src=x onerror=alert(1)>`,
	`@room look at this`,
	`visit https://evil.example/x or www.evil.example or evil.example`,
	`<a href="https://matrix.to/#/@alice:localhost">Alice</a>`,
	`"><b onmouseover=alert(1)>`,
}

// tag is any real tag: escaped model text holds &lt;, never <.
var tag = regexp.MustCompile(`<(/?)([a-zA-Z0-9]+)([^>]*)>`)

// AssertInert fails when html or plain holds anything live: a tag outside
// the preview's own few, an attribute other than the href of BobNet's own
// links, or text that clients would turn into a link or a room ping.
func AssertInert(t *testing.T, html, plain, publicURL string) {
	t.Helper()
	allowed := map[string]bool{"h4": true, "p": true, "b": true, "i": true, "ol": true, "ul": true, "li": true, "br": true, "code": true, "a": true}
	for _, m := range tag.FindAllStringSubmatch(html, -1) {
		name, attrs := strings.ToLower(m[2]), strings.TrimSpace(m[3])
		if !allowed[name] {
			t.Errorf("HTML has a <%s> tag: %s", name, m[0])
		}
		if name == "a" && m[1] == "" {
			if !strings.HasPrefix(attrs, `href="`+publicURL+`/`) || strings.Count(attrs, "=") != 1 {
				t.Errorf("a link that is not BobNet's: %s", m[0])
			}
		} else if attrs != "" {
			t.Errorf("HTML tag with attributes: %s", m[0])
		}
	}
	for _, live := range []string{"https://evil", "www.evil", "evil.example", "@room", "matrix.to"} {
		if strings.Contains(strings.ToLower(html), live) {
			t.Errorf("HTML contains %q, which clients make live:\n%s", live, html)
		}
		if strings.Contains(strings.ToLower(plain), live) {
			t.Errorf("plain body contains %q, which clients make live:\n%s", live, plain)
		}
	}
}

// HostilePlan is a valid plan whose every text is hostile.
func HostilePlan() plan.Envelope {
	var cards []plan.CardDraft
	for i, h := range hostile {
		cards = append(cards, plan.CardDraft{
			TempID: string(rune('a' + i)), Title: h, Body: h, Assignee: h, Status: "Backlog", WorkspaceMode: "Direct",
			AcceptanceCriteria: []string{h},
		})
	}
	return plan.Envelope{
		Kind: plan.KindProposeActions, Answer: strings.Join(hostile, " "), Assumptions: hostile,
		Actions: []plan.Action{{
			Type:  plan.ActionCreateBoardWithCards,
			Board: &plan.BoardDraft{Name: hostile[0], Goal: strings.Join(hostile, " ")},
			Cards: cards,
			Links: []plan.Link{{Card: "a", DependsOn: "b"}},
		}},
	}
}

func TestRenderKeepsModelTextInert(t *testing.T) {
	t.Parallel()
	const public = "https://bobnet.example.com"
	p := board.Proposal{
		ID: "p_x", Version: 2, Thread: board.Thread{}, RequestedBy: "@mallory:localhost <b>", Plan: HostilePlan(),
		Warnings: []plan.Issue{{Path: hostile[1], Message: hostile[4]}}, State: board.ProposalPending,
		ExpiresAt: time.Unix(0, 0), Changes: &board.Changes{Added: hostile, Retitled: []board.Change{{From: hostile[0], To: hostile[1]}}},
	}
	cases := map[string]message{"pending preview": renderPreview(p, public)}
	for _, st := range []board.ProposalState{board.ProposalApproved, board.ProposalCancelled, board.ProposalExpired, board.ProposalSuperseded} {
		d := p
		d.State, d.DecidedBy, d.BoardURL = st, hostile[3], public+"/boards/b_x"
		cases[string(st)+" preview"] = renderPreview(d, public)
	}
	cases["reply"] = renderReply(board.Reply{Kind: board.ReplyClarify, Text: strings.Join(hostile, "\n"), Questions: hostile, BoardURL: public + "/boards/b_x"})
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			AssertInert(t, m.HTML, m.Plain, public)
			if !strings.Contains(m.HTML, "&lt;script&gt;") && name != "superseded preview" {
				t.Errorf("the hostile text is not shown escaped:\n%s", m.HTML)
			}
		})
	}
	if !strings.Contains(cases["pending preview"].HTML, `<a href="`+public+`/api/v1/proposals/p_x">`) {
		t.Errorf("the preview lost BobNet's own link:\n%s", cases["pending preview"].HTML)
	}
}

func TestInert(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://x.io/a":       "https:\u200b//x.\u200bio/a",
		"ping @room now":       "ping @\u2060room now",
		"see www.example.com":  "see www\u200b.example.\u200bcom",
		"version 1.2, e.g. it": "version 1.2, e.\u200bg. it",
		"plain words":          "plain words",
	} {
		if got := inert(in); got != want {
			t.Errorf("inert(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPreviewQuorumLine(t *testing.T) {
	t.Parallel()
	const public = "https://bobnet.example.com"
	p := board.Proposal{
		ID: "p_q", Version: 1, RequestedBy: "@alice:localhost", Plan: HostilePlan(), State: board.ProposalPending, ExpiresAt: time.Unix(0, 0),
		Quorum: &board.Quorum{Key: "matrix:!news:localhost", Needed: 2, Approvals: []string{"@bob:localhost"},
			Policy: board.Policy{Deciders: []string{"@bob:localhost", hostile[0], "matrix_power:50"}, Approvals: 2}},
	}
	m := renderPreview(p, public)
	AssertInert(t, m.HTML, m.Plain, public)
	for _, want := range []string{"1 of 2 approvals: @bob:localhost", "decided under policy matrix:!news:localhost by @bob:localhost, &lt;script&gt;", "members at power level 50 or above", "the requester&#39;s own approval does not count"} {
		if !strings.Contains(m.HTML, want) {
			t.Errorf("the preview lacks %q:\n%s", want, m.HTML)
		}
	}
	if !strings.Contains(m.Plain, "1 of 2 approvals: @bob:localhost ·") {
		t.Errorf("the plain preview lacks the count:\n%s", m.Plain)
	}
	// One approval under the built-in rule says nothing; a decided
	// preview shows the outcome instead.
	p.Quorum = &board.Quorum{Key: bot.BuiltinPolicyKey, Needed: 1, Policy: board.Policy{Deciders: []string{"requester"}, Approvals: 1, SelfApproval: true}}
	if m := renderPreview(p, public); strings.Contains(m.Plain, "approvals") || strings.Contains(m.Plain, "decided under") {
		t.Errorf("a one-approval built-in preview shows a quorum:\n%s", m.Plain)
	}
}
