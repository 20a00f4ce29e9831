package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// CardStore is the part of the board store that card changes use;
// *store.Store is one. Without one (Deps.Cards nil) every card method
// answers ErrNoCards.
type CardStore interface {
	Board(ctx context.Context, id board.ID) (board.Board, []board.Card, error)
	Card(ctx context.Context, id board.CardID) (board.Card, error)
	CardByHandle(ctx context.Context, tenant board.Tenant, handle string) (board.Card, error)
	ChangeCard(ctx context.Context, ch board.CardChange) (board.CardUpdate, error)
}

// ErrNoCards means this engine was built without a card store.
var ErrNoCards = errors.New("this BobNet cannot change cards")

// ErrUnknownProfile means a card was assigned to someone who is not one
// of the deployment's profiles.
var ErrUnknownProfile = errors.New("unknown profile")

// CardEdit is one change to a card, from any surface. Every surface (chat
// commands, the REST API, the board page) goes through Engine.EditCard,
// so every change is checked, audited and announced the same way.
type CardEdit struct {
	// ID names the card exactly (the REST API and the board page). When it
	// is empty, Ref is resolved within the channel's tenant: a handle such
	// as NEWS-3 of any of its boards, or on the channel's current board a
	// number or a unique prefix of a title.
	// Handle (NEWS-3) names a card of the channel's tenant, or, with no
	// channel (the REST API), of any tenant.
	ID      board.CardID
	Handle  string
	Ref     string
	Channel board.Channel
	User    string
	// Via is the surface for the audit (slack, matrix, api, page); empty
	// means the channel's source.
	Via       string
	Status    *string
	Assignee  *string
	Title     *string
	Body      *string
	Criterion *board.CriterionMark
	// IfVersion, when not zero, refuses the edit with a *board.ConflictError
	// if the card changed since that version.
	IfVersion int
}

func (e *Engine) cardStore() (CardStore, error) {
	if e.deps.Cards == nil {
		return nil, ErrNoCards
	}
	return e.deps.Cards, nil
}

// EditCard applies one change to a card: it resolves the card, checks the
// change (a status the schema knows, a known profile, dependencies Done
// before the card starts), writes it with an audit event in one
// transaction, and, when the card became Done or Blocked, says so in the
// thread where its board was made. Errors: ErrNotFound (no such card or
// board), *board.AmbiguousError, *board.BlockedError,
// *board.ConflictError, *board.ReviewGateError (a card in Review of a
// running run moves on only through ReviewRunCard),
// board.ErrInvalidChange, ErrUnknownProfile, ErrUnavailable.
func (e *Engine) EditCard(ctx context.Context, ed CardEdit) (board.CardUpdate, error) {
	cs, err := e.cardStore()
	if err != nil {
		return board.CardUpdate{}, err
	}
	id := ed.ID
	if id == "" {
		c, err := e.editedCard(ctx, cs, ed)
		if err != nil {
			return board.CardUpdate{}, err
		}
		id = c.ID
	}
	if ed.Assignee != nil {
		name, err := e.assignee(ctx, cs, id, *ed.Assignee)
		if err != nil {
			return board.CardUpdate{}, err
		}
		ed.Assignee = &name
	}
	via := ed.Via
	if via == "" {
		via = string(ed.Channel.Source)
	}
	channel := ""
	if ed.Channel.ID != "" {
		channel = ed.Channel.Key()
	}
	up, err := cs.ChangeCard(ctx, board.CardChange{
		Card: id, Actor: ed.User, Via: via, Channel: channel,
		Status: ed.Status, Assignee: ed.Assignee, Title: ed.Title, Body: ed.Body, Criterion: ed.Criterion, IfVersion: ed.IfVersion,
	})
	switch {
	case errors.Is(err, board.ErrNotFound):
		return board.CardUpdate{}, fmt.Errorf("%w: %w", ErrNoCard, err)
	case errors.Is(err, board.ErrBlocked), errors.Is(err, board.ErrConflict), errors.Is(err, board.ErrInvalidChange), errors.Is(err, board.ErrUnderReview):
		return board.CardUpdate{}, err
	case err != nil:
		return board.CardUpdate{}, unavailable("change card", err)
	}
	if len(up.Changes) > 0 {
		e.emitCard(ctx, up, ed.User)
	}
	for _, c := range up.Changes {
		if c.Field == "status" {
			e.cardMoved(up) // a run's card moved by a person
			break
		}
	}
	for _, c := range up.Changes {
		if c.Field == "status" && (c.To == "Done" || c.To == "Blocked") {
			// Off the caller's path: a slash command must be answered in
			// three seconds whatever the chat platform is doing.
			e.announceLater(up, ed.User)
		}
	}
	return up, nil
}

