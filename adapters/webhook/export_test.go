package webhook

// Reading is how many delivery bodies are being read now.
func (a *Adapter) Reading() int { return len(a.reading) }
