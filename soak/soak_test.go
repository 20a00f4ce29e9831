// Package soak runs BobNet as production does — three `bobnet serve`
// replicas on one Postgres and one Redis — under a mixed workload while
// replicas are killed and the databases restarted, then checks the
// promise: every acknowledged request answered once, every approved plan
// one board equal to its preview, nothing both approved and cancelled,
// every event delivered. `make soak` runs it for minutes; `make test` runs
// a 60-second version.
package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	hookSecret     = "whsec_c29hay1ob29rLXNlY3JldC1mb3ItdGVzdHM="
	callbackSecret = "whsec_c29hay1jYWxsYmFjay1zZWNyZXQtdGVzdHM="
	slackSecret    = "soak-slack-signing-secret"
)

// TestSoak: BOBNET_SOAK_DURATION sets the length of the workload (make
// soak: 5m); 60s when unset. It needs the machine's Postgres and Redis
// packages, which make test installs; like the other integration tests it
// runs when DATABASE_URL is set. Replicas are killed and stopped, Redis
// and Postgres restarted, in turn (runFaults).
func TestSoak(t *testing.T) {
	length := soakLength(t)
	root := moduleRoot(t)
	svc := startServices(t, root)
	soak(t, root, svc, length, runFaults, nil)
}

// soakLength is BOBNET_SOAK_DURATION, 60 s when unset; it skips the test
// when neither it nor DATABASE_URL is set.
func soakLength(t *testing.T) time.Duration {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" && os.Getenv("BOBNET_SOAK_DURATION") == "" {
		t.Skip("DATABASE_URL is unset: make test sets it (the soak starts servers of its own)")
	}
	length := 60 * time.Second
	if v := os.Getenv("BOBNET_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BOBNET_SOAK_DURATION: %v", err)
		}
		length = d
	}
	return length
}

// faultFunc makes faults while the workload runs, until ctx ends; the
// channel it returns closes when it has stopped.
type faultFunc func(ctx context.Context, t *testing.T, svc *services, replicas []*replica, mdl *model, length time.Duration) <-chan struct{}

// soak runs three replicas on svc under the mixed workload for length
// while faults runs, lets them settle, and checks the promise. intake,
// when not nil, records every attempt to hand BobNet a request, and
// figures turns it into rows of the table once the workload ended. It
// returns what the clients saw.
func soak(t *testing.T, root string, svc *services, length time.Duration, faults faultFunc, intake *intakeLog) *ledger {
	bin := buildBobNet(t, root)

	// The model is sometimes slower than the reclaim time (3s) and the
	// Slack API sometimes takes most of a post's time.
	mdl := newModel(t, 4*time.Second)
	slk := newSlackAPI(t, 3*time.Second)
	rcv := newReceiver(t, callbackSecret)
	clock := newFakeClock(t, springStart)
	profiles := writeProfiles(t)
	hooks := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(hooks, fmt.Appendf(nil, `hooks:
  forms:
    deciders: [alice, bob]
    callbacks: [{url: %q, secret: %q}]
outbound:
  allow_hosts: [127.0.0.1]
  allow_private: [127.0.0.1/32]
  retry_base: 100ms
  retry_max: 2s
`, rcv.srv.URL+"/forms", callbackSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"DATABASE_URL=" + svc.databaseURL, "REDIS_URL=" + svc.redisURL,
		"OPENAI_BASE_URL=" + mdl.srv.URL(), "BOBNET_MODEL=soak-model", "BOBNET_API_TOKEN=" + apiToken,
		"BOBNET_RECLAIM_IDLE=3s", "BOBNET_WORKERS=2", "BOBNET_USER_RATE=100000/1m", "BOBNET_CHANNEL_RATE=100000/1m",
		"BOBNET_ANY_MEMBER_DECIDES=true", "BOBNET_HOOK_SECRETS=forms=" + hookSecret, "BOBNET_HOOKS_FILE=" + hooks, "BOBNET_CALLBACK_SECRET=" + callbackSecret,
		"SLACK_BOT_TOKEN=xoxb-soak", "SLACK_SIGNING_SECRET=" + slackSecret, "SLACK_API_URL=" + slk.srv.URL + "/api/",
		"BOBNET_LOG_LEVEL=debug",
		"BOBNET_TEST_CLOCK=" + clock.path, "BOBNET_PROFILES_DIR=" + profiles, "BOBNET_RUN_DEADLINE=1m", "BOBNET_RUN_WORKERS=2",
	}
	env = append(env, svc.redisEnv...)
	var replicas []*replica
	for _, name := range []string{"a", "b", "c"} {
		// Each replica names the model after itself, so the scripted
		// model knows which one works a card.
		r := newReplica(t, bin, name, append(slices.Clone(env), "BOBNET_MODEL=soak-model-"+name))
		r.start(t)
		replicas = append(replicas, r)
	}
	if t.Failed() {
		t.FailNow()
	}
	var bases []string
	for _, r := range replicas {
		bases = append(bases, r.url)
	}
	rcv.setReplicas(bases)
	ctx := context.Background()
	if code, out := replicas[0].call(ctx, "PUT", "/api/v1/policies/console:soak-q", map[string]any{"deciders": []string{"alice", "bob"}, "approvals": 2}); code != 200 {
		t.Fatalf("quorum policy: %d %v", code, out)
	}

	led := &ledger{decided: map[string]string{}}
	w := &workload{replicas: replicas, ledger: led, hookSecret: hookSecret, slackSecret: slackSecret, answerTimeout: 90 * time.Second, intake: intake}
	runs := setupRuns(t, w, svc, slk, clock)
	people, stopPeople := context.WithCancel(ctx)
	defer stopPeople()
	var around sync.WaitGroup
	around.Go(func() { runs.reviewLoop(people) })
	around.Go(func() { runs.watchLeases(people) })

	work, stopWork := context.WithTimeout(ctx, length)
	defer stopWork()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { w.run(work) })
	}
	wg.Go(func() { runs.clockLoop(work, t, length, 3*time.Second) })
	faulted := faults(work, t, svc, replicas, mdl, length)

	wg.Wait()
	<-faulted
	// Everything back up; let the stragglers (reclaimed requests, event
	// retries) finish.
	for _, r := range replicas {
		if r.exited() {
			r.start(t)
		}
	}
	settle(t, svc, replicas, led, slk)
	settleRuns(t, svc)
	stopPeople()
	around.Wait()
	check(t, svc, replicas, mdl, slk, rcv, led, runs, intake.figures(t))
	return led
}

