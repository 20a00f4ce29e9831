package matrix

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// message is one notice as Matrix carries it: a plain body for clients
// and notifications, and the same in HTML.
type message struct {
	Plain string
	HTML  string
}

// linkish matches what clients turn into links or pings on their own even
// in escaped text: a scheme's "://", "www.", a dot between a name and a
// top-level domain, and the @room keyword.
var linkish = &lazy[*regexp.Regexp]{build: func() *regexp.Regexp { return regexp.MustCompile(`(?i)://|www\.|[a-z0-9]\.[a-z]|@room`) }}

// inert makes model text safe to show on top of HTML escaping: clients
// linkify URLs and bare domains in text and notify everyone on "@room", so
// a zero-width space or word joiner is slipped into each such spot. The
// text reads the same; nothing in it is live.
func inert(s string) string {
	return linkish.get().ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case m == "://":
			return ":\u200b//"
		case strings.EqualFold(m, "@room"):
			return "@\u2060" + m[1:]
		case strings.HasSuffix(strings.ToLower(m), "www."):
			return m[:3] + "\u200b."
		default: // x.y
			return m[:2] + "\u200b" + m[2:]
		}
	})
}

// Every piece of model text goes through inert and then html/template's
// escaping; the only links are BobNet's own URLs. The templates are
// parsed when first used: a server without Matrix never does.
var (
	previewHTML = &lazy[*template.Template]{build: func() *template.Template {
		return parseTemplate("preview",
			`<h4>📋 {{inert .Title}}</h4>`+
				`{{if .Goal}}<p><b>Goal:</b> {{inert .Goal}}</p>{{end}}`+
				`<p>{{.Cards}} cards, {{.Links}} dependencies · v{{.Version}} requested by {{inert .Requester}}</p>`+
				`{{if .Quorum}}<p>🗳️ {{inert .Quorum}}</p>{{end}}`+
				`{{if .Changes}}<p><i>{{inert .Changes}}</i></p>{{end}}`+
				`{{if .CardList}}<ol>{{range .CardList}}<li><b>{{inert .Title}}</b> — {{if .Assignee}}{{inert .Assignee}}{{else}}⚠️ Unassigned{{end}}{{if .Unknown}} (unknown profile){{end}} · {{inert .Status}} · {{inert .Mode}}`+
				`{{if .Criteria}}<ul>{{range .Criteria}}<li>{{inert .}}</li>{{end}}</ul>{{end}}`+
				`{{if .DependsOn}}<br><i>Depends on:</i> {{inert .DependsOn}}{{end}}</li>{{end}}</ol>{{end}}`+
				`{{if .Schedule}}<p>⏰ {{inert .Schedule}}</p>{{end}}`+
				`{{if .Assumptions}}<p><i>Assumptions:</i> {{inert .Assumptions}}</p>{{end}}`+
				`{{if .Warnings}}<p>⚠️ {{inert .Warnings}}</p>{{end}}`+
				`{{if .State}}<p><b>{{.State}}</b>{{if .BoardURL}} — <a href="{{.BoardURL}}">Open the board</a>{{end}}</p>`+
				`{{else}}<p>React ✅ to approve, ✏️ to revise, ❌ to cancel — or reply in this thread with <code>!approve</code>, <code>!revise &lt;what to change&gt;</code> or <code>!cancel</code>. Nothing changes until someone approves. Expires {{.Expires}}.</p>`+
				`{{if .ProposalURL}}<p><a href="{{.ProposalURL}}">Read the whole proposal</a></p>{{end}}{{end}}`)
	}}
	replyHTML = &lazy[*template.Template]{build: func() *template.Template {
		return parseTemplate("reply",
			`{{if .Warn}}⚠️ {{end}}{{inert .Text}}`+
				`{{if .Questions}}<ul>{{range .Questions}}<li>{{inert .}}</li>{{end}}</ul>{{end}}`+
				`{{if .BoardURL}}<br><a href="{{.BoardURL}}">Open the board</a>{{end}}`)
	}}
	statusHTML = &lazy[*template.Template]{build: func() *template.Template {
		return parseTemplate("status",
			`<h4>{{inert .Name}}</h4><p>{{.Counts}} — <a href="{{.URL}}">Open the board</a></p>`+
				`<p><b>Ready to start:</b>{{if not .Ready}} none{{end}}</p>{{if .Ready}}<ul>{{range .Ready}}<li>{{inert .}}</li>{{end}}</ul>{{end}}`+
				`<p><b>Waiting on dependencies:</b>{{if not .Blocked}} none{{end}}</p>{{if .Blocked}}<ul>{{range .Blocked}}<li>{{inert .}}</li>{{end}}</ul>{{end}}`)
	}}
)

// parseTemplate parses one of the notices' templates, with inert.
func parseTemplate(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(template.FuncMap{"inert": inert}).Parse(text))
}

