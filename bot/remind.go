package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// ReminderSchedule is what pending proposals remind their deciders by: a
// schedule of reminders by due time (written with the proposal, cleared by
// its decision) and a mark that lets one reminder of a proposal go out
// across all replicas. *redisstore.InFlight is one; Deps.Reminders nil reminds
// nobody.
type ReminderSchedule interface {
	// DueReminders returns up to limit proposals whose reminder is due
	// at now.
	DueReminders(ctx context.Context, now time.Time, limit int) ([]board.ProposalID, error)
	// RemoveReminder takes a proposal off the reminder schedule.
	RemoveReminder(ctx context.Context, id board.ProposalID) error
	// MarkReminded marks a proposal reminded for ttl and reports whether
	// this call set the mark (true once, whoever asks).
	MarkReminded(ctx context.Context, id board.ProposalID, ttl time.Duration) (bool, error)
}

// Reminder is what a pending proposal tells its deciders once three
// quarters of its time are gone.
type Reminder struct {
	Proposal board.Proposal
	// Deciders are the people who may decide it, as user ids of its
	// surface: the requester, the admins and the users a policy names.
	// Roles (slack_group:, matrix_power:, any_member) are not expanded,
	// and who already approved is left out.
	Deciders []string
	// Left is how long the proposal has before it expires.
	Left time.Duration
}

// RemindPoster is a surface's own way of reminding deciders (Slack sends
// each one a direct message). A surface without one (Registration.Reminders
// nil) gets the reminder as a reply in the proposal's thread.
type RemindPoster interface {
	Remind(ctx context.Context, r Reminder) error
}

// Title names the proposal for a reminder: the board it creates, or the
// request it answers.
func (r Reminder) Title() string {
	if b := r.Proposal.Plan.NewBoard(); b != nil && b.Name != "" {
		return b.Name
	}
	if req := strings.TrimSpace(r.Proposal.Request); req != "" {
		return clipRunes(req, 80)
	}
	return "the plan " + string(r.Proposal.ID)
}

// Text is the reminder as one plain line, for surfaces that post it in
// the thread; posters escape it.
func (r Reminder) Text() string {
	who := "whoever may decide it"
	if len(r.Deciders) > 0 {
		who = strings.Join(r.Deciders, ", ")
	}
	return fmt.Sprintf("Reminder for %s: “%s” is still waiting for a decision and expires in %s. Approve, revise or cancel it above.",
		who, r.Title(), LeftText(r.Left))
}

// LeftText says how long is left, to the minute: "5h 59m", "12m".
func LeftText(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case h > 0:
		return fmt.Sprintf("%dh", h)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return "less than a minute"
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// remindDue sends the reminders that are due, on the sweeper's beat. Every
// replica scans; the once-mark decides which one reminds.
func (e *Engine) remindDue(ctx context.Context) {
	rs := e.deps.Reminders
	if rs == nil {
		return
	}
	ids, err := rs.DueReminders(ctx, e.deps.Now(), 100)
	if err != nil {
		e.logger.Warn("find due reminders", "err", err)
		return
	}
	for _, id := range ids {
		e.remind(ctx, rs, id)
	}
}

// remind takes one due reminder: it checks that the proposal is still
// pending and undecided, sets the proposal's once-mark (which only one
// replica ever sets), and queues the reminder on the proposal's channel.
// The state is read again when the reminder is sent (sendReminder).
// A reminder is sent at most once: a failure after the mark loses it
// rather than risking a second one.
func (e *Engine) remind(ctx context.Context, rs ReminderSchedule, id board.ProposalID) {
	p, err := e.Proposal(ctx, id)
	if errors.Is(err, ErrNotFound) {
		_ = rs.RemoveReminder(ctx, id)
		return
	}
	if err != nil {
		e.logger.Warn("read proposal to remind", "proposal", id, "err", err)
		return
	}
	if p.Deciding {
		return // a decision is in flight: try again on the next sweep
	}
	left := p.ExpiresAt.Sub(e.deps.Now())
	if p.State != board.ProposalPending || left <= 0 {
		_ = rs.RemoveReminder(ctx, id)
		return
	}
	marked, err := rs.MarkReminded(ctx, id, left)
	if err != nil {
		e.logger.Warn("mark proposal reminded", "proposal", id, "err", err)
		return
	}
	if err := rs.RemoveReminder(ctx, id); err != nil {
		e.logger.Warn("take reminder off the schedule", "proposal", id, "err", err)
	}
	if !marked {
		return // another replica reminds
	}
	e.queuePost(p.Thread, "remind", func(ctx context.Context, poster Poster) error {
		return e.sendReminder(ctx, poster, id)
	}, "proposal", id)
}

// sendReminder posts a proposal's reminder if, read just now, it is still
// pending in Redis and in Postgres (what decides) and no decision holds
// its claim. It runs on the channel's outbound queue, so a decision made
// on this replica after that read is announced after the reminder; a
// decision that took the claim before the read gets no reminder beside
// it. A decision on another replica that claims the proposal after the
// read may be announced while the reminder is being posted.
func (e *Engine) sendReminder(ctx context.Context, poster Poster, id board.ProposalID) error {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return fmt.Errorf("reminder of %s: %w", id, err)
	}
	if p.State != board.ProposalPending || p.Deciding {
		e.logger.Debug("reminder not sent: decided meanwhile", "proposal", id, "state", p.State)
		return nil
	}
	rec, err := e.deps.History.Proposal(ctx, id)
	switch {
	case errors.Is(err, board.ErrNotFound):
	case err != nil:
		return fmt.Errorf("reminder of %s: %w", id, err)
	case rec.State != string(board.ProposalPending):
		e.logger.Debug("reminder not sent: decided meanwhile", "proposal", id, "state", rec.State)
		return nil
	}
	r := Reminder{Proposal: p, Deciders: e.remindees(p), Left: p.ExpiresAt.Sub(e.deps.Now())}
	e.logger.Info("reminding deciders", "proposal", id, "deciders", len(r.Deciders))
	if rp := e.registration(p.Thread.Channel.Source).Reminders; rp != nil {
		return rp.Remind(ctx, r)
	}
	return poster.Reply(ctx, p.Thread, board.Reply{Kind: board.ReplyInfo, Text: r.Text()})
}

// remindees are the people who may decide p, as concrete user ids: the
// requester, the admins, the users its policy names and the channel's
// extra deciders. Roles that stand for many people are not expanded:
// asking Slack or Matrix who holds them would be a platform call per
// reminder for a list that may be long. Who already approved is left
// out.
func (e *Engine) remindees(p board.Proposal) []string {
	var out []string
	add := func(users ...string) {
		for _, u := range users {
			if u != "" && !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	deciders := []string{board.DeciderRequester, board.DeciderAdmins}
	if p.Quorum != nil {
		deciders = p.Quorum.Policy.Deciders
	}
	for _, d := range deciders {
		switch {
		case d == board.DeciderRequester:
			add(p.RequestedBy)
		case d == board.DeciderAdmins:
			add(e.cfg.Admins...)
		case d == board.DeciderAnyMember, strings.HasPrefix(d, board.DeciderSlackGroup), strings.HasPrefix(d, board.DeciderMatrixPower):
		default:
			add(d)
		}
	}
	add(e.ChannelDeciders(p.Thread.Channel.Key())...)
	if p.Quorum != nil {
		out = slices.DeleteFunc(out, func(u string) bool { return slices.Contains(p.Quorum.Approvals, u) })
	}
	return out
}
