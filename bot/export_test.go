package bot

// HoldStoring takes n of e's slots for storing answered plans, as n plans
// being stored would, and returns what gives them back.
func (e *Engine) HoldStoring(n int) (release func()) {
	for range n {
		e.storing <- struct{}{}
	}
	return func() {
		for range n {
			<-e.storing
		}
	}
}

// StoringAtOnce is how many answered plans an engine stores at once.
func StoringAtOnce() int { return storingAtOnce() }