// settleRuns waits until no run is going and every end is told (each
// ends done, stopped, or at its deadline, a minute; an end a killed
// replica left untold is told by another within a minute), or two minutes
// pass.
func settleRuns(t *testing.T, svc *services) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if runsGoing(context.Background(), svc) == 0 {
			// Let the last ends reach their threads.
			time.Sleep(5 * time.Second)
			return
		}
		time.Sleep(time.Second)
	}
	t.Logf("settle: runs still going after two minutes")
}

// writeProfiles writes the newspaper's assignee profiles: the researchers
// and reviewers worked by the model with a review, the planner by the
// model without one, the coder by the forms hook (the receiver) with one.
func writeProfiles(t *testing.T) string {
	dir := t.TempDir()
	for name, front := range map[string]string{
		"Researcher": "runner: model\nreview: always",
		"Reviewer":   "runner: model\nreview: always",
		"Planner":    "runner: model\nreview: none",
		"Coder":      "runner: hook:forms\nreview: always",
	} {
		sub := filepath.Join(dir, strings.ToLower(name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: The %s of the soak's newspaper.\n%s\n---\nWork the card.\n", name, name, front)
		if err := os.WriteFile(filepath.Join(sub, "AGENT.md"), []byte(md), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runFaults kills, stops and restarts things in turn while the workload
// runs: SIGKILL and SIGTERM of a replica, a Redis restart, a Postgres
// restart. The channel closes when it has stopped.
func runFaults(ctx context.Context, t *testing.T, svc *services, replicas []*replica, mdl *model, length time.Duration) <-chan struct{} {
	done := make(chan struct{})
	every := max(length/9, 5*time.Second)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			r := replicas[i%len(replicas)]
			switch i % 4 {
			case 0:
				// Mid-card when it can: a replica whose runner waits on
				// a slow model answer.
				if k := mdl.working(replicas, 5*time.Second); k != nil {
					r = k
					mdl.killedMidCard.Add(1)
				}
				t.Logf("fault: SIGKILL %s", r.name)
				r.signal(syscall.SIGKILL)
				r.wait(10 * time.Second)
				r.start(t)
			case 1:
				t.Logf("fault: restart redis")
				svc.restart(t, "redis", time.Second)
			case 2:
				t.Logf("fault: SIGTERM %s", r.name)
				r.signal(syscall.SIGTERM)
				if !r.wait(40 * time.Second) {
					t.Errorf("%s did not stop within 40s of SIGTERM", r.name)
					r.signal(syscall.SIGKILL)
					r.wait(10 * time.Second)
				}
				r.start(t)
			case 3:
				t.Logf("fault: restart postgres")
				svc.restart(t, "postgres", time.Second)
			}
		}
	}()
	return done
}

// settle waits until every acknowledged request and mention has its
// answer and the outbox has nothing left to send, or two minutes: a
// request whose planning met a database restart is tried again after a
// reclaim, and is answered then.
func settle(t *testing.T, svc *services, replicas []*replica, led *ledger, slk *slackAPI) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		open := 0
		for _, rq := range led.requests {
			code, out := replicas[0].call(ctx, "GET", "/api/v1/requests/"+rq.ID, nil)
			if code != 200 || (out["state"] != "done" && out["state"] != "failed") {
				open++
			}
		}
		answered := map[string]bool{}
		for _, m := range slk.messages() {
			answered[m.ThreadTS] = true
		}
		for _, m := range led.mentions {
			if !answered[m.TS] {
				open++
			}
		}
		if open == 0 && pendingDeliveries(t, svc) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Logf("settle: still busy after two minutes")
}

// table prints rows as an aligned two-column table.
func table(rows [][2]string) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %s\n", width, r[0], r[1])
	}
	return b.String()
}
