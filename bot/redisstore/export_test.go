package redisstore

import "github.com/bobnet/bobnet/board"

// AdmitInSteps makes s admit as on a cluster, in steps each on one slot,
// whatever its server: the slot test checks a cluster's scripts on a
// single Redis.
func AdmitInSteps(s *InFlight) { s.admits.one = false }

// AdmittedID is the id s gives a new request of id given and dedupe key
// key: on one server, with a key, the one the key derives.
func AdmittedID(s *InFlight, given board.RequestID, key string) board.RequestID {
	if s.admits.one && key != "" {
		return board.RequestIDFor(key)
	}
	return given
}
