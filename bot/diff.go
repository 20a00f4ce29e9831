package bot

import (
	"sort"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// Diff says what changed from one version of a plan to the next, so a
// revised preview can show it. Cards are matched by temp id first, then by
// title, since models often renumber temp ids when they rewrite a plan.
func Diff(old, cur plan.Envelope) *board.Changes {
	c := &board.Changes{Added: []string{}, Removed: []string{}, Retitled: []board.Change{}, Reassigned: []board.Change{}, LinksAdded: []string{}, LinksRemoved: []string{}}
	oldCards, curCards := cardsOf(old), cardsOf(cur)
	match := map[string]string{} // cur temp id -> old temp id
	used := map[string]bool{}
	for id := range curCards {
		if _, ok := oldCards[id]; ok {
			match[id], used[id] = id, true
		}
	}
	oldByTitle := map[string]string{}
	for id, card := range oldCards {
		if !used[id] {
			oldByTitle[card.Title] = id
		}
	}
	for id, card := range curCards {
		if _, ok := match[id]; ok {
			continue
		}
		if oid, ok := oldByTitle[card.Title]; ok && !used[oid] {
			match[id], used[oid] = oid, true
		}
	}
	for _, id := range sortedKeys(curCards) {
		card := curCards[id]
		oid, ok := match[id]
		if !ok {
			c.Added = append(c.Added, card.Title)
			continue
		}
		prev := oldCards[oid]
		if prev.Title != card.Title {
			c.Retitled = append(c.Retitled, board.Change{From: prev.Title, To: card.Title})
		}
		if prev.Assignee != card.Assignee {
			c.Reassigned = append(c.Reassigned, board.Change{Subject: card.Title, From: orUnassigned(prev.Assignee), To: orUnassigned(card.Assignee)})
		}
	}
	for _, id := range sortedKeys(oldCards) {
		if !used[id] {
			c.Removed = append(c.Removed, oldCards[id].Title)
		}
	}
	// Links compare by the titles of their ends, in the new version's terms.
	title := func(cards map[string]plan.CardDraft, id string) string { return cards[id].Title }
	oldLinks := map[string]bool{}
	for _, l := range linksOf(old) {
		oldLinks[title(oldCards, l.Card)+" → "+title(oldCards, l.DependsOn)] = true
	}
	curLinks := map[string]bool{}
	for _, l := range linksOf(cur) {
		a, b := l.Card, l.DependsOn
		name := title(curCards, a) + " → " + title(curCards, b)
		if oa, ok := match[a]; ok {
			if ob, ok := match[b]; ok {
				// Same cards as before under possibly new titles.
				name = title(oldCards, oa) + " → " + title(oldCards, ob)
				curLinks[name] = true
				if !oldLinks[name] {
					c.LinksAdded = append(c.LinksAdded, title(curCards, a)+" → "+title(curCards, b))
				}
				continue
			}
		}
		curLinks[name] = true
		c.LinksAdded = append(c.LinksAdded, name)
	}
	for name := range oldLinks {
		if !curLinks[name] {
			c.LinksRemoved = append(c.LinksRemoved, name)
		}
	}
	sort.Strings(c.LinksAdded)
	sort.Strings(c.LinksRemoved)
	c.UpdatesAdded, c.UpdatesRemoved = updatesDiff(old, cur)
	ob, nb := boardOf(old), boardOf(cur)
	if ob != nb {
		c.BoardChanged = &board.Change{From: ob, To: nb}
	}
	return c
}

// orUnassigned shows an assignee in text: "Unassigned" for nobody, a
// person by their label (@U123, @alice:server), a role as it is.
func orUnassigned(s string) string {
	if s == "" {
		return "Unassigned"
	}
	return board.AssigneeLabel(s)
}

func cardsOf(e plan.Envelope) map[string]plan.CardDraft {
	out := map[string]plan.CardDraft{}
	for _, a := range e.Actions {
		for _, c := range a.Cards {
			out[c.TempID] = c
		}
	}
	return out
}

func linksOf(e plan.Envelope) []plan.Link {
	var out []plan.Link
	for _, a := range e.Actions {
		out = append(out, a.Links...)
	}
	return out
}

func boardOf(e plan.Envelope) string {
	if b := e.NewBoard(); b != nil {
		return b.Name
	}
	return ""
}

func sortedKeys(m map[string]plan.CardDraft) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
