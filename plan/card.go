package plan

import "strings"

// card reads one new card, normalizing its status, workspace mode and
// assignee; a status or mode it does not know is an error, never guessed.
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