// MoveCard moves a card of the channel's board (named by handle or title
// prefix) to another status. See EditCard for the errors.
func (e *Engine) MoveCard(ctx context.Context, ch board.Channel, user, ref, status string) (board.CardUpdate, error) {
	return e.EditCard(ctx, CardEdit{Channel: ch, User: user, Ref: ref, Status: &status})
}

// AssignCard gives a card of the channel's tenant to a profile (a role
// such as Researcher) or a person (a person id, board.Person, of the
// card's board's workspace or room); "none" (or "nobody", "unassigned")
// leaves it unassigned. See EditCard for the errors.
func (e *Engine) AssignCard(ctx context.Context, ch board.Channel, user, ref, who string) (board.CardUpdate, error) {
	return e.EditCard(ctx, CardEdit{Channel: ch, User: user, Ref: ref, Assignee: &who})
}

// NextCards returns the channel's board and the cards on it that are
// ready to start now: not started, every dependency Done. ErrNotFound when
// the channel has no board.
func (e *Engine) NextCards(ctx context.Context, ch board.Channel) (board.Status, error) {
	return e.ChannelStatus(ctx, ch)
}

// assignee checks what a card is to be assigned to and returns it as
// stored: a person id (board.Person) that may be assigned on the card's
// board (a Slack person on their own installation's boards, a Matrix
// person on a Matrix room's), else a profile's canonical name, or "" for
// the words that mean nobody. With no profiles configured any role name
// goes, but never one written as a person or a mention (@alice, <@U1>,
// slack:…, matrix:…) that is not a valid person id: people are assigned
// by id, never by a name.
func (e *Engine) assignee(ctx context.Context, cs CardStore, id board.CardID, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch strings.ToLower(name) {
	case "", "none", "nobody", "unassigned", "-":
		return "", nil
	}
	if p, ok := board.ParsePerson(name); ok {
		c, err := cs.Card(ctx, id)
		if errors.Is(err, board.ErrNotFound) {
			return "", fmt.Errorf("%w: %w", ErrNoCard, err)
		}
		if err != nil {
			return "", unavailable("read card", err)
		}
		b, _, err := cs.Board(ctx, c.BoardID)
		if err != nil {
			return "", unavailable("read board", err)
		}
		if !p.AssignableIn(board.TenantOf(b.Channel)) {
			return "", fmt.Errorf("%w: %s is not a person of the workspace or room of %s's board; assign someone of its own", board.ErrInvalidChange, p.Label(), c.Handle)
		}
		return p.String(), nil
	}
	if board.LooksLikePerson(name) {
		return "", fmt.Errorf("%w: %q is no person BobNet can tell: mention them in Slack, give their full user id in Matrix (@alice:example.org), or their person id (slack:T…/U…, matrix:@alice:example.org)", board.ErrInvalidChange, name)
	}
	return e.profileName(name)
}

// profileName returns a profile's canonical name. With no profiles
// configured any name goes.
func (e *Engine) profileName(name string) (string, error) {
	if len(e.cfg.Profiles) == 0 {
		return name, nil
	}
	names := make([]string, 0, len(e.cfg.Profiles))
	for _, p := range e.cfg.Profiles {
		if strings.EqualFold(p.Name, name) {
			return p.Name, nil
		}
		names = append(names, p.Name)
	}
	return "", fmt.Errorf("%w %q: assign one of %s, a person, or none", ErrUnknownProfile, name, strings.Join(names, ", "))
}

// boardEventRate bounds how often one board speaks in its thread, so a
// burst of moves does not flood the channel; the board page and the audit
// still show every change.
var boardEventRate = board.RateLimit{N: 6, Per: time.Minute}

// announceLater announces a card change off the caller's path, in the
// board's channel's outbound queue (tracked, bounded by the post timeout,
// and in order with the channel's other messages).
func (e *Engine) announceLater(up board.CardUpdate, user string) {
	if err := e.out.send(up.Board.Channel, func(ctx context.Context) { e.announce(ctx, up, user) }); err != nil {
		e.logger.Warn("board event not told: "+err.Error(), "board", up.Board.ID)
	}
}

// announce tells the thread where a board was made that one of its cards
// became Done or Blocked: a reply in that thread, never a broadcast to the
// channel, and at most boardEventRate per board.
func (e *Engine) announce(ctx context.Context, up board.CardUpdate, user string) {
	src, id, ok := strings.Cut(up.Board.Channel, ":")
	if !ok || id == "" {
		return
	}
	allowed, err := e.deps.Requests.Allow(ctx, "board-events:"+string(up.Board.ID), boardEventRate)
	if err != nil || !allowed {
		e.logger.Debug("board event not told", "board", up.Board.ID, "card", up.Card.Handle, "err", err)
		return
	}
	text := CardUpdateText(up, user)
	if st, err := e.BoardStatus(ctx, up.Board.ID); err == nil {
		text += " " + progressText(st)
	}
	t := board.Thread{Channel: board.Channel{Source: board.Source(src), ID: id}, ID: up.Board.Thread}
	r := board.Reply{Kind: board.ReplyInfo, Text: text, BoardURL: board.BoardURL(e.cfg.PublicURL, up.Board.ID)}
	if err := e.poster(t.Channel.Source).Reply(ctx, t, r); err != nil {
		e.logger.Warn("tell board event", "board", up.Board.ID, "card", up.Card.Handle, "err", err)
	}
}