type cardView struct {
	Title, Assignee, Status, Mode, DependsOn string
	Unknown                                  bool
	Criteria                                 []string
}

type previewView struct {
	Title, Goal, Requester, Quorum, Changes, Assumptions, Warnings, Schedule string
	Cards, Links, Version                                                    int
	CardList                                                                 []cardView
	Expires, ProposalURL                                                     string
	State                                                                    string // set once decided
	BoardURL                                                                 string
}

func boardTitle(p board.Proposal) (title, goal string) {
	title = "Proposed plan"
	for _, a := range p.Plan.Actions {
		if a.Board != nil {
			title, goal = a.Board.Name, a.Board.Goal
		} else if a.Type.NeedsTargetBoard() && title == "Proposed plan" {
			title = "Cards for this room's board"
		}
	}
	return title, goal
}

func cardViews(p board.Proposal) []cardView {
	warned := map[string]bool{}
	for _, w := range p.Warnings {
		warned[w.Path] = true
	}
	var out []cardView
	for ai, a := range p.Plan.Actions {
		titles := map[string]string{}
		for _, c := range a.Cards {
			titles[c.TempID] = c.Title
		}
		deps := map[string][]string{}
		for _, l := range a.Links {
			deps[l.Card] = append(deps[l.Card], titles[l.DependsOn])
		}
		for ci, c := range a.Cards {
			d := deps[c.TempID]
			for _, dep := range c.DependsOn {
				d = append(d, titles[dep])
			}
			out = append(out, cardView{
				Title: c.Title, Assignee: c.Assignee, Status: c.Status, Mode: c.WorkspaceMode,
				Unknown:   c.Assignee != "" && warned[fmt.Sprintf("actions[%d].cards[%d].assignee", ai, ci)],
				Criteria:  c.AcceptanceCriteria,
				DependsOn: strings.Join(d, ", "),
			})
		}
	}
	return out
}

func changesLine(p board.Proposal) string {
	c := p.Changes
	if c == nil {
		return ""
	}
	parts := []string{fmt.Sprintf("Changed since v%d: %s", p.Version-1, c.Summary())}
	if len(c.Added) > 0 {
		parts = append(parts, "added: "+strings.Join(c.Added, ", "))
	}
	if len(c.Removed) > 0 {
		parts = append(parts, "removed: "+strings.Join(c.Removed, ", "))
	}
	for _, r := range c.Retitled {
		parts = append(parts, "retitled: "+r.From+" → "+r.To)
	}
	for _, r := range c.Reassigned {
		parts = append(parts, "reassigned "+r.Subject+": "+r.From+" → "+r.To)
	}
	return strings.Join(parts, " · ")
}

func warningsLine(ws []plan.Issue) string {
	var out []string
	for _, w := range ws {
		if !strings.HasSuffix(w.Path, ".assignee") {
			out = append(out, w.Path+": "+w.Message)
		}
	}
	return strings.Join(out, " · ")
}

// quorumLine is a pending preview's line about approvals, as Slack's
// preview shows it, with how to withdraw an approval. Empty for a
// proposal that needs one approval under the built-in rule. The caller
// escapes it.
func quorumLine(p board.Proposal) string {
	s := bot.QuorumText(p, matrixDecider)
	if s != "" && p.Quorum.Needed > 1 {
		s += " · reply !withdraw in this thread to take back your approval before the last one arrives"
	}
	return s
}

// matrixDecider renders a Matrix-specific decider: a power level, or a
// user as their id.
func matrixDecider(d string) string {
	if level, ok := strings.CutPrefix(d, board.DeciderMatrixPower); ok {
		return "members at power level " + level + " or above"
	}
	return d
}

// decidedLine says what became of a proposal, for the edited preview.
func decidedLine(p board.Proposal) string {
	switch p.State {
	case board.ProposalApproved:
		return "✅ Approved by " + inert(p.DecidedBy)
	case board.ProposalCancelled:
		if p.DecidedBy == "" {
			return "🚫 Cancelled"
		}
		return "🚫 Cancelled by " + inert(p.DecidedBy) + reasonSuffix(p) // remind.go
	case board.ProposalSuperseded:
		return fmt.Sprintf("🔄 Superseded by v%d", p.Version+1)
	case board.ProposalExpired:
		return "⌛ Expired — nothing was created. Reply !again in this thread to propose it again."
	}
	return "State: " + string(p.State)
}

