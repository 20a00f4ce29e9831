package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// modelTime is how long the preview workload's stand-in model takes.
const modelTime = 2 * time.Second

// harness is one run of the workloads.
type harness struct {
	bin, self, logDir, pprofDir string
	clusterURL                  string // the Redis Cluster of the cluster workload
	rounds, previewWorkers      int
	ingestTime                  time.Duration
	run                         string // this run's id, in every key and channel it makes
	rdb                         redis.UniversalClient
	slack                       *slackStub
	slackURL                    string
	client                      *http.Client
	stderr                      io.Writer
}

func runHarness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/bobnet", "the bobnet binary (make build)")
	rounds := fs.Int("rounds", 5, "rounds of each workload, BobNet and bare interleaved in each")
	workloads := fs.String("workloads", "approve,ingest,preview", "the workloads to run, comma-separated (cluster: BobNet on -cluster-url beside BobNet on REDIS_URL)")
	clusterURL := fs.String("cluster-url", os.Getenv("LOADBENCH_CLUSTER_URL"), "the Redis Cluster of the cluster workload, in go-redis's cluster URL form")
	ingestTime := fs.Duration("ingest-time", 3*time.Second, "how long each side of an ingest round sends events")
	previewWorkers := fs.Int("preview-workers", 32, "BOBNET_WORKERS of the preview workload, and the bare path's workers")
	logDir := fs.String("logs", "bin/loadbench-logs", "folder for the processes' logs")
	pprofDir := fs.String("pprof", "", "folder for BobNet's CPU and allocation profiles of each workload (a -tags pprof build)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || *previewWorkers < 1 || *ingestTime <= 0 {
		return errors.New("-rounds, -preview-workers and -ingest-time must be positive")
	}
	wanted := strings.Split(*workloads, ",")
	for _, w := range wanted {
		if !slices.Contains([]string{"approve", "ingest", "preview", "cluster"}, w) {
			return fmt.Errorf("-workloads: unknown workload %q (approve, ingest, preview, cluster)", w)
		}
		if w == "cluster" && *clusterURL == "" {
			return errors.New("-workloads cluster needs -cluster-url (or LOADBENCH_CLUSTER_URL): scripts/bench.sh cluster starts one")
		}
	}
	if _, err := os.Stat(*bin); err != nil {
		return fmt.Errorf("-bin: %w (make build first)", err)
	}
	_, redisURL, mode, err := services(true)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*logDir, 0o755); err != nil {
		return err
	}
	if *pprofDir != "" {
		if err := os.MkdirAll(*pprofDir, 0o755); err != nil {
			return err
		}
	}
	rdb, err := newRedis(redisURL, mode, 64)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := pingRedis(ctx, rdb); err != nil {
		return err
	}
	slack := newSlackStub()
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()
	h := &harness{
		bin: *bin, self: self, clusterURL: *clusterURL, logDir: *logDir, pprofDir: *pprofDir, rounds: *rounds, previewWorkers: *previewWorkers,
		ingestTime: *ingestTime, run: strconv.FormatInt(time.Now().UnixNano(), 36), rdb: rdb,
		slack: slack, slackURL: slackSrv.URL + "/api/", client: newClient(ingestClients), stderr: stderr,
	}
	loadBefore := loadAverage()
	var figs, clusterFigs []*figure
	for _, w := range wanted {
		var f []*figure
		switch w {
		case "cluster":
			clusterFigs, err = h.cluster(ctx)
		case "approve":
			f, err = h.approve(ctx)
		case "ingest":
			f, err = h.ingest(ctx)
		case "preview":
			f, err = h.preview(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
		figs = append(figs, f...)
	}
	fmt.Fprintf(stdout, "\nloadbench: %d rounds, %s, %d cores, load average %s before and %s after\n\n",
		h.rounds, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), loadBefore, loadAverage())
	if len(figs) > 0 {
		if err := writeTable(stdout, figs); err != nil {
			return err
		}
	}
	if len(clusterFigs) > 0 {
		if len(figs) > 0 {
			fmt.Fprintln(stdout)
		}
		if err := writeTableOf(stdout, clusterFigs, "on the cluster", "on one Redis, same run"); err != nil {
			return err
		}
	}
	for _, f := range append(figs, clusterFigs...) {
		if !f.Met() {
			fmt.Fprintf(stdout, "\nloadbench: %s misses its goal (%s)\n", f.Name, f.Goal)
		}
	}
	return nil
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg
// says; "?" where there is none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(raw))[0]
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.stderr, "loadbench: "+format+"\n", args...)
}

// startBare starts one of the bare implementations (a subcommand of this
// program) with args and waits for its health check.
func (h *harness) startBare(sub string, args ...string) (*proc, string, error) {
	return h.startBareOn(nil, sub, sub, args...)
}

