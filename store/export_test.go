package store

// SetFailBeforeCommit lets tests make an execution fail after all its rows
// are written but before commit.
func SetFailBeforeCommit(s *Store, f func() error) { s.failBeforeCommit = f }
