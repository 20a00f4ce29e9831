package board

import "time"

// Summarize computes a Status from a board's cards.
func Summarize(b Board, cards []Card) Status {
	st := Status{Board: b, Counts: map[string]int{}, Waiting: []Card{}, Ready: []Card{}}
	for _, s := range Statuses {
		st.Counts[s] = 0
	}
	done := map[CardID]bool{}
	for _, c := range cards {
		st.Counts[c.Status]++
		done[c.ID] = c.Status == "Done"
	}
	for _, c := range cards {
		if c.Status == "Done" {
			continue
		}
		blocked := false
		for _, d := range c.DependsOn {
			blocked = blocked || !done[d]
		}
		switch {
		case blocked:
			st.Waiting = append(st.Waiting, c)
		case c.Status == "Backlog" || c.Status == "Ready":
			st.Ready = append(st.Ready, c)
		}
	}
	return st
}

// Listing is a board as a list of boards shows it: what it is and how far
// along its cards are.
type Listing struct {
	ID        ID
	Name      string
	Key       string
	Channel   string
	CreatedAt time.Time
	Cards     int
	// Counts are the cards by status, only statuses in use.
	Counts map[string]int
}
