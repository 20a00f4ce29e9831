package outbox

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// JobPayload is the body of card.dispatched and card.output, in the
// Standard Webhooks shape.
type JobPayload struct {
	Type      bot.EventType `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Data      JobData       `json:"data"`
}

// JobData is what card.dispatched and card.output say of a card of a
// run. Inputs, Feedback, Attempt and Callback are card.dispatched's;
// Output is card.output's.
type JobData struct {
	Channel   string      `json:"channel"`
	Actor     string      `json:"actor,omitempty"`
	BoardID   string      `json:"board_id"`
	BoardName string      `json:"board_name"`
	BoardURL  string      `json:"board_url"`
	Card      JobCard     `json:"card"`
	Run       JobRun      `json:"run"`
	Inputs    []JobInput  `json:"inputs,omitzero"`
	Feedback  string      `json:"feedback,omitempty"`
	Attempt   int         `json:"attempt,omitempty"`
	Callback  *JobCallout `json:"callback,omitempty"`
	Output    *string     `json:"output,omitempty"`
}

// JobCard is the card a runner works: what it asks for.
type JobCard struct {
	ID                 string   `json:"id"`
	Handle             string   `json:"handle"`
	Title              string   `json:"title"`
	Body               string   `json:"body"`
	Assignee           string   `json:"assignee"`
	Status             string   `json:"status"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
}

// JobRun is the run a card is worked in.
type JobRun struct {
	ID      string `json:"id"`
	Number  int    `json:"number"`
	BoardID string `json:"board_id"`
	URL     string `json:"url"`
}

// JobInput is the output of a card the dispatched card depends on: data
// to work with, never instructions.
type JobInput struct {
	CardID string `json:"card_id"`
	Handle string `json:"handle"`
	Title  string `json:"title"`
	Output string `json:"output"`
}

// JobCallout is where a tool posts a dispatched card's output, and the
// bearer token it posts with.
type JobCallout struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// encodeJob is a card.dispatched or card.output event's row.
func encodeJob(ev bot.Event, eps []Endpoint) ([]board.OutboundEvent, error) {
	j := ev.Job
	c := j.Card
	d := JobData{
		Channel: ev.Channel(), Actor: ev.Actor, BoardID: string(j.Board.ID), BoardName: j.Board.Name, BoardURL: ev.BoardURL,
		Card: JobCard{ID: string(c.ID), Handle: c.Handle, Title: c.Title, Body: c.Body, Assignee: c.Assignee, Status: c.Status,
			AcceptanceCriteria: c.AcceptanceCriteria},
		Run: JobRun{ID: string(j.Run.ID), Number: j.Run.Number, BoardID: string(j.Run.Board), URL: fmt.Sprintf("%s/runs/%d", ev.BoardURL, j.Run.Number)},
	}
	if d.Card.AcceptanceCriteria == nil {
		d.Card.AcceptanceCriteria = []string{}
	}
	switch ev.Type {
	case bot.EventCardDispatched:
		d.Feedback, d.Attempt = j.Feedback, j.Attempt
		d.Inputs = []JobInput{}
		for _, in := range j.Inputs {
			d.Inputs = append(d.Inputs, JobInput{CardID: string(in.Card), Handle: in.Handle, Title: in.Title, Output: in.Output})
		}
		if ev.Callback != nil {
			d.Callback = &JobCallout{URL: ev.Callback.URL, Token: ev.Callback.Token}
		}
	case bot.EventCardOutput:
		out := j.RunCard.Output
		d.Output = &out
	}
	body, err := json.Marshal(JobPayload{Type: ev.Type, Timestamp: ev.At.UTC(), Data: d})
	if err != nil {
		return nil, fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = ep.URL
	}
	return []board.OutboundEvent{{MsgID: MsgID(ev), Type: string(ev.Type), Endpoints: urls, Body: body}}, nil
}
