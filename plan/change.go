package plan

import (
	"fmt"
	"slices"
	"strings"
)

// CardStatuses are the six statuses a card on a board may have, in board
// order. A new card starts in one of the first two; update_card may move a
// card to any of them.
var CardStatuses = []string{"Backlog", "Ready", "In Progress", "Review", "Blocked", "Done"}

// startedStatuses mean work on a card has begun: a card may enter one only
// when every card it depends on is Done.
var startedStatuses = []string{"In Progress", "Review", "Done"}

// NormalizeStatus returns the canonical spelling of one of the six
// statuses, matched case-insensitively and ignoring spaces, dashes and
// underscores; ok is false for anything else, which is never coerced.
func NormalizeStatus(s string) (status string, ok bool) {
	squash := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == ' ' || r == '-' || r == '_' {
				return -1
			}
			if r >= 'A' && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, s)
	}
	want := squash(s)
	for _, st := range CardStatuses {
		if squash(st) == want {
			return st, true
		}
	}
	return "", false
}

// changeAction reads an update_card or add_links action. Its card
// references are checked against the board and the rest of the plan
// afterwards, in checkChanges.
func (v *validator) changeAction(m map[string]any, path string, a Action) Action {
	a.Cards, a.Links = []CardDraft{}, []Link{}
	if !v.opts.HasTargetBoard && v.opts.Board == nil {
		v.errorf(join(path, "type"), "%s changes the channel's current board, and this channel has none", a.Type)
	}
	for _, field := range []string{"board", "cards"} {
		if raw, ok := m[field]; ok && raw != nil {
			v.errorf(join(path, field), "%s takes no %s", a.Type, field)
		}
	}
	switch a.Type {
	case ActionUpdateCard:
		if raw, ok := m["links"]; ok && raw != nil {
			v.errorf(join(path, "links"), "update_card takes no links; use add_links")
		}
		a.Card = strings.TrimSpace(v.required(m, path, "card", maxTempID))
		opt := func(field string, maxLen int) *string {
			if raw, ok := m[field]; !ok || raw == nil {
				return nil
			}
			s := strings.TrimSpace(v.str(m, path, field, maxLen))
			return &s
		}
		a.Status, a.Assignee, a.Title, a.Body = opt("status", 40), opt("assignee", maxAssignee), opt("title", maxTitle), opt("body", maxBody)
		if a.Title != nil {
			*a.Title = line(*a.Title)
		}
		if a.Status == nil && a.Assignee == nil && a.Title == nil && a.Body == nil {
			v.errorf(path, "update_card changes nothing: give status, assignee, title or body")
		}
		if a.Status != nil {
			if st, ok := NormalizeStatus(*a.Status); ok {
				a.Status = &st
			} else {
				v.errorf(join(path, "status"), "%q is not a status: one of %s", *a.Status, strings.Join(CardStatuses, ", "))
			}
		}
		for field, val := range map[string]*string{"title": a.Title, "body": a.Body} {
			if val != nil && *val == "" {
				v.errorf(join(path, field), "must not be blank")
			}
		}
		if a.Assignee != nil && *a.Assignee != "" && len(v.profiles) > 0 {
			if canon, ok := v.profiles[strings.ToLower(*a.Assignee)]; ok {
				a.Assignee = &canon
			} else {
				v.warnf(join(path, "assignee"), "%q is not a known profile (%s)", *a.Assignee, strings.Join(v.opts.Profiles, ", "))
			}
		}
	case ActionAddLinks:
		rawLinks := v.list(m, path, "links")
		if len(rawLinks) == 0 {
			v.errorf(join(path, "links"), "add_links needs at least one link")
		}
		for _, l := range v.links(rawLinks, path, `{"card": ..., "depends_on": ...}`) {
			a.Links = append(a.Links, Link{Card: l.card, DependsOn: l.dep})
		}
	}
	return a
}

// planNode is a card as checkChanges sees it: an existing card (by id) or
// a card of the plan (by temp id), on the current board or a new one.
type planNode struct {
	key    string // "id:<id>" or "temp:<temp id>"
	name   string // handle or temp id, for messages
	status string
	onNew  bool // created on a board the plan creates
}