// renderPreview draws a proposal: pending with how to decide, or decided
// with what happened (then without the card list, which the board shows).
func renderPreview(p board.Proposal, publicURL string) message {
	title, goal := boardTitle(p)
	st := p.Plan.Stats()
	v := previewView{
		Title: title, Goal: goal, Requester: p.RequestedBy, Cards: st.Cards, Links: st.Links, Version: p.Version,
		Changes: changesLine(p), Expires: p.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"),
	}
	if p.State == board.ProposalPending || p.State == "" {
		v.Quorum = quorumLine(p)
		v.CardList = cardViews(p)
		v.Assumptions = strings.Join(p.Plan.Assumptions, " · ")
		v.Schedule = bot.PlannedScheduleText(p.Plan)
		v.Warnings = warningsLine(p.Warnings)
		if publicURL != "" {
			v.ProposalURL = strings.TrimRight(publicURL, "/") + "/api/v1/proposals/" + string(p.ID)
		}
	} else {
		v.State = decidedLine(p)
		v.BoardURL = p.BoardURL
	}
	var h bytes.Buffer
	if err := previewHTML.get().Execute(&h, v); err != nil {
		// The template is fixed and its data plain strings: this cannot
		// happen short of a programming error.
		panic(err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "📋 %s\n", inert(title))
	if goal != "" {
		fmt.Fprintf(&b, "Goal: %s\n", inert(goal))
	}
	fmt.Fprintf(&b, "%d cards, %d dependencies · v%d requested by %s\n", st.Cards, st.Links, p.Version, inert(p.RequestedBy))
	if v.Quorum != "" {
		b.WriteString(inert(v.Quorum) + "\n")
	}
	if v.Changes != "" {
		b.WriteString(inert(v.Changes) + "\n")
	}
	for i, c := range v.CardList {
		who := c.Assignee
		if who == "" {
			who = "Unassigned"
		}
		fmt.Fprintf(&b, "%d. %s — %s · %s\n", i+1, inert(c.Title), inert(who), inert(c.Status))
	}
	if v.State != "" {
		b.WriteString(v.State)
		if v.BoardURL != "" {
			b.WriteString(" — " + v.BoardURL)
		}
	} else {
		b.WriteString("React ✅ to approve, ✏️ to revise, ❌ to cancel — or reply in this thread with !approve, !revise <what to change> or !cancel.")
	}
	return message{Plain: b.String(), HTML: h.String()}
}

type replyView struct {
	Warn      bool
	Text      string
	Questions []string
	BoardURL  string
}

// renderReply draws a text reply; only BobNet's board link is live.
func renderReply(r board.Reply) message {
	v := replyView{Warn: r.Kind == board.ReplyError || r.Kind == board.ReplySlowDown, Text: r.Text, Questions: r.Questions, BoardURL: r.BoardURL}
	var h bytes.Buffer
	if err := replyHTML.get().Execute(&h, v); err != nil {
		panic(err)
	}
	plain := inert(r.Text)
	if v.Warn {
		plain = "⚠️ " + plain
	}
	for _, q := range r.Questions {
		plain += "\n• " + inert(q)
	}
	if r.BoardURL != "" {
		plain += "\n" + r.BoardURL
	}
	return message{Plain: plain, HTML: h.String()}
}

// statusView is a board's status for !bobnet status.
type statusView struct {
	Name, Counts, URL string
	Ready, Blocked    []string
}

func cardLines(cards []board.Card) []string {
	var out []string
	for i, c := range cards {
		if i == 15 {
			out = append(out, fmt.Sprintf("…and %d more", len(cards)-15))
			break
		}
		who := c.Assignee
		if who == "" {
			who = "Unassigned"
		}
		out = append(out, c.Title+" ("+who+")")
	}
	return out
}

// renderStatus draws a board's cards by status.
func renderStatus(st board.Status, boardURL string) message {
	var counts []string
	for _, s := range board.Statuses {
		counts = append(counts, fmt.Sprintf("%s %d", s, st.Counts[s]))
	}
	v := statusView{Name: st.Board.Name, Counts: strings.Join(counts, " · "), URL: boardURL, Ready: cardLines(st.Ready), Blocked: cardLines(st.Waiting)}
	var h bytes.Buffer
	if err := statusHTML.get().Execute(&h, v); err != nil {
		panic(err)
	}
	plain := inert(v.Name) + "\n" + v.Counts + "\n" + boardURL
	if len(v.Ready) > 0 {
		plain += "\nReady to start: " + inert(strings.Join(v.Ready, "; "))
	}
	if len(v.Blocked) > 0 {
		plain += "\nWaiting on dependencies: " + inert(strings.Join(v.Blocked, "; "))
	}
	return message{Plain: plain, HTML: h.String()}
}

// helpText is what !bobnet help answers: the commands are the engine's
// table of verbs.
func helpText() string {
	return "BobNet turns a request into a board of cards you approve.\n" +
		"• Mention me with what you want planned, e.g. “@bobnet plan our daily research newspaper”, or write !bobnet plan <what>.\n" +
		"• I answer in a thread with a preview. React ✅ to approve, ✏️ to revise, ❌ to cancel, or reply there with a thread command below. Nothing changes until someone approves.\n" +
		"• !bobnet plan this, sent as a reply in a thread, plans from that thread's messages.\n" +
		bot.Verbs.Help(bot.MatrixDialect)
}
