package soak

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSoakFailover is the soak through failovers (make soak with
// BOBNET_SOAK_CLUSTER=1; make test runs it for 60 s): three replicas on a
// 6-node Redis Cluster of its own (BOBNET_REDIS_MODE=cluster) and a
// Postgres primary with a synchronous standby behind one multi-host
// DATABASE_URL, under the mixed workload, while the busiest Redis master
// is SIGKILLed (a quarter in; its replica is promoted and the killed
// server started again, rejoining as a replica) and, later (half way),
// the Postgres primary is stopped and the standby promoted. Beside the
// soak's checks (every acknowledged request answered, each approval one
// board, nothing doubled), the table shows for each fault how many
// attempts to hand in a request or an approval were refused, and the
// longest window of refusals one channel (or one proposal) met.
func TestSoakFailover(t *testing.T) {
	length := soakLength(t)
	root := moduleRoot(t)
	// The pair first: pgstandby.sh installs Postgres and Redis when
	// missing (through services.sh).
	svc := newServices(t, root)
	svc.startPair(t)
	svc.startCluster(t)
	intake := &intakeLog{}
	led := soak(t, root, svc, length, failoverFaults(intake), intake)
	// For the capacity note: what Redis holds per request it took, by key
	// family (every key is still within its lifetime: requests and their
	// dedupe keys 7 days, proposals a day).
	if n := len(led.requests) + len(led.mentions); n > 0 {
		fams, err := redisFootprint(svc)
		if err != nil {
			t.Logf("redis footprint: %v", err)
		}
		var parts []string
		for _, f := range fams {
			parts = append(parts, fmt.Sprintf("%s %.2f", f.family, float64(f.bytes)/float64(n)/1024))
		}
		t.Logf("redis KiB per request taken (%d), by key family: %s", n, strings.Join(parts, ", "))
	}
}

// startPair starts the Postgres primary with its synchronous standby
// (scripts/pgstandby.sh), and points databaseURL at
// both.
func (s *services) startPair(t *testing.T) {
	t.Helper()
	s.pairDir = filepath.Join(filepath.Dir(s.dir), "pgpair")
	t.Cleanup(func() { s.pair(t, "stop") })
	out := s.pair(t, "start")
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export PG_FAILOVER_URL="); ok {
			s.databaseURL = strings.Trim(v, "'")
		}
	}
	if !strings.Contains(s.databaseURL, "target_session_attrs=read-write") {
		t.Fatalf("pgstandby.sh start printed %q", out)
	}
}

// pair runs scripts/pgstandby.sh cmd on the soak's pair and returns what
// it printed on stdout.
func (s *services) pair(t *testing.T, cmd string) string {
	t.Helper()
	c := exec.Command(filepath.Join(s.root, "scripts", "pgstandby.sh"), cmd, s.pairDir)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Errorf("pgstandby.sh %s: %v\n%s", cmd, err, stderr.String())
	}
	return stdout.String()
}

// failoverFaults is the failover soak's faults: a Redis master killed a
// quarter in, the Postgres failover half way (the primary stopped, two seconds
// with no primary, the standby promoted); each noted in intake.
func failoverFaults(intake *intakeLog) faultFunc {
	return func(ctx context.Context, t *testing.T, svc *services, _ []*replica, _ *model, length time.Duration) <-chan struct{} {
		done := make(chan struct{})
		start := time.Now()
		at := func(d time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Until(start.Add(d))):
				return true
			}
		}
		go func() {
			defer close(done)
			if !at(length / 4) {
				return
			}
			began := time.Now()
			what, times := svc.clusterFault(t)
			intake.fault(what, began)
			if times != "" {
				intake.note(what+": marked failed / replica promoted / killed server back as its replica", times)
			}
			if !at(length / 2) {
				return
			}
			began = time.Now()
			svc.pair(t, "stop-primary")
			time.Sleep(2 * time.Second)
			svc.pair(t, "promote")
			svc.mu.Lock()
			svc.restarted = time.Now()
			svc.mu.Unlock()
			t.Logf("fault: postgres primary stopped, standby promoted")
			intake.fault("postgres failover", began)
			intake.note("postgres failover: from the primary's stop to the standby promoted", time.Since(began).Round(100*time.Millisecond).String())
		}()
		return done
	}
}

// intakeLog records each attempt to hand BobNet a request or an approval
// (taken, or refused: no answer or a 5xx) and the faults, to measure how
// long each fault kept BobNet refusing. A nil log records nothing.
type intakeLog struct {
	mu       sync.Mutex
	attempts []attempt
	faults   []faultMark
	notes    [][2]string
}