// checkChanges checks the V2 actions against the current board and the
// rest of the plan, in plan order, as execution will apply them: every
// card they name exists, a card starts only when what it depends on is
// Done (counting earlier actions' changes), and no link closes a cycle,
// existing links included. References are normalized to handles.
func (v *validator) checkChanges(env *Envelope) {
	hasV2 := false
	for _, a := range env.Actions {
		hasV2 = hasV2 || a.Type == ActionUpdateCard || a.Type == ActionAddLinks
	}
	if !hasV2 {
		return
	}
	if v.opts.Board == nil {
		if v.opts.HasTargetBoard {
			// Offline (bobnet plan check --board) the cards are unknown;
			// execution checks them again against the board itself.
			v.warnf("actions", "the cards update_card and add_links name were not checked: the current board's cards are not known here")
		}
		return
	}
	nodes := map[string]*planNode{}
	byRef := map[string]*planNode{} // lower-case id or handle -> node
	deps := map[string][]string{}
	for _, c := range v.opts.Board.Cards {
		n := &planNode{key: "id:" + c.ID, name: c.ID, status: c.Status}
		if c.Handle != "" {
			n.name = c.Handle
			byRef[strings.ToLower(c.Handle)] = n
		}
		byRef[strings.ToLower(c.ID)] = n
		nodes[n.key] = n
		for _, d := range c.DependsOn {
			deps[n.key] = append(deps[n.key], "id:"+d)
		}
	}
	temps := map[string]*planNode{}
	for _, a := range env.Actions {
		for _, c := range a.Cards {
			n := &planNode{key: "temp:" + c.TempID, name: c.TempID, status: c.Status, onNew: !a.Type.NeedsTargetBoard()}
			temps[c.TempID] = n
			nodes[n.key] = n
		}
	}
	resolve := func(ref string, allowTemp bool) *planNode {
		if n, ok := temps[ref]; ok && allowTemp {
			return n
		}
		return byRef[strings.ToLower(ref)]
	}
	unknown := func(path, ref string, allowTemp bool) {
		also := ""
		if allowTemp {
			also = " or a temp_id of a card in this plan"
		}
		v.errorf(path, "unknown card %q: not a card of the current board (name it by its handle, such as %s)%s", ref, exampleHandle(v.opts.Board), also)
	}
	for i, a := range env.Actions {
		path := index("actions", i)
		for _, l := range a.Links {
			if a.Type != ActionAddLinks {
				deps["temp:"+l.Card] = append(deps["temp:"+l.Card], "temp:"+l.DependsOn)
			}
		}
		switch a.Type {
		case ActionUpdateCard:
			if a.Card == "" {
				continue
			}
			n := resolve(a.Card, false)
			if n == nil {
				unknown(join(path, "card"), a.Card, false)
				continue
			}
			env.Actions[i].Card = n.name
			if a.Status == nil || !slices.Contains(CardStatuses, *a.Status) {
				continue
			}
			if *a.Status != n.status && slices.Contains(startedStatuses, *a.Status) {
				var waiting []string
				for _, d := range deps[n.key] {
					if dn := nodes[d]; dn != nil && dn.status != "Done" {
						waiting = append(waiting, dn.name+" ("+dn.status+")")
					}
				}
				if len(waiting) > 0 {
					v.errorf(join(path, "status"), "%s cannot move to %s before %s %s Done: mark those Done earlier in the plan, or leave %s as it is",
						n.name, *a.Status, strings.Join(waiting, ", "), isAre(len(waiting)), n.name)
					continue
				}
			}
			n.status = *a.Status
		case ActionAddLinks:
			for j, l := range a.Links {
				lp := index(join(path, "links"), j)
				from, to := resolve(l.Card, true), resolve(l.DependsOn, true)
				if l.Card != "" && from == nil {
					unknown(join(lp, "card"), l.Card, true)
				}
				if l.DependsOn != "" && to == nil {
					unknown(join(lp, "depends_on"), l.DependsOn, true)
				}
				if from == nil || to == nil {
					continue
				}
				switch {
				case from == to:
					v.errorf(lp, "card %q cannot depend on itself", from.name)
					continue
				case from.onNew != to.onNew:
					v.errorf(lp, "%s and %s are on different boards; a link joins cards of one board", from.name, to.name)
					continue
				}
				env.Actions[i].Links[j] = Link{Card: from.name, DependsOn: to.name}
				if !slices.Contains(deps[from.key], to.key) {
					deps[from.key] = append(deps[from.key], to.key)
				}
			}
			starts := make([]string, 0, len(a.Links))
			for _, l := range env.Actions[i].Links {
				if n := resolve(l.Card, true); n != nil {
					starts = append(starts, n.key)
				}
			}
			if cycle := cycleIn(nodes, deps, starts); cycle != nil {
				v.errorf(join(path, "links"), "these links would make a dependency cycle with the board's existing links (each depends on the next): %s", strings.Join(cycle, " -> "))
			}
		}
	}
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func exampleHandle(b *BoardState) string {
	for _, c := range b.Cards {
		if c.Handle != "" {
			return c.Handle
		}
	}
	return "NEWS-3"
}

// cycleIn returns one dependency cycle by the nodes' names, the first
// repeated at the end, or nil. The search starts from starts (the cards
// just linked), so the cycle reads from the link that closed it, and goes
// through nodes and dependencies in name order, so the same plan always
// gets the same report.
func cycleIn(nodes map[string]*planNode, deps map[string][]string, starts []string) []string {
	name := func(k string) string {
		if n := nodes[k]; n != nil {
			return n.name
		}
		return k
	}
	byName := func(a, b string) int { return strings.Compare(name(a), name(b)) }
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, byName)
	keys = append(slices.Clone(starts), keys...)
	sorted := map[string][]string{}
	for k, ds := range deps {
		sorted[k] = slices.SortedFunc(slices.Values(ds), byName)
	}
	deps = sorted
	c := FindCycle(deps, keys)
	if c == nil {
		return nil
	}
	out := make([]string, len(c))
	for i, k := range c {
		out[i] = name(k)
	}
	return out
}

// String says what an update_card changes, for logs and fallbacks.
func (a Action) String() string {
	if a.Type != ActionUpdateCard {
		return string(a.Type)
	}
	var parts []string
	for _, f := range []struct {
		name string
		val  *string
	}{{"status", a.Status}, {"assignee", a.Assignee}, {"title", a.Title}, {"body", a.Body}} {
		if f.val != nil {
			parts = append(parts, fmt.Sprintf("%s=%q", f.name, *f.val))
		}
	}
	return "update_card " + a.Card + " " + strings.Join(parts, " ")
}
