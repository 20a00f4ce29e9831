package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// HomeEngine is what the App Home needs from the engine, part of Engine;
// *bot.Engine is one.
type HomeEngine interface {
	WaitingFor(ctx context.Context, user string, channels []board.Channel) ([]board.Proposal, error)
	MayApprove(ctx context.Context, p board.Proposal, user string) bool
	CardsAssignedTo(ctx context.Context, person string, limit int) ([]board.AssignedCard, error)
	MoveAssignedCard(ctx context.Context, user, person string, id board.CardID, status, via string) (board.CardUpdate, error)
}

// HomeViewers remembers who opened the App Home, across replicas, so a
// change can refresh the homes it shows in; *redisstore.InFlight is one.
type HomeViewers interface {
	AddHomeViewer(ctx context.Context, surface, user string, now time.Time) error
	HomeViewers(ctx context.Context, surface string, since time.Time, limit int) ([]string, error)
}

// Bounds on one App Home: Slack takes at most 100 blocks in a view, and
// each home costs a few Web API calls and reads.
const (
	homeSurface      = "slack"
	maxHomeViewers   = 200
	homeViewersSince = 7 * 24 * time.Hour
	maxHomeChannels  = 1000
	maxRunChannels   = 20
)

// homeLocks keeps one publish per user at a time on this replica, so an
// older rendering never lands after a newer one.
type homeLocks struct {
	mu    sync.Mutex
	users map[string]*sync.Mutex
}

