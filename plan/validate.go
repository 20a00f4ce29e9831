package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Errors of a plan's JSON itself, before any field is looked at; they are
// reported as a Result's issue, and the planner's parser returns them too.
var (
	ErrNotObject = errors.New("model output is a JSON array, not an object")
	ErrBadJSON   = errors.New("model output is not valid JSON")
)

// Limits on a plan. They keep a runaway model from flooding a board or a
// chat preview; the numbers are generous for real plans.
const (
	MaxCards          = 64
	maxTitle          = 200
	maxBody           = 8000
	maxBoardName      = 120
	maxGoal           = 2000
	maxAnswer         = 8000
	maxCriteria       = 30
	maxCriterion      = 1000
	maxSkills         = 20
	maxSkill          = 100
	maxNotes          = 4000
	maxAssignee       = 100
	maxTempID         = 100
	maxQuestions      = 20
	maxQuestion       = 1000
	maxAssumptions    = 30
	maxAssumption     = 1000
	maxLinksPerAction = 512
)

// CheckJSON validates and normalizes an already extracted JSON object, such
// as a stored plan being proposed again.
func CheckJSON(obj []byte, opts Options) Result {
	res := Result{Errors: []Issue{}, Warnings: []Issue{}}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		res.Errors = append(res.Errors, Issue{Message: fmt.Sprintf("%v: %v", ErrBadJSON, err)})
		return res
	}
	m, ok := root.(map[string]any)
	if !ok {
		res.Errors = append(res.Errors, Issue{Message: ErrNotObject.Error()})
		return res
	}
	v := &validator{opts: opts, profiles: map[string]string{}}
	for _, p := range opts.Profiles {
		v.profiles[strings.ToLower(strings.TrimSpace(p))] = p
	}
	env := v.envelope(m)
	res.Plan = &env
	res.Kind = env.Kind
	res.Errors = append(res.Errors, v.errs...)
	res.Warnings = append(res.Warnings, v.warns...)
	res.Valid = len(res.Errors) == 0
	res.Stats = env.Stats()
	return res
}

type validator struct {
	opts     Options
	profiles map[string]string // lower-case name -> canonical name
	errs     []Issue
	warns    []Issue
}

func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, Issue{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(path, format string, args ...any) {
	v.warns = append(v.warns, Issue{Path: path, Message: fmt.Sprintf(format, args...)})
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// str reads an optional string field; a wrong type is an error.
func (v *validator) str(m map[string]any, path, field string, maxLen int) string {
	raw, ok := m[field]
	if !ok || raw == nil {
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		v.errorf(join(path, field), "must be a string, not %s", typeName(raw))
		return ""
	}
	if maxLen > 0 && utf8.RuneCountInString(s) > maxLen {
		v.errorf(join(path, field), "is longer than %d characters", maxLen)
	}
	if _, err := CheckText(s, false); err != nil {
		v.errorf(join(path, field), "%v; plans are plain text", err)
	}
	return s
}

// line reads a one-line display text (a title, a board name) with its
// invisible formatting characters dropped; see CheckText.
func line(s string) string {
	out, _ := CheckText(s, true) // control characters are reported by str
	return strings.TrimSpace(out)
}

// required reads a string field that must be present and non-blank.
func (v *validator) required(m map[string]any, path, field string, maxLen int) string {
	if raw := m[field]; raw != nil {
		if _, ok := raw.(string); !ok {
			return v.str(m, path, field, maxLen) // reports the type
		}
	}
	s := v.str(m, path, field, maxLen)
	if strings.TrimSpace(s) == "" {
		v.errorf(join(path, field), "is required and must not be blank")
	}
	return s
}

// strList reads an optional list of strings.
func (v *validator) strList(m map[string]any, path, field string, maxItems, maxLen int) []string {
	raw, ok := m[field]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.errorf(join(path, field), "must be a list of strings, not %s", typeName(raw))
		return nil
	}
	if len(list) > maxItems {
		v.errorf(join(path, field), "has %d items; at most %d are allowed", len(list), maxItems)
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			v.errorf(index(join(path, field), i), "must be a string, not %s", typeName(item))
			continue
		}
		if utf8.RuneCountInString(s) > maxLen {
			v.errorf(index(join(path, field), i), "is longer than %d characters", maxLen)
		}
		if _, err := CheckText(s, false); err != nil {
			v.errorf(index(join(path, field), i), "%v; plans are plain text", err)
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		out = append(out, s)
	}
	return out
}

func (v *validator) list(m map[string]any, path, field string) []any {
	raw, ok := m[field]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.errorf(join(path, field), "must be a list, not %s", typeName(raw))
		return nil
	}
	return list
}

func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true/false"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}

var kinds = []Kind{KindAnswer, KindClarify, KindProposeActions, KindRefuse}

var actionTypes = []ActionType{ActionCreateBoard, ActionCreateCard, ActionCreateCardBatch, ActionCreateBoardWithCards, ActionUpdateCard, ActionAddLinks, ActionScheduleBoard}

