package matrix

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/bobnet/bobnet/bot"
)

// The notices of work in progress: a plan as the model writes it, and a
// run as its cards move. Model text goes through inert and html/template
// as everywhere; the only link is BobNet's edition page.

// maxNoteCards is how many cards one notice lists; the rest are counted.
const maxNoteCards = 40

var (
	draftHTML = &lazy[*template.Template]{build: func() *template.Template {
		return parseTemplate("draft",
			`<h4>📝 Drafting{{if .Title}}: {{inert .Title}}{{else}} a plan{{end}}…</h4>`+
				`<p><i>{{if .Cards}}{{len .Cards}} draft card{{if ne (len .Cards) 1}}s{{end}} so far{{if .More}} (and {{.More}} more){{end}}, not checked yet{{else}}The model is writing the plan{{end}}: the preview replaces this message.</i></p>`+
				`{{if .Cards}}<ol>{{range .Cards}}<li>{{inert .Title}}{{if .Assignee}} — {{inert .Assignee}}{{end}} <i>(draft)</i></li>{{end}}</ol>{{end}}`)
	}}
	progressHTML = &lazy[*template.Template]{build: func() *template.Template {
		return parseTemplate("progress",
			`<h4>{{.Icon}} Run {{.Number}} of {{inert .Board}}</h4>`+
				`<p>{{.Summary}}</p>`+
				`{{if .Cards}}<ul>{{range .Cards}}<li>{{.Icon}} <code>{{inert .Handle}}</code> {{inert .Title}}{{if .Assignee}} — {{inert .Assignee}}{{end}} · {{.Status}}</li>{{end}}</ul>{{end}}`+
				`{{if .More}}<p>…and {{.More}} more cards</p>{{end}}`+
				`{{if .EditionURL}}<p><a href="{{.EditionURL}}">Read the edition</a></p>{{end}}`)
	}}
)

type draftCard struct{ Title, Assignee string }

type draftView struct {
	Title string
	Cards []draftCard
	More  int
}

// renderDraft draws a plan being written: its title once known and each
// card parsed so far, marked as a draft.
func renderDraft(d bot.Draft) message {
	v := draftView{Title: d.Title}
	for i, c := range d.Cards {
		if i == maxNoteCards {
			v.More = len(d.Cards) - maxNoteCards
			break
		}
		v.Cards = append(v.Cards, draftCard{Title: c.Title, Assignee: c.Assignee})
	}
	var h bytes.Buffer
	if err := draftHTML.get().Execute(&h, v); err != nil {
		panic(err) // a fixed template over plain strings
	}
	var b strings.Builder
	if d.Title != "" {
		fmt.Fprintf(&b, "📝 Drafting: %s…\n", inert(d.Title))
	} else {
		b.WriteString("📝 Drafting a plan…\n")
	}
	if len(d.Cards) == 0 {
		b.WriteString("The model is writing the plan: the preview replaces this message.")
	} else {
		fmt.Fprintf(&b, "%d draft card%s so far, not checked yet: the preview replaces this message.", len(d.Cards), plural(len(d.Cards)))
	}
	for i, c := range v.Cards {
		fmt.Fprintf(&b, "\n%d. %s", i+1, inert(c.Title))
		if c.Assignee != "" {
			b.WriteString(" — " + inert(c.Assignee))
		}
		b.WriteString(" (draft)")
	}
	return message{Plain: b.String(), HTML: h.String()}
}

// taskIcon shows a card's status in a run's notice, and says it in
// words, for clients without icons.
func taskIcon(st bot.TaskStatus) (icon, words string) {
	switch st {
	case bot.TaskInProgress:
		return "🔄", "in progress"
	case bot.TaskComplete:
		return "✔️", "complete"
	case bot.TaskError:
		return "⚠️", "error"
	}
	return "⏳", "pending"
}

type progressCard struct {
	Icon, Handle, Title, Assignee, Status string
}

type progressView struct {
	Icon, Board, Summary, EditionURL string
	Number, More                     int
	Cards                            []progressCard
}

// renderRunProgress draws a run as it stands: each card with its status
// (bot.TaskStatusOf), how many are done, and at the end how the run ended
// and the edition link.
func renderRunProgress(p bot.RunProgress) message {
	v := progressView{Board: p.BoardTitle, Number: p.Run.Number, EditionURL: p.EditionURL, Icon: "▶️"}
	counts := map[bot.TaskStatus]int{}
	for i, c := range p.Run.Cards {
		st := bot.TaskStatusOf(c.Status, c.Error != "")
		counts[st]++
		if i >= maxNoteCards {
			v.More++
			continue
		}
		icon, words := taskIcon(st)
		v.Cards = append(v.Cards, progressCard{Icon: icon, Handle: c.Handle, Title: c.Title, Assignee: c.Assignee, Status: words})
	}
	v.Summary = fmt.Sprintf("%d of %d cards complete", counts[bot.TaskComplete], len(p.Run.Cards))
	if n := counts[bot.TaskInProgress]; n > 0 {
		v.Summary += fmt.Sprintf(" · %d in progress", n)
	}
	if n := counts[bot.TaskError]; n > 0 {
		v.Summary += fmt.Sprintf(" · %d failed", n)
	}
	if p.Ended {
		v.Icon = "🏁"
		v.Summary += " · run " + ended(p)
	}
	var h bytes.Buffer
	if err := progressHTML.get().Execute(&h, v); err != nil {
		panic(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s Run %d of %s\n%s", v.Icon, v.Number, inert(v.Board), v.Summary)
	for _, c := range v.Cards {
		fmt.Fprintf(&b, "\n%s %s %s", c.Icon, inert(c.Handle), inert(c.Title))
		if c.Assignee != "" {
			b.WriteString(" — " + inert(c.Assignee))
		}
		b.WriteString(" · " + c.Status)
	}
	if v.More > 0 {
		fmt.Fprintf(&b, "\n…and %d more cards", v.More)
	}
	if v.EditionURL != "" {
		b.WriteString("\n" + v.EditionURL)
	}
	return message{Plain: b.String(), HTML: h.String()}
}

// ended says how a run ended, in a few words.
func ended(p bot.RunProgress) string {
	s := p.Run.State
	if s == "" {
		s = "ended"
	}
	if p.Run.Reason != "" {
		s += " (" + p.Run.Reason + ")"
	}
	return inert(s)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
