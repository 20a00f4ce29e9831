package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// boardChanges lists what a plan's update_card and add_links actions would
// change on the target board, for the preview. A board it cannot read
// gives no list; the plan was validated against it already.
func (e *Engine) boardChanges(ctx context.Context, env plan.Envelope, target board.ID) []board.BoardChange {
	hasChanges := false
	for _, a := range env.Actions {
		hasChanges = hasChanges || a.Type == plan.ActionUpdateCard || a.Type == plan.ActionAddLinks
	}
	cs, err := e.cardStore()
	if !hasChanges || target == "" || err != nil {
		return nil
	}
	_, cards, err := cs.Board(ctx, target)
	if err != nil {
		e.logger.Warn("read board for the preview", "board", target, "err", err)
		return nil
	}
	titles := map[string]string{} // temp id -> title, for new cards
	for _, a := range env.Actions {
		for _, c := range a.Cards {
			titles[c.TempID] = c.Title
		}
	}
	find := func(ref string) (board.Card, bool) {
		for _, c := range cards {
			if strings.EqualFold(c.Handle, ref) || string(c.ID) == ref {
				return c, true
			}
		}
		return board.Card{}, false
	}
	name := func(ref string) (string, string) {
		if c, ok := find(ref); ok {
			return c.Handle, c.Title
		}
		return ref, titles[ref] + " (new)"
	}
	var out []board.BoardChange
	for _, a := range env.Actions {
		switch a.Type {
		case plan.ActionUpdateCard:
			c, ok := find(a.Card)
			if !ok {
				continue
			}
			for _, f := range []struct {
				field    string
				now      string
				proposed *string
			}{{"status", c.Status, a.Status}, {"assignee", orUnassigned(c.Assignee), a.Assignee}, {"title", c.Title, a.Title}, {"body", c.Body, a.Body}} {
				if f.proposed == nil {
					continue
				}
				to := *f.proposed
				if f.field == "assignee" {
					to = orUnassigned(to)
				}
				if to != f.now {
					out = append(out, board.BoardChange{Card: c.Handle, Title: c.Title, Field: f.field, From: f.now, To: to})
				}
			}
			if a.Status != nil {
				c.Status = *a.Status // later actions see it moved
				i := slices.IndexFunc(cards, func(x board.Card) bool { return x.ID == c.ID })
				cards[i] = c
			}
		case plan.ActionAddLinks:
			for _, l := range a.Links {
				card, title := name(l.Card)
				dep, depTitle := name(l.DependsOn)
				out = append(out, board.BoardChange{Card: card, Title: title, Field: "depends_on", To: dep + " “" + depTitle + "”"})
			}
		}
	}
	return out
}

// approvalText is the reply that tells the thread a proposal was approved
// and what it did: the board it created, or the changes to the current one.
func approvalText(user string, now time.Time, p board.Proposal, res board.ExecResult) string {
	var did []string
	if b := p.Plan.NewBoard(); b != nil {
		did = append(did, fmt.Sprintf("board “%s” created with %d cards and %d links", b.Name, res.Cards, res.Links))
	} else {
		if res.Cards > 0 {
			did = append(did, fmt.Sprintf("%d cards added", res.Cards))
		}
		if res.Updated > 0 {
			did = append(did, fmt.Sprintf("%d cards changed", res.Updated))
		}
		if res.Links > 0 {
			did = append(did, fmt.Sprintf("%d links added", res.Links))
		}
		if len(did) == 0 {
			did = append(did, "the board already was as proposed; nothing changed")
		}
	}
	return fmt.Sprintf("Approved by %s at %s: %s (proposal %s, v%d).", user, now.UTC().Format("15:04 UTC"), strings.Join(did, ", "), p.ID, p.Version)
}

// updatesDiff lists the card changes (update_card, add_links) one version
// of a plan proposes that the other does not.
func updatesDiff(old, cur plan.Envelope) (added, removed []string) {
	lines := func(e plan.Envelope) []string {
		var out []string
		for _, a := range e.Actions {
			switch a.Type {
			case plan.ActionUpdateCard:
				out = append(out, a.String())
			case plan.ActionAddLinks:
				for _, l := range a.Links {
					out = append(out, "link "+l.Card+" → "+l.DependsOn)
				}
			}
		}
		return out
	}
	was, now := lines(old), lines(cur)
	for _, l := range now {
		if !slices.Contains(was, l) {
			added = append(added, l)
		}
	}
	for _, l := range was {
		if !slices.Contains(now, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}
