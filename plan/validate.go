package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// validator collects every issue of one plan, so a person (or the repair
// call) sees them all at once rather than the first.
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

var kinds = []Kind{KindAnswer, KindClarify, KindProposeActions, KindRefuse}

var actionTypes = []ActionType{ActionCreateBoard, ActionCreateCard, ActionCreateCardBatch, ActionCreateBoardWithCards, ActionUpdateCard, ActionAddLinks, ActionScheduleBoard}

// envelope reads the whole model output: its kind, texts and actions, then
// the checks that span actions.
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