// CardUpdateText says in one line what a card change did, for a chat
// reply: `NEWS-3 “Researcher B” moved from Backlog to In Progress by bob.`
// A person assigned is shown by their label (@U123, @alice:server).
func CardUpdateText(up board.CardUpdate, user string) string {
	return CardUpdateTextAs(up, user, func(s string) string { return s }, orUnassigned)
}

// CardUpdateTextAs is CardUpdateText for a surface with markup: esc
// escapes text for it (titles, roles and user are data), and who shows
// an assignee, "" for nobody (a person as the surface's mention); who's
// result is not escaped again.
func CardUpdateTextAs(up board.CardUpdate, user string, esc, who func(string) string) string {
	c := up.Card
	if len(up.Changes) == 0 {
		return esc(fmt.Sprintf("%s “%s” is already %s; nothing changed.", c.Handle, c.Title, c.Status))
	}
	parts := make([]string, 0, len(up.Changes))
	for _, ch := range up.Changes {
		switch ch.Field {
		case "status":
			parts = append(parts, esc(fmt.Sprintf("moved from %s to %s", ch.From, ch.To)))
		case "assignee":
			parts = append(parts, esc("assigned to ")+who(ch.To)+esc(" (was ")+who(ch.From)+esc(")"))
		case "title":
			parts = append(parts, esc(fmt.Sprintf("retitled from “%s”", ch.From)))
		case "body":
			parts = append(parts, esc("description edited"))
		default:
			parts = append(parts, esc(fmt.Sprintf("%s marked %s", ch.Field, ch.To)))
		}
	}
	by := ""
	if user != "" {
		by = " by " + user
	}
	return esc(fmt.Sprintf("%s “%s” ", c.Handle, c.Title)) + strings.Join(parts, esc(", ")) + esc(by+".")
}

// progressText is a board's progress in one sentence, in the same words
// as the board page: "4 of 10 cards Done; ready to start: NEWS-5, NEWS-6."
func progressText(st board.Status) string {
	total := 0
	for _, n := range st.Counts {
		total += n
	}
	s := fmt.Sprintf("%d of %d cards Done", st.Counts["Done"], total)
	if len(st.Ready) == 0 {
		return s + "; nothing is ready to start."
	}
	handles := make([]string, 0, len(st.Ready))
	for _, c := range st.Ready {
		handles = append(handles, c.Handle)
	}
	return s + "; ready to start: " + strings.Join(handles, ", ") + "."
}

// NextText lists what is ready to start on a board, one card a line, for
// `/bobnet next` (Slack) and `!bobnet next` (Matrix). A person assigned is
// shown by their label (@U123, @alice:server).
func NextText(st board.Status) string {
	return NextTextAs(st, func(s string) string { return s }, orUnassigned)
}

// NextTextAs is NextText for a surface with markup: esc escapes text for
// it, and who shows an assignee ("" for nobody), unescaped.
func NextTextAs(st board.Status, esc, who func(string) string) string {
	if len(st.Ready) == 0 {
		if len(st.Waiting) > 0 {
			return esc(fmt.Sprintf("Nothing is ready to start on %s right now: the cards left wait on others that are not Done.", st.Board.Name))
		}
		return esc(fmt.Sprintf("Nothing is ready to start on %s: every card has started or is Done.", st.Board.Name))
	}
	var b strings.Builder
	b.WriteString(esc(fmt.Sprintf("Ready to start on %s:", st.Board.Name)))
	for _, c := range st.Ready {
		b.WriteString(esc(fmt.Sprintf("\n%s “%s” (", c.Handle, c.Title)) + who(c.Assignee) + esc(", "+c.Status+")"))
	}
	return b.String()
}

// SplitCardStatus splits the words of a move command, such as "research b
// in progress", into the card and the status at its end, which may be two
// words. Chat adapters (Slack's /bobnet move, Matrix's !bobnet move) share
// it so they read a command the same way.
func SplitCardStatus(args []string) (card, status string, ok bool) {
	for n := 2; n >= 1; n-- {
		if len(args) <= n {
			continue
		}
		if st, ok := board.ParseStatus(strings.Join(args[len(args)-n:], " ")); ok {
			return strings.Join(args[:len(args)-n], " "), st, true
		}
	}
	return "", "", false
}
