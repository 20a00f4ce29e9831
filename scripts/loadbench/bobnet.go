package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// benchToken is the API token BobNet is started with: with one, it
// answers on any host name, and the approvals carry it.
const benchToken = "loadbench-token"

// slackSecret signs the Slack events of the ingest and preview
// workloads, for BobNet and the bare handler alike.
const slackSecret = "loadbench-signing-secret"

// bobnet is a `bobnet serve` the harness started.
type bobnet struct {
	*proc
	url   string // the public listener
	admin string // the admin listener (/metrics; /debug/pprof in a -tags pprof build)
}

// startBobnet starts bin serve for one workload against the harness's
// Postgres and Redis (DATABASE_URL and REDIS_URL, and any BOBNET_REDIS_*
// of the harness's environment, passed through unchanged), the stand-in
// model at modelURL and the stand-in Slack at slackURL, with extra
// settings (BOBNET_WORKERS…) on top. Its keys go under a prefix of their
// own, so one workload's backlog never reaches the next.
func startBobnet(bin, workload, run, logDir, modelURL, slackURL string, extra ...string) (*bobnet, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	env := append([]string{
		"BOBNET_LISTEN=" + addr, "BOBNET_ADMIN_LISTEN=" + admin,
		"BOBNET_API_TOKEN=" + benchToken, "BOBNET_PUBLIC_URL=http://bobnet.loadbench",
		"BOBNET_REDIS_PREFIX=loadbench:" + run + ":" + workload + ":",
		"OPENAI_BASE_URL=" + modelURL + "/v1", "OPENAI_API_KEY=loadbench", "BOBNET_MODEL=bench",
		"SLACK_BOT_TOKEN=xoxb-loadbench", "SLACK_SIGNING_SECRET=" + slackSecret, "SLACK_API_URL=" + slackURL,
		"SLACK_APP_TOKEN=", "SLACK_CLIENT_ID=", "SLACK_CLIENT_SECRET=", "MATRIX_HOMESERVER=",
		"BOBNET_LOG_LEVEL=warn",
	}, extra...)
	p, err := startProc("bobnet ("+workload+")", bin, []string{"serve"}, env, filepath.Join(logDir, "bobnet-"+workload+".log"))
	if err != nil {
		return nil, err
	}
	b := &bobnet{proc: p, url: "http://" + addr, admin: "http://" + admin}
	if err := p.waitReady(b.admin+"/readyz", 60*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("bobnet: %w", err)
	}
	return b, nil
}