// startBareOn is startBare with env added to the process's environment
// (another REDIS_URL), logging to name.log.
func (h *harness) startBareOn(env []string, name, sub string, args ...string) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	p, err := startProc(name, h.self, append([]string{sub, "-listen", addr}, args...), env, filepath.Join(h.logDir, name+".log"))
	if err != nil {
		return nil, "", err
	}
	if err := p.waitReady("http://"+addr+"/healthz", 30*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, "http://" + addr, nil
}

// profile collects BobNet's CPU profile while the rounds run (call the
// returned func when they are done) and its allocations since its start,
// when -pprof is set.
func (h *harness) profile(ctx context.Context, b *bobnet, workload string, seconds int) func() {
	if h.pprofDir == "" {
		return func() {}
	}
	save := func(path, file string) {
		code, out, err := call(ctx, &http.Client{Timeout: time.Duration(seconds+30) * time.Second}, http.MethodGet, b.admin+path, nil)
		if err != nil || code != http.StatusOK {
			h.logf("profile %s: %d %v (is the binary built with -tags pprof?)", path, code, err)
			return
		}
		if err := os.WriteFile(filepath.Join(h.pprofDir, file), out, 0o644); err != nil {
			h.logf("profile: %v", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), workload+"-cpu.pprof")
	}()
	return func() {
		<-done
		save("/debug/pprof/allocs", workload+"-allocs.pprof")
	}
}

// approve is the approve workload: BobNet with a stand-in model that
// answers at once, beside the bare approve endpoint.
func (h *harness) approve(ctx context.Context) ([]*figure, error) {
	model := httptest.NewServer(newModel(0, false))
	defer model.Close()
	bob, err := startBobnet(h.bin, "approve", h.run, h.logDir, model.URL, h.slackURL)
	if err != nil {
		return nil, err
	}
	defer bob.stop()
	prefix := "loadbench:" + h.run + ":bare-approve:"
	bare, bareURL, err := h.startBare("bare-approve", "-prefix", prefix)
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	tokens, err := proposerTokens(ctx, h.client, bob.url, h.run, approveCount)
	if err != nil {
		return nil, err
	}
	h.logf("approve: warming up")
	if _, _, err := approveRound(ctx, h.client, tokens, bob.url, bareURL, h.rdb, prefix, h.run, -1, 5); err != nil {
		return nil, err
	}
	fig := &figure{Name: "approve → committed 64-card board, p50", Unit: "ms", Goal: goal{Ratio: 1.3}}
	stopProfile := h.profile(ctx, bob, "approve", 10*h.rounds)
	for r := range h.rounds {
		bl, ba, err := approveRound(ctx, h.client, tokens, bob.url, bareURL, h.rdb, prefix, h.run, r, approveCount)
		if err != nil {
			return nil, err
		}
		fig.add(ms(percentile(bl, 50)), ms(percentile(ba, 50)))
		h.logf("approve round %d: p50 %.2f ms, bare %.2f ms", r+1, fig.Bob[r], fig.Bare[r])
	}
	stopProfile()
	return []*figure{fig}, nil
}

// ingest is the ingest workload: signed Slack events from 64 clients,
// one channel and a channel each, BobNet beside the bare handler on the
// same Redis, alternating. BobNet's one worker is held by a model that
// does not answer, so both sides do only the intake.
func (h *harness) ingest(ctx context.Context) ([]*figure, error) {
	model := httptest.NewServer(newModel(0, true))
	defer model.Close()
	bob, err := startBobnet(h.bin, "ingest", h.run, h.logDir, model.URL, h.slackURL, "BOBNET_WORKERS=1")
	if err != nil {
		return nil, err
	}
	defer bob.stop()
	bare, bareURL, err := h.startBare("bare-ingest", "-stream", "loadbench:"+h.run+":bare-ingest")
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	sides := []ingestSide{{bob.cmd.Process.Pid, h.rdb, bob.url}, {bare.cmd.Process.Pid, h.rdb, bareURL}}
	kinds := ingestKinds
	var figs []*figure
	for _, k := range kinds {
		figs = append(figs,
			&figure{Name: "signed Slack events, 64 clients, " + k.name + ", throughput", Unit: "req/s", Goal: goal{Ratio: 0.9, AtLeast: true}},
			&figure{Name: "signed Slack events, 64 clients, " + k.name + ", p99", Unit: "ms", Goal: goal{Ratio: 1.5}},
			&figure{Name: "signed Slack events, " + k.name + ": the server's CPU per event", Unit: "µs"},
			&figure{Name: "signed Slack events, " + k.name + ": Redis's CPU per event", Unit: "µs"})
	}
	h.logf("ingest: warming up")
	for i, k := range kinds {
		for _, u := range []string{bob.url, bareURL} {
			if _, err := ingestRun(ctx, h.client, u+"/slack/events", fmt.Sprint(h.run, "w", i, len(u)), time.Second, k.event); err != nil {
				return nil, err
			}
		}
	}
	stopProfile := h.profile(ctx, bob, "ingest", int(4*h.ingestTime.Seconds())*h.rounds)
	for r := range h.rounds {
		for i, k := range kinds {
			res, cpu, rcpu, err := h.ingestRound(ctx, sides, r, fmt.Sprint(h.run, "r", r, "k", i), k.event)
			if err != nil {
				return nil, err
			}
			figs[4*i].add(res[0].PerSecond, res[1].PerSecond)
			figs[4*i+1].add(ms(res[0].P99), ms(res[1].P99))
			figs[4*i+2].add(cpu[0], cpu[1])
			figs[4*i+3].add(rcpu[0], rcpu[1])
			h.logf("ingest round %d, %s: %.0f req/s p99 %.2f ms, bare %.0f req/s p99 %.2f ms", r+1, k.name,
				res[0].PerSecond, ms(res[0].P99), res[1].PerSecond, ms(res[1].P99))
		}
	}
	stopProfile()
	return figs, nil
}

