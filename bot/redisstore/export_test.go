package redisstore

// AdmitInSteps makes s admit as on a cluster, in steps each on one slot,
// whatever its server: the slot test checks a cluster's scripts on a
// single Redis.
func AdmitInSteps(s *InFlight) { s.admits.one = false }