type attempt struct {
	kind string // "request" or "approval"
	// lane is what the attempt went to: a request's channel, an
	// approval's proposal. On a Redis Cluster a dead master refuses only
	// the lanes whose keys it held, while the others are taken: a
	// lane's refusals are measured to the next attempt of that lane
	// taken.
	lane    string
	at      time.Time
	took    time.Duration // until its answer (or none)
	refused bool
}

type faultMark struct {
	what string
	at   time.Time
}

// record notes an attempt of kind to lane sent at sent and answered code
// now.
func (l *intakeLog) record(kind, lane string, sent time.Time, code int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, attempt{kind: kind, lane: lane, at: sent, took: time.Since(sent), refused: code == 0 || code >= 500})
}

func (l *intakeLog) fault(what string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults = append(l.faults, faultMark{what, at})
}

// note adds a row of the fault's own measures to the table.
func (l *intakeLog) note(what, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, [2]string{what, value})
}

// figures are the table's rows: the faults' notes, then for each fault
// and kind of attempt, the refusals between it and the next fault, and
// the longest window of refusals one lane met (from the first refused
// attempt of a run of them to the first attempt of the lane taken after
// it).
func (l *intakeLog) figures(t *testing.T) [][2]string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	attempts := slices.Clone(l.attempts)
	slices.SortFunc(attempts, func(a, b attempt) int { return a.at.Compare(b.at) })
	rows := slices.Clone(l.notes)
	if len(l.faults) == 0 {
		t.Errorf("the failover soak made no fault: too short a run?")
	}
	for i, f := range l.faults {
		end := time.Now()
		if i+1 < len(l.faults) {
			end = l.faults[i+1].at
		}
		for _, kind := range []string{"request", "approval"} {
			w := refusalWindows(attempts, kind, f.at, end)
			v := fmt.Sprintf("%d / %d / %s / %s", w.attempts, w.refused, w.longest.Round(100*time.Millisecond), w.slowest.Round(100*time.Millisecond))
			if w.attempts == 0 {
				t.Errorf("no %s was sent after %q: its figures say nothing", kind, f.what)
			}
			if w.open {
				v += " (still refusing at the next fault)"
				t.Errorf("after %q, %ss were still refused at the next fault or the end", f.what, kind)
			}
			rows = append(rows, [2]string{fmt.Sprintf("after %s: %ss sent / refused / longest refusal / slowest answer", f.what, kind), v})
			logRefusals(t, attempts, kind, f, end)
		}
	}
	return rows
}

// logRefusals logs when after fault f (and before end) the attempts of
// kind were refused, and to which lane: the timeline behind the table's
// longest refusal.
func logRefusals(t *testing.T, attempts []attempt, kind string, f faultMark, end time.Time) {
	var when []string
	for _, a := range attempts {
		if a.kind == kind && a.refused && !a.at.Before(f.at) && a.at.Before(end) {
			when = append(when, fmt.Sprintf("+%.1fs %s", a.at.Sub(f.at).Seconds(), a.lane))
		}
	}
	if len(when) > 0 {
		t.Logf("%ss refused after %s (since the fault): %s", kind, f.what, strings.Join(when, ", "))
	}
}

// window is what the attempts of one kind met between two faults.
type window struct {
	attempts, refused int
	// longest is the longest run of refusals of one lane, from its
	// first refused attempt to the first attempt of that lane taken
	// after it (to its last refused attempt when no attempt of the lane
	// followed); open says the last run of refusals of any lane had no
	// attempt at all taken after it.
	longest time.Duration
	open    bool
	// slowest is the longest any attempt waited for its answer.
	slowest time.Duration
}

// refusalWindows measures the attempts of kind sent in [from, to).
func refusalWindows(attempts []attempt, kind string, from, to time.Time) window {
	var w window
	type run struct{ start, last time.Time }
	runs := map[string]run{}
	var anyRun time.Time
	for _, a := range attempts {
		if a.kind != kind || a.at.Before(from) || !a.at.Before(to) {
			continue
		}
		w.attempts++
		w.slowest = max(w.slowest, a.took)
		r, inRun := runs[a.lane]
		switch {
		case a.refused:
			w.refused++
			if !inRun {
				r.start = a.at
			}
			r.last = a.at
			runs[a.lane] = r
			if anyRun.IsZero() {
				anyRun = a.at
			}
		default:
			if inRun {
				w.longest = max(w.longest, a.at.Sub(r.start))
				delete(runs, a.lane)
			}
			anyRun = time.Time{}
		}
	}
	for _, r := range runs {
		w.longest = max(w.longest, r.last.Sub(r.start))
	}
	w.open = !anyRun.IsZero()
	return w
}