func (v *validator) envelope(m map[string]any) Envelope {
	var env Envelope
	kind := v.str(m, "", "kind", 40)
	env.Kind = Kind(strings.ToLower(strings.TrimSpace(kind)))
	switch {
	case kind == "":
		if _, isStr := m["kind"].(string); isStr || m["kind"] == nil {
			v.errorf("kind", "is required: one of answer, clarify, propose_actions, refuse")
		}
	case !slices.Contains(kinds, env.Kind):
		v.errorf("kind", "%q is not a known kind (answer, clarify, propose_actions, refuse)", kind)
	}
	env.Answer = v.str(m, "", "answer", maxAnswer)
	if raw, ok := m["confidence"]; ok && raw != nil {
		n, isNum := raw.(json.Number)
		f, err := n.Float64()
		switch {
		case !isNum || err != nil:
			v.errorf("confidence", "must be a number from 0 to 1, not %s", typeName(raw))
		case f < 0 || f > 1:
			v.errorf("confidence", "must be from 0 to 1, not %s", n)
		default:
			env.Confidence = f
		}
	}
	if raw, ok := m["needs_clarification"]; ok && raw != nil {
		b, isBool := raw.(bool)
		if !isBool {
			v.errorf("needs_clarification", "must be true or false, not %s", typeName(raw))
		}
		env.NeedsClarification = b
	}
	env.ClarifyingQuestions = v.strList(m, "", "clarifying_questions", maxQuestions, maxQuestion)
	env.Assumptions = v.strList(m, "", "assumptions", maxAssumptions, maxAssumption)

	actions := v.list(m, "", "actions")
	switch env.Kind {
	case KindProposeActions:
		if len(actions) == 0 {
			v.errorf("actions", "propose_actions needs at least one action")
		}
	case KindAnswer, KindRefuse:
		if strings.TrimSpace(env.Answer) == "" {
			v.errorf("answer", "is required for kind %s", env.Kind)
		}
		fallthrough
	default:
		if len(actions) > 0 {
			v.errorf("actions", "actions are only allowed with kind propose_actions, not %q", env.Kind)
		}
	}
	if env.Kind == KindClarify && len(env.ClarifyingQuestions) == 0 && strings.TrimSpace(env.Answer) == "" {
		v.errorf("clarifying_questions", "clarify needs at least one question or an answer")
	}

	seen := map[string]string{} // temp id -> path of first use
	cards := 0
	for i, raw := range actions {
		path := index("actions", i)
		am, ok := raw.(map[string]any)
		if !ok {
			v.errorf(path, "must be an object, not %s", typeName(raw))
			continue
		}
		a := v.action(am, path, seen)
		cards += len(a.Cards)
		env.Actions = append(env.Actions, a)
	}
	if cards > MaxCards {
		v.errorf("actions", "the plan has %d cards; at most %d are allowed", cards, MaxCards)
	}
	v.checkChanges(&env)
	v.checkSchedules(&env)
	return env
}

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
	rawLinks := v.list(m, path, "links")
	if len(rawLinks) > maxLinksPerAction {
		v.errorf(join(path, "links"), "has %d links; at most %d are allowed", len(rawLinks), maxLinksPerAction)
		rawLinks = rawLinks[:maxLinksPerAction]
	}
	for i, raw := range rawLinks {
		lp := index(join(path, "links"), i)
		lm, ok := raw.(map[string]any)
		if !ok {
			v.errorf(lp, "must be an object {\"card\": temp_id, \"depends_on\": temp_id}, not %s", typeName(raw))
			continue
		}
		card := strings.TrimSpace(v.required(lm, lp, "card", maxTempID))
		dep := strings.TrimSpace(v.required(lm, lp, "depends_on", maxTempID))
		edges = append(edges, edge{card, dep, lp, join(lp, "card"), join(lp, "depends_on")})
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

func (v *validator) card(m map[string]any, path string) CardDraft {
	c := CardDraft{
		TempID:   strings.TrimSpace(v.required(m, path, "temp_id", maxTempID)),
		Title:    line(v.required(m, path, "title", maxTitle)),
		Body:     strings.TrimSpace(v.required(m, path, "body", maxBody)),
		Assignee: strings.TrimSpace(v.str(m, path, "assignee", maxAssignee)),
		Notes:    strings.TrimSpace(v.str(m, path, "notes", maxNotes)),
	}
	c.AcceptanceCriteria = v.strList(m, path, "acceptance_criteria", maxCriteria, maxCriterion)
	c.SuggestedSkills = v.strList(m, path, "suggested_skills", maxSkills, maxSkill)
	c.DependsOn = v.strList(m, path, "depends_on", MaxCards, maxTempID)
	for i := range c.DependsOn {
		c.DependsOn[i] = strings.TrimSpace(c.DependsOn[i])
	}

	status := v.str(m, path, "status", 40)
	switch strings.ToLower(strings.TrimSpace(status)) {
	case "backlog":
		c.Status = StatusBacklog
	case "ready":
		c.Status = StatusReady
	case "":
		if _, isStr := m["status"].(string); isStr || m["status"] == nil {
			v.errorf(join(path, "status"), "is required: Backlog or Ready")
		}
	default:
		// Never coerced: "Delete" or "Done" from a model is a mistake to
		// show, not a value to guess at.
		v.errorf(join(path, "status"), "%q is not allowed: a new card is Backlog or Ready", status)
	}

	mode := v.str(m, path, "workspace_mode", 40)
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "direct":
		c.WorkspaceMode = WorkspaceDirect
	case "scratch":
		c.WorkspaceMode = WorkspaceScratch
	case "worktree":
		c.WorkspaceMode = WorkspaceWorktree
	default:
		v.errorf(join(path, "workspace_mode"), "%q is not allowed: Direct, Scratch or Worktree", mode)
	}

	switch {
	case c.Assignee == "":
		v.warnf(join(path, "assignee"), "no assignee: the card will be shown as Unassigned")
	case len(v.profiles) > 0:
		if canon, ok := v.profiles[strings.ToLower(c.Assignee)]; ok {
			c.Assignee = canon
		} else {
			v.warnf(join(path, "assignee"), "%q is not a known profile (%s)", c.Assignee, strings.Join(v.opts.Profiles, ", "))
		}
	}
	if c.AcceptanceCriteria == nil {
		c.AcceptanceCriteria = []string{}
	}
	if c.SuggestedSkills == nil {
		c.SuggestedSkills = []string{}
	}
	return c
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