func (l *homeLocks) lock(user string) func() {
	l.mu.Lock()
	if l.users == nil {
		l.users = map[string]*sync.Mutex{}
	}
	m, ok := l.users[user]
	if !ok {
		m = &sync.Mutex{}
		l.users[user] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// homeOpened publishes the App Home of a user who opened its Home tab
// (app_home_opened), after the ack, and notes them as a viewer.
func (a *Adapter) homeOpened(installation, user, tab string) {
	if user == "" || (tab != "" && tab != "home") {
		return
	}
	user = a.scopedID(installation, user)
	a.afterAck("app home", func(ctx context.Context) {
		if err := a.memory.AddHomeViewer(ctx, homeSurface, user, a.now()); err != nil {
			a.logger.Warn("remember app home viewer", "user", user, "err", err)
		}
		a.publishHome(ctx, user, "")
	})
}

// publishHome renders user's App Home and publishes it (views.publish);
// notice, when set, heads it (the outcome of a click there).
//
// A viewer is a user as BobNet names it across workspaces: the bare user
// id in single-workspace mode, "T123/U456" (installation/user) in
// multi-workspace mode, so each workspace's Home is drawn with its own
// token and shows only its own channels.
func (a *Adapter) publishHome(ctx context.Context, viewer, notice string) {
	defer a.homes.lock(viewer)()
	api, user, err := a.web(ctx, viewer)
	if err != nil {
		a.logger.Warn("publish app home", "viewer", viewer, "err", err)
		return
	}
	view := slackapi.HomeTabViewRequest{Type: slackapi.VTHomeTab, CallbackID: "bobnet_home", Blocks: slackapi.Blocks{BlockSet: a.homeBlocks(ctx, api, viewer, user, notice)}}
	if _, err := api.PublishViewContext(ctx, slackapi.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		a.logger.Warn("publish app home", "viewer", viewer, "err", err)
	}
}

// viewerUser is a viewer's user id in its workspace, and the workspace's
// installation ("" in single-workspace mode).
func (a *Adapter) viewerUser(viewer string) (installation, user string) {
	if a.teams == nil {
		return "", viewer
	}
	installation, user, _ = strings.Cut(viewer, "/")
	return installation, user
}

// person is a viewer's person id (board.Person): slack:T…/U… in
// multi-workspace mode, slack:U… in single-workspace mode. Cards are
// assigned to people by it, never by a name.
func (a *Adapter) person(viewer string) string {
	return board.SlackPerson(a.viewerUser(viewer))
}

// home is what one user's App Home shows.
type home struct {
	notice  string
	waiting []board.Proposal
	cards   []board.AssignedCard
	runs    []boardRuns
	// failed names the sections that could not be read.
	failed []string
}

type boardRuns struct {
	board board.Board
	runs  []board.Run
}

func (a *Adapter) homeBlocks(ctx context.Context, api *slackapi.Client, viewer, user, notice string) []slackapi.Block {
	h := home{notice: notice}
	channels, err := a.userChannels(ctx, api, viewer, user)
	if err != nil {
		a.logger.Warn("app home: the user's channels", "user", user, "err", err)
		h.failed = append(h.failed, "your channels")
	}
	if h.waiting, err = a.eng.WaitingFor(ctx, user, channels); err != nil {
		a.logger.Warn("app home: proposals", "user", user, "err", err)
		h.failed = append(h.failed, "proposals")
	}
	if h.cards, err = a.eng.CardsAssignedTo(ctx, a.person(viewer), maxHomeCards); err != nil {
		a.logger.Warn("app home: cards", "user", user, "err", err)
		h.failed = append(h.failed, "cards")
	}
	// Runs are read channel by channel: only the first channels listed
	// are looked at.
	for i, ch := range channels {
		if i == maxRunChannels || len(h.runs) == maxHomeRunBoards {
			break
		}
		b, runs, err := a.eng.RecentRuns(ctx, ch, "")
		if err == nil && len(runs) > 0 {
			h.runs = append(h.runs, boardRuns{board: b, runs: runs})
		}
	}
	return homeView(h, a.cfg.PublicURL)
}

// userChannels are the Slack channels user is a member of that BobNet
// can see (users.conversations): a home shows only what is in them.
func (a *Adapter) userChannels(ctx context.Context, api *slackapi.Client, viewer, user string) ([]board.Channel, error) {
	installation, _ := a.viewerUser(viewer)
	var out []board.Channel
	cursor := ""
	for len(out) < maxHomeChannels {
		page, next, err := api.GetConversationsForUserContext(ctx, &slackapi.GetConversationsForUserParameters{
			UserID: user, Cursor: cursor, Types: []string{"public_channel", "private_channel"}, Limit: 200, ExcludeArchived: true,
		})
		if err != nil {
			return out, err
		}
		for _, c := range page {
			out = append(out, board.Channel{Source: board.SourceSlack, ID: a.scopedID(installation, c.ID)})
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return out, nil
}

// homeActions handles the buttons of an App Home: Approve and Cancel of
// a waiting proposal go through the engine as they do in the channel
// (which redraws the channel's preview); a move button moves a card
// assigned to the clicker. The clicker's home is published again after.
func (a *Adapter) homeActions(ctx context.Context, cb slackapi.InteractionCallback) {
	user := cb.User.ID
	viewer := a.scopedID(installationOf(cb.Team.ID, cb.Enterprise.ID, cb.IsEnterpriseInstall), user)
	for _, act := range cb.ActionCallback.BlockActions {
		switch {
		case act.ActionID == actionApprove || act.ActionID == actionCancel:
			action := act.ActionID
			id, err := bot.ParseProposalID(act.Value)
			a.afterAck("app home decision", func(ctx context.Context) {
				notice := ""
				if err != nil {
					notice = decisionText(err)
				} else {
					notice = a.homeDecide(ctx, action, id, viewer, user)
				}
				a.publishHome(ctx, viewer, notice)
			})
		case strings.HasPrefix(act.ActionID, actionHomeMove):
			card, status, _ := strings.Cut(act.Value, "|")
			a.afterAck("app home move", func(ctx context.Context) {
				a.publishHome(ctx, viewer, a.homeMove(ctx, viewer, user, board.CardID(card), status))
			})
		}
	}
}

// homeDecide approves or cancels a proposal from the App Home and says
// how it went, for the home's notice.
func (a *Adapter) homeDecide(ctx context.Context, action string, id board.ProposalID, viewer, user string) string {
	p, err := a.eng.Proposal(ctx, id)
	if err == nil && !a.sameWorkspace(viewer, p.Thread.Channel) {
		err = fmt.Errorf("proposal %s: %w", id, bot.ErrNoProposal) // as one nobody has
	}
	if err != nil {
		return decisionText(err)
	}
	switch action {
	case actionApprove:
		ap, err := a.eng.Approve(ctx, id, user)
		switch {
		case err != nil:
			return decisionText(err)
		case ap.State == board.ProposalPending:
			return approvalText(ap)
		}
		return ":white_check_mark: Approved *" + escape(boardName(p)) + "*. <" + ap.BoardURL + "|Open the board>"
	default:
		if _, err := a.eng.CancelWithReason(ctx, id, user, ""); err != nil {
			return decisionText(err)
		}
		return "Cancelled *" + escape(boardName(p)) + "*."
	}
}

// homeMove moves a card assigned to the viewer from the App Home and
// says how it went. The engine checks that the card is assigned to the
// viewer's person id and lies on a board of the viewer's workspace.
func (a *Adapter) homeMove(ctx context.Context, viewer, user string, card board.CardID, status string) string {
	id, err := board.ParseCardID(string(card))
	if err != nil {
		return "That button names no card."
	}
	up, err := a.eng.MoveAssignedCard(ctx, user, a.person(viewer), id, status, "slack")
	if errors.Is(err, bot.ErrForbidden) {
		return "That card is not assigned to you, so it was not moved."
	}
	if err != nil {
		return escape(bot.Explain(err))
	}
	a.cardChanged(ctx, up)
	return escape(bot.CardUpdateText(up, ""))
}

// viewers are the people who opened their App Home lately. They are read
// on the caller's path (one Redis read), so that a change nobody's Home
// shows takes none of the slots decisions run in.
func (a *Adapter) viewers(ctx context.Context, about string) []string {
	viewers, err := a.memory.HomeViewers(ctx, homeSurface, a.now().Add(-homeViewersSince), maxHomeViewers)
	if err != nil {
		a.logger.Warn("refresh app homes", "about", about, "err", err)
	}
	return viewers
}

// homeChanged refreshes the App Homes a proposal shows in (or just left):
// those of the viewers who may approve it, its requester and its decider.
// Called when a preview is posted or redrawn; the publishing runs after it.
func (a *Adapter) homeChanged(ctx context.Context, p board.Proposal) {
	if p.Thread.Channel.Source != board.SourceSlack {
		return
	}
	viewers := a.viewers(ctx, string(p.ID))
	if len(viewers) == 0 {
		return
	}
	a.afterAck("refresh app homes", func(ctx context.Context) {
		for _, v := range viewers {
			if !a.sameWorkspace(v, p.Thread.Channel) {
				continue
			}
			_, u := a.viewerUser(v)
			if u == p.RequestedBy || u == p.DecidedBy || a.eng.MayApprove(ctx, p, u) {
				a.publishHome(ctx, v, "")
			}
		}
	})
}

// cardChanged refreshes the App Homes of the viewers a changed card was
// or is assigned to: those whose person id it names, exactly.
func (a *Adapter) cardChanged(ctx context.Context, up board.CardUpdate) {
	viewers := a.viewers(ctx, string(up.Card.ID))
	if len(viewers) == 0 {
		return
	}
	assignees := map[string]bool{up.Card.Assignee: true}
	for _, c := range up.Changes {
		if c.Field == "assignee" {
			assignees[c.From], assignees[c.To] = true, true
		}
	}
	var show []string
	for _, v := range viewers {
		if assignees[a.person(v)] {
			show = append(show, v)
		}
	}
	if len(show) == 0 {
		return
	}
	a.afterAck("refresh app homes", func(ctx context.Context) {
		for _, v := range show {
			a.publishHome(ctx, v, "")
		}
	})
}

// sameWorkspace reports whether a viewer's workspace is the one ch is in:
// a Home acts on and is redrawn for its own workspace's proposals only.
func (a *Adapter) sameWorkspace(viewer string, ch board.Channel) bool {
	if ch.Source != board.SourceSlack {
		return false
	}
	installation, _ := a.viewerUser(viewer)
	return a.teams == nil || strings.HasPrefix(ch.ID, installation+"/")
}
