package store

import (
	"encoding/json"
	"fmt"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// cardRow and linkRow are the rows a plan writes; cardColumns turns the
// cards into insertCards' column arrays.
type cardRow struct {
	ID                 board.CardID `json:"id"`
	BoardID            board.ID     `json:"board_id"`
	Position           int          `json:"position"`
	Number             int          `json:"number"`
	TempID             string       `json:"temp_id"`
	Title              string       `json:"title"`
	Body               string       `json:"body"`
	Assignee           string       `json:"assignee"`
	Status             string       `json:"status"`
	WorkspaceMode      string       `json:"workspace_mode"`
	AcceptanceCriteria []string     `json:"acceptance_criteria"`
	SuggestedSkills    []string     `json:"suggested_skills"`
	Notes              string       `json:"notes"`
}

type linkRow struct {
	BoardID   board.ID     `json:"board_id"`
	CardID    board.CardID `json:"card_id"`
	DependsOn board.CardID `json:"depends_on"`
}

type boardRow struct {
	ID   board.ID `json:"id"`
	Name string   `json:"name"`
	Goal string   `json:"goal"`
	Key  string   `json:"key"`
}

// needsTargetBoard reports whether a plan adds to the channel's board
// (or schedules it, creating no board of its own).
func needsTargetBoard(env plan.Envelope) bool {
	creates := false
	for _, a := range env.Actions {
		if a.Type.NeedsTargetBoard() {
			return true
		}
		creates = creates || a.Type == plan.ActionCreateBoard || a.Type == plan.ActionCreateBoardWithCards
	}
	return env.Schedule() != nil && !creates
}

// layout turns a plan into the rows to insert, with new ids. Card actions
// go to target, numbered from next on; board actions to the board they
// create, numbered from 1.
func layout(env plan.Envelope, target board.ID, next int) ([]boardRow, []cardRow, []linkRow, board.ExecResult, error) {
	var boards []boardRow
	var cards []cardRow
	var links []linkRow
	res := board.ExecResult{CardIDs: map[string]board.CardID{}}
	position := 0
	numbers := map[board.ID]int{} // board -> the number its next card takes
	if target != "" {
		numbers[target] = next
	}
	for i, a := range env.Actions {
		var boardID board.ID
		switch a.Type {
		case plan.ActionCreateBoard, plan.ActionCreateBoardWithCards:
			if a.Board == nil {
				return nil, nil, nil, res, fmt.Errorf("%w: actions[%d] has no board", board.ErrInvalidPlan, i)
			}
			boardID = board.NewBoardID()
			boards = append(boards, boardRow{ID: boardID, Name: a.Board.Name, Goal: a.Board.Goal, Key: board.BoardKey(a.Board.Name)})
		case plan.ActionCreateCard, plan.ActionCreateCardBatch:
			boardID = target
		case plan.ActionUpdateCard, plan.ActionAddLinks:
			// Applied by applyChanges once the new cards exist.
			res.BoardID = target
			continue
		case plan.ActionScheduleBoard:
			// Written by queueRecord, for the board the plan ends on.
			if res.BoardID == "" {
				res.BoardID = target
			}
			continue
		default:
			return nil, nil, nil, res, fmt.Errorf("%w: actions[%d] has type %q", board.ErrInvalidPlan, i, a.Type)
		}
		res.BoardID = boardID
		if _, ok := numbers[boardID]; !ok {
			numbers[boardID] = 1
		}
		local := map[string]board.CardID{}
		for _, c := range a.Cards {
			id := board.NewCardID()
			local[c.TempID] = id
			res.CardIDs[c.TempID] = id
			status, mode := c.Status, c.WorkspaceMode
			if mode == "" {
				mode = plan.WorkspaceDirect
			}
			cards = append(cards, cardRow{
				ID: id, BoardID: boardID, Position: position, Number: numbers[boardID], TempID: c.TempID, Title: c.Title, Body: c.Body,
				Assignee: c.Assignee, Status: status, WorkspaceMode: mode,
				AcceptanceCriteria: nonNil(c.AcceptanceCriteria), SuggestedSkills: nonNil(c.SuggestedSkills), Notes: c.Notes,
			})
			position++
			numbers[boardID]++
		}
		seen := map[linkRow]bool{}
		addLink := func(card, dep string) error {
			from, ok1 := local[card]
			to, ok2 := local[dep]
			if !ok1 || !ok2 {
				return fmt.Errorf("%w: actions[%d] links %q to %q, which are not both its cards", board.ErrInvalidPlan, i, card, dep)
			}
			l := linkRow{BoardID: boardID, CardID: from, DependsOn: to}
			if !seen[l] {
				seen[l] = true
				links = append(links, l)
			}
			return nil
		}
		for _, l := range a.Links {
			if err := addLink(l.Card, l.DependsOn); err != nil {
				return nil, nil, nil, res, err
			}
		}
		// A plan that skipped normalization still has card-level depends_on.
		for _, c := range a.Cards {
			for _, d := range c.DependsOn {
				if err := addLink(c.TempID, d); err != nil {
					return nil, nil, nil, res, err
				}
			}
		}
	}
	if len(boards) > 0 {
		res.BoardID = boards[len(boards)-1].ID
	}
	res.Cards, res.Links = len(cards), len(links)
	return boards, cards, links, res, nil
}

// cardColumns is insertCards' first 13 arguments: one array per column,
// the JSON lists as JSON text.
func cardColumns(cards []cardRow) []any {
	n := len(cards)
	id, boardID, temp, title, body := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	assignee, status, mode, ac, ss, notes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	position, number := make([]int32, n), make([]int32, n)
	for i, c := range cards {
		id[i], boardID[i], temp[i], title[i], body[i] = string(c.ID), string(c.BoardID), c.TempID, c.Title, c.Body
		assignee[i], status[i], mode[i], notes[i] = c.Assignee, c.Status, c.WorkspaceMode, c.Notes
		position[i], number[i] = int32(c.Position), int32(c.Number)
		a, _ := json.Marshal(nonNil(c.AcceptanceCriteria))
		k, _ := json.Marshal(nonNil(c.SuggestedSkills))
		ac[i], ss[i] = string(a), string(k)
	}
	return []any{id, boardID, position, number, temp, title, body, assignee, status, mode, ac, ss, notes}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
