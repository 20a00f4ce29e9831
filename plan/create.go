package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// action reads one action. update_card, add_links and schedule_board go
// to their own readers; the create actions are read here with their
// board, cards and links, each card's depends_on folded into the links.
func (v *validator) action(m map[string]any, path string, seen map[string]string) Action {
	var a Action
	typ := v.str(m, path, "type", 60)
	a.Type = ActionType(strings.ToLower(strings.TrimSpace(typ)))
	if strings.TrimSpace(typ) == "" {
		if _, isStr := m["type"].(string); isStr || m["type"] == nil {
			v.errorf(join(path, "type"), "is required: one of create_board, create_card, create_card_batch, create_board_with_cards, update_card, add_links, schedule_board")
		}
	} else if !slices.Contains(actionTypes, a.Type) {
		// The whole plan is refused: a plan that also deletes is not a
		// plan to approve partly.
		v.errorf(join(path, "type"), "action type %q is not allowed: BobNet only creates boards and cards and updates cards, never deletes or archives, so the whole plan is refused", typ)
	}
	if a.Type == ActionUpdateCard || a.Type == ActionAddLinks {
		return v.changeAction(m, path, a)
	}
	if a.Type == ActionScheduleBoard {
		return v.scheduleAction(m, path, a)
	}

	if raw, ok := m["board"]; ok && raw != nil {
		bm, isObj := raw.(map[string]any)
		if !isObj {
			v.errorf(join(path, "board"), "must be an object with name and goal, not %s", typeName(raw))
		} else {
			bp := join(path, "board")
			a.Board = &BoardDraft{
				Name: line(v.str(bm, bp, "name", maxBoardName)),
				Goal: strings.TrimSpace(v.str(bm, bp, "goal", maxGoal)),
			}
		}
	}
	switch a.Type {
	case ActionCreateBoard, ActionCreateBoardWithCards:
		if a.Board == nil || a.Board.Name == "" {
			if _, isObj := m["board"].(map[string]any); isObj || m["board"] == nil {
				v.errorf(join(path, "board.name"), "is required for %s", a.Type)
			}
		}
		if v.opts.HasTargetBoard && v.opts.Board != nil {
			// The one channel-board rule: a channel has one current board,
			// so a second one replaces it there; people must see that
			// before they approve.
			current := "a board"
			if b := v.opts.Board; b.Name != "" {
				current = fmt.Sprintf("the board %q (%s)", b.Name, b.Key)
			}
			v.warnf(join(path, "board"), "this channel already has %s; approving makes a second board, with a key of its own, and it becomes the channel's current board", current)
		}
	case ActionCreateCard, ActionCreateCardBatch:
		if !v.opts.HasTargetBoard {
			v.errorf(join(path, "type"), "%s needs a target board, and this channel has no current board; propose create_board_with_cards instead", a.Type)
		}
	}

	rawCards := v.list(m, path, "cards")
	switch {
	case a.Type == ActionCreateCard && len(rawCards) != 1:
		v.errorf(join(path, "cards"), "create_card needs exactly one card, not %d", len(rawCards))
	case a.Type == ActionCreateCardBatch && len(rawCards) == 0:
		v.errorf(join(path, "cards"), "create_card_batch needs at least one card")
	case a.Type == ActionCreateBoard && len(rawCards) > 0:
		v.errorf(join(path, "cards"), "create_board takes no cards; use create_board_with_cards")
	}
	local := map[string]bool{}
	for i, raw := range rawCards {
		cp := index(join(path, "cards"), i)
		cm, ok := raw.(map[string]any)
		if !ok {
			v.errorf(cp, "must be an object, not %s", typeName(raw))
			continue
		}
		c := v.card(cm, cp)
		if c.TempID != "" {
			if first, dup := seen[c.TempID]; dup {
				v.errorf(join(cp, "temp_id"), "%q is already used by %s; temp ids must be unique in the plan", c.TempID, first)
			} else {
				seen[c.TempID] = cp
			}
			local[c.TempID] = true
		}
		a.Cards = append(a.Cards, c)
	}

	// Links: the action's own, then each card's depends_on folded in.
	// An edge remembers where each end was written, for the error path.
	type edge struct{ card, dep, path, cardPath, depPath string }
	var edges []edge
	for _, l := range v.links(v.list(m, path, "links"), path, `{"card": temp_id, "depends_on": temp_id}`) {
		edges = append(edges, edge{l.card, l.dep, l.path, join(l.path, "card"), join(l.path, "depends_on")})
	}
	for i := range a.Cards {
		c := &a.Cards[i]
		for j, dep := range c.DependsOn {
			dp := index(join(index(join(path, "cards"), i), "depends_on"), j)
			edges = append(edges, edge{c.TempID, dep, dp, dp, dp})
		}
		c.DependsOn = nil
	}
	dedup := map[Link]bool{}
	for _, e := range edges {
		if e.card == "" || e.dep == "" {
			continue
		}
		bad := false
		for _, end := range []struct{ id, path string }{{e.card, e.cardPath}, {e.dep, e.depPath}} {
			if local[end.id] {
				continue
			}
			bad = true
			where := "in this action"
			if _, elsewhere := seen[end.id]; elsewhere {
				where = "in this action (links may not cross actions)"
			}
			v.errorf(end.path, "refers to unknown temp_id %q: no card %s has it", end.id, where)
		}
		if bad {
			continue
		}
		if e.card == e.dep {
			v.errorf(e.path, "card %q cannot depend on itself", e.card)
			continue
		}
		l := Link{Card: e.card, DependsOn: e.dep}
		if !dedup[l] {
			dedup[l] = true
			a.Links = append(a.Links, l)
		}
	}
	if cycle := findCycle(a.Cards, a.Links); cycle != nil {
		v.errorf(join(path, "links"), "dependencies form a cycle (each depends on the next): %s", strings.Join(cycle, " -> "))
	}
	if a.Cards == nil {
		a.Cards = []CardDraft{}
	}
	if a.Links == nil {
		a.Links = []Link{}
	}
	return a
}

// findCycle returns one dependency cycle as a list of temp ids, first id
// repeated at the end, or nil when there is none.
func findCycle(cards []CardDraft, links []Link) []string {
	deps := map[string][]string{}
	for _, l := range links {
		deps[l.Card] = append(deps[l.Card], l.DependsOn)
	}
	ids := make([]string, 0, len(cards))
	for _, c := range cards {
		ids = append(ids, c.TempID)
	}
	sort.Strings(ids) // a stable report for the same plan
	return FindCycle(deps, ids)
}
