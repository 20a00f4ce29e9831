package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bobnet/bobnet/board"
)

// PendingLister lists the pending proposals; *redisstore.InFlight is one.
type PendingLister interface {
	PendingProposals(ctx context.Context, now time.Time, limit int) ([]board.Proposal, error)
}

// AssignedCards lists the cards assigned to a person on the boards of one
// tenant; *store.Store is one.
type AssignedCards interface {
	CardsAssigned(ctx context.Context, person string, tenant board.Tenant, limit int) ([]board.AssignedCard, error)
}

// maxPendingScan bounds how many pending proposals one home reads before
// it picks the ones its viewer may decide.
const maxPendingScan = 500

// ErrNoHome means the engine's stores cannot list what a home shows.
var ErrNoHome = errors.New("this BobNet cannot list proposals or cards for a home")

// WaitingFor returns the pending proposals of channels that wait for
// user's decision (Awaits), soonest expiry first: what a person's home
// lists with Approve and Cancel.
func (e *Engine) WaitingFor(ctx context.Context, user string, channels []board.Channel) ([]board.Proposal, error) {
	pl := e.deps.Pending
	if pl == nil {
		return nil, ErrNoHome
	}
	now := e.deps.Now()
	list, err := pl.PendingProposals(ctx, now, maxPendingScan)
	if err != nil {
		return nil, unavailable("list pending proposals", err)
	}
	in := make(map[string]bool, len(channels))
	for _, ch := range channels {
		in[ch.Key()] = true
	}
	var out []board.Proposal
	for _, p := range list {
		if !in[p.Thread.Channel.Key()] {
			continue
		}
		if p = e.committed(ctx, p); p.State != board.ProposalPending || !now.Before(p.ExpiresAt) {
			continue
		}
		if p = e.withApprovals(ctx, p); e.Awaits(ctx, p, user) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Awaits reports whether p waits for user's decision: the policy p was
// proposed under lets user approve it (deciders, and self-approval for
// its requester), and user has not approved it already.
func (e *Engine) Awaits(ctx context.Context, p board.Proposal, user string) bool {
	if p.Quorum != nil && slices.Contains(p.Quorum.Approvals, user) {
		return false
	}
	return e.MayApprove(ctx, p, user)
}

// MayApprove reports whether the policy p was proposed under lets user
// approve it, whatever its state: who should see p come and go.
func (e *Engine) MayApprove(ctx context.Context, p board.Proposal, user string) bool {
	return e.mayAct(ctx, p, user, "approve") == nil
}

// CardsAssignedTo returns up to limit unfinished cards whose assignee is
// exactly person, a Slack person id (board.Person), on the boards of the
// person's own installation: what their App Home lists. Names play no
// part: a card assigned to a role, or to a name someone may also go by,
// is nobody's in particular. A Matrix person, who belongs to no one
// tenant, has no such list (ErrNoHome).
func (e *Engine) CardsAssignedTo(ctx context.Context, person string, limit int) ([]board.AssignedCard, error) {
	ac := e.deps.Assigned
	if ac == nil {
		return nil, ErrNoHome
	}
	p, ok := board.ParsePerson(person)
	if !ok || p.Tenant() == "" {
		return nil, fmt.Errorf("list cards assigned to %q: %w", person, ErrNoHome)
	}
	cards, err := ac.CardsAssigned(ctx, p.String(), p.Tenant(), limit)
	if err != nil {
		return nil, unavailable("list assigned cards", err)
	}
	out := cards[:0]
	for _, c := range cards {
		if c.Card.Assignee == p.String() && p.AssignableIn(board.TenantOf(c.Board.Channel)) {
			out = append(out, c)
		}
	}
	return out, nil
}

// MoveAssignedCard moves a card, named by id, to status for the person
// it is assigned to: the move buttons of a person's home. The card must
// lie on a board of the person's own tenant (board.Person.AssignableIn),
// else it is answered as a card nobody has (ErrNoCard), and be assigned
// to exactly person (a person id), else it is refused (ErrForbidden);
// either changes nothing, whatever the button said.
// Otherwise it is EditCard of the version checked, audited and announced
// the same way.
func (e *Engine) MoveAssignedCard(ctx context.Context, user, person string, id board.CardID, status, via string) (board.CardUpdate, error) {
	cs, err := e.cardStore()
	if err != nil {
		return board.CardUpdate{}, err
	}
	p, ok := board.ParsePerson(person)
	if !ok {
		return board.CardUpdate{}, fmt.Errorf("move card %s: %w: %q is no person id", id, ErrForbidden, person)
	}
	c, err := cs.Card(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return board.CardUpdate{}, fmt.Errorf("%w: %w", ErrNoCard, err)
	}
	if err != nil {
		return board.CardUpdate{}, unavailable("read card", err)
	}
	b, _, err := cs.Board(ctx, c.BoardID)
	if err != nil {
		return board.CardUpdate{}, unavailable("read board", err)
	}
	if !p.AssignableIn(board.TenantOf(b.Channel)) {
		// Another tenant's card: as one nobody has.
		return board.CardUpdate{}, fmt.Errorf("move card %s: %w", id, ErrNoCard)
	}
	if c.Assignee != p.String() {
		return board.CardUpdate{}, fmt.Errorf("move card %s: %w: it is not assigned to you", c.Handle, ErrForbidden)
	}
	// The version read: a card reassigned since is not moved.
	return e.EditCard(ctx, CardEdit{ID: id, Channel: channelOf(b.Channel), User: user, Via: via, Status: &status, IfVersion: c.Version})
}