// preview is the preview workload: a model that answers in exactly
// modelTime, the stand-in Slack, previewWorkers workers; 20 mentions in
// 20 channels at once, beside the bare path (XREADGROUP, the model, one
// chat.postMessage).
func (h *harness) preview(ctx context.Context) ([]*figure, error) {
	m := newModel(modelTime, false)
	model := httptest.NewServer(m)
	defer model.Close()
	bob, err := startBobnet(h.bin, "preview", h.run, h.logDir, model.URL, h.slackURL, fmt.Sprint("BOBNET_WORKERS=", h.previewWorkers))
	if err != nil {
		return nil, err
	}
	defer bob.stop()
	stream := "loadbench:" + h.run + ":bare-preview"
	bare, _, err := h.startBare("bare-preview", "-stream", stream, "-workers", fmt.Sprint(h.previewWorkers),
		"-model", model.URL+"/v1", "-slack", h.slackURL)
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	p50 := &figure{Name: fmt.Sprintf("preview after its model, 20 mentions, %d workers, p50", h.previewWorkers), Unit: "ms", Goal: goal{Abs: 50}}
	p99 := &figure{Name: fmt.Sprintf("preview after its model, 20 mentions, %d workers, p99", h.previewWorkers), Unit: "ms", Goal: goal{Abs: 200}}
	before := &figure{Name: "preview: acknowledged → its model call, p50", Unit: "ms"}
	after := &figure{Name: "preview: the model's answer → the preview at Slack, p50", Unit: "ms"}
	cpuFig := &figure{Name: "preview: the server's CPU per preview", Unit: "µs"}
	pids := map[bool]int{true: bob.cmd.Process.Pid, false: bare.cmd.Process.Pid}
	var cpu [2]float64
	var split [2][2][]time.Duration // [side][before, after]
	side := func(r int, bobSide bool) ([]time.Duration, error) {
		var acks map[string]time.Time
		var err error
		meter := &cpuMeter{pid: pids[bobSide], rdb: h.rdb}
		if err := meter.resume(ctx); err != nil {
			return nil, err
		}
		if bobSide {
			acks, err = previewBobnet(ctx, h.client, bob.url, fmt.Sprint(h.run, "r", r))
		} else {
			acks, err = previewBare(ctx, h.rdb, stream, fmt.Sprint(h.run, "r", r))
		}
		if err != nil {
			return nil, err
		}
		lat, err := afterModel(acks, h.slack, modelTime, 30*time.Second)
		i := map[bool]int{true: 0, false: 1}[bobSide]
		time.Sleep(500 * time.Millisecond) // the work after a preview (the Home tab) is done, and counted
		meter.pause(ctx)
		cpu[i], _ = meter.perRequest(len(acks))
		split[i][0], split[i][1] = phases(acks, m, h.slack)
		return lat, err
	}
	h.logf("preview: warming up")
	for _, s := range []bool{true, false} {
		if _, err := side(-1, s); err != nil {
			return nil, err
		}
	}
	stopProfile := h.profile(ctx, bob, "preview", 6*h.rounds)
	for r := range h.rounds {
		var lat [2][]time.Duration
		for _, s := range []bool{r%2 == 0, r%2 == 1} {
			l, err := side(r, s)
			if err != nil {
				return nil, err
			}
			if s {
				lat[0] = l
			} else {
				lat[1] = l
			}
		}
		p50.add(ms(percentile(lat[0], 50)), ms(percentile(lat[1], 50)))
		p99.add(ms(percentile(lat[0], 99)), ms(percentile(lat[1], 99)))
		before.add(ms(percentile(split[0][0], 50)), ms(percentile(split[1][0], 50)))
		after.add(ms(percentile(split[0][1], 50)), ms(percentile(split[1][1], 50)))
		cpuFig.add(cpu[0], cpu[1])
		h.logf("preview round %d: p50 %.1f ms p99 %.1f ms, bare p50 %.1f ms p99 %.1f ms", r+1, p50.Bob[r], p99.Bob[r], p50.Bare[r], p99.Bare[r])
	}
	stopProfile()
	return []*figure{p50, p99, before, after, cpuFig}, nil
}
