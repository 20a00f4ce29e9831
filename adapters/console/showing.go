package console

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// The console shows a plan while the model writes it (`draft` events) and
// a run as it goes (`run_progress` events). Both are live events: a
// channel holds the latest of each request's draft and each run's
// progress in memory, not in its history, so a browser that connects
// or reconnects is shown them with the channel's past, and a draft is
// gone once its request is answered.

// maxLive is how many live events (drafts and runs' progress) one
// channel holds; past it the oldest goes.
const maxLive = 16

// draftView is a `draft` event's data.
type draftView struct {
	RequestID board.RequestID `json:"request_id"`
	Title     string          `json:"title"`
	Cards     []draftCard     `json:"cards"`
	// Draft is always true: the cards are not yet validated.
	Draft bool `json:"draft"`
}

type draftCard struct {
	TempID             string   `json:"temp_id"`
	Title              string   `json:"title"`
	Assignee           string   `json:"assignee"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
}

// runView is a `run_progress` event's data.
type runView struct {
	RunID      board.RunID `json:"run_id"`
	Number     int         `json:"number"`
	BoardID    board.ID    `json:"board_id"`
	BoardTitle string      `json:"board_title"`
	State      string      `json:"state"`
	Ended      bool        `json:"ended"`
	EditionURL string      `json:"edition_url,omitempty"`
	Tasks      []runTask   `json:"tasks"`
}

type runTask struct {
	CardID   board.CardID   `json:"card_id"`
	Handle   string         `json:"handle"`
	Title    string         `json:"title"`
	Assignee string         `json:"assignee"`
	Status   string         `json:"status"`
	Task     bot.TaskStatus `json:"task"`
	Error    string         `json:"error,omitempty"`
}

// proposalEvent is a `proposal` event's data: the proposal, and the
// request it answers, whose draft it replaces.
type proposalEvent struct {
	httpapi.ProposalView
	RequestID board.RequestID `json:"request_id,omitempty"`
}

// Draft shows the cards of a plan being written, marked as drafts.
func (c *Console) Draft(_ context.Context, d bot.Draft) error {
	v := draftView{RequestID: d.Request, Title: d.Title, Cards: make([]draftCard, 0, len(d.Cards)), Draft: true}
	for _, card := range d.Cards {
		v.Cards = append(v.Cards, draftCard{TempID: card.TempID, Title: card.Title, Assignee: card.Assignee, AcceptanceCriteria: card.AcceptanceCriteria})
	}
	c.publishLive(d.Thread.Channel.ID, "draft:"+string(d.Request), "draft", v)
	return nil
}

// RunProgress shows a run's cards as they stand.
func (c *Console) RunProgress(_ context.Context, p bot.RunProgress) error {
	v := runView{RunID: p.Run.ID, Number: p.Run.Number, BoardID: p.Run.Board, BoardTitle: p.BoardTitle, State: p.Run.State,
		Ended: p.Ended, EditionURL: p.EditionURL, Tasks: make([]runTask, 0, len(p.Run.Cards))}
	for _, rc := range p.Run.Cards {
		v.Tasks = append(v.Tasks, runTask{CardID: rc.Card, Handle: rc.Handle, Title: rc.Title, Assignee: rc.Assignee,
			Status: rc.Status, Task: bot.TaskStatusOf(rc.Status, rc.Error != ""), Error: rc.Error})
	}
	c.publishLive(p.Thread.Channel.ID, "run:"+string(p.Run.ID), "run_progress", v)
	return nil
}

// publishLive hands a live event to the channel's subscribers and holds
// it, in place of the one before under key, for browsers that connect
// later.
func (c *Console) publishLive(name, key, typ string, data any) {
	c.load(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.channel(name)
	ev := c.emit(ch, typ, data)
	if ch.live == nil {
		ch.live = map[string]Event{}
	}
	ch.live[key] = ev
	if len(ch.live) > maxLive {
		oldest := ""
		for k, e := range ch.live {
			if oldest == "" || e.ID < ch.live[oldest].ID {
				oldest = k
			}
		}
		delete(ch.live, oldest)
	}
}

// answered forgets the draft of request id, which its answer replaces.
func (c *Console) answered(name string, id board.RequestID) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.channels[name]; ok {
		delete(ch.live, "draft:"+string(id))
	}
}

// draftLife is how long a draft is held without news: a request whose
// answer this replica never posts (another replica took it over) leaves
// no draft behind for good.
const draftLife = 10 * time.Minute

// liveAfter is ch's live events after lastID, in order, forgetting
// drafts older than draftLife; c.mu is held.
func (ch *channel) liveAfter(lastID int64) []Event {
	var out []Event
	for key, ev := range ch.live {
		if at, err := time.Parse(time.RFC3339, ev.At); strings.HasPrefix(key, "draft:") && (err != nil || time.Since(at) > draftLife) {
			delete(ch.live, key)
			continue
		}
		if ev.ID > lastID {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
