package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterBobnets starts two BobNets for one phase of the cluster
// workload: one on the harness's single Redis, one on the Redis Cluster
// at h.clusterURL (BOBNET_REDIS_MODE=cluster, so its admissions wait for
// a replica as a deployment's do), the same in all else.
func (h *harness) clusterBobnets(phase, modelURL string, extra ...string) (single, cluster *bobnet, err error) {
	single, err = startBobnet(h.bin, phase+"-single", h.run, h.logDir, modelURL, h.slackURL, extra...)
	if err != nil {
		return nil, nil, err
	}
	cluster, err = startBobnet(h.bin, phase+"-cluster", h.run, h.logDir, modelURL, h.slackURL,
		append([]string{"REDIS_URL=" + h.clusterURL, "BOBNET_REDIS_MODE=cluster"}, extra...)...)
	if err != nil {
		single.stop()
		return nil, nil, err
	}
	return single, cluster, nil
}

// cluster is the cluster workload: BobNet on a Redis Cluster beside
// BobNet on the single Redis, each in a process of its own, timed by the
// same client, interleaved round by round: the ingest workload's signed
// Slack events (both kinds) and the approve workload's approvals. Each
// figure's ratio is the cluster's value over the single Redis's.
func (h *harness) cluster(ctx context.Context) ([]*figure, error) {
	// The harness's own client of the cluster, for its nodes' CPU.
	crdb, err := newRedis(h.clusterURL, "cluster", 4)
	if err != nil {
		return nil, err
	}
	defer crdb.Close()
	figs, err := h.clusterIngest(ctx, crdb)
	if err != nil {
		return nil, err
	}
	floor, err := h.clusterFloor(ctx, crdb)
	if err != nil {
		return nil, err
	}
	figs = append(figs, floor...)
	fig, err := h.clusterApprove(ctx)
	if err != nil {
		return nil, err
	}
	return append(figs, fig), nil
}

func (h *harness) clusterIngest(ctx context.Context, crdb redis.UniversalClient) ([]*figure, error) {
	model := httptest.NewServer(newModel(0, true))
	defer model.Close()
	single, cluster, err := h.clusterBobnets("ingest", model.URL, "BOBNET_WORKERS=1")
	if err != nil {
		return nil, err
	}
	defer single.stop()
	defer cluster.stop()
	sides := []*bobnet{cluster, single}
	turns := []ingestSide{{cluster.cmd.Process.Pid, crdb, cluster.url}, {single.cmd.Process.Pid, h.rdb, single.url}}
	kinds := ingestKinds
	var figs []*figure
	for _, k := range kinds {
		figs = append(figs,
			&figure{Name: "cluster: signed Slack events, 64 clients, " + k.name + ", throughput", Unit: "req/s", Goal: goal{Ratio: 0.9, AtLeast: true}},
			&figure{Name: "cluster: signed Slack events, 64 clients, " + k.name + ", p99", Unit: "ms"},
			&figure{Name: "cluster: signed Slack events, " + k.name + ": BobNet's CPU per event", Unit: "µs"},
			&figure{Name: "cluster: signed Slack events, " + k.name + ": Redis's CPU per event (every node)", Unit: "µs"})
	}
	h.logf("cluster ingest: warming up")
	for i, k := range kinds {
		for s, b := range sides {
			if _, err := ingestRun(ctx, h.client, b.url+"/slack/events", fmt.Sprint(h.run, "cw", i, "s", s), time.Second, k.event); err != nil {
				return nil, err
			}
		}
	}
	// The cluster's BobNet only: the single Redis's has its own workload.
	stopProfile := h.profile(ctx, cluster, "cluster-ingest", int(4*h.ingestTime.Seconds())*h.rounds)
	for r := range h.rounds {
		for i, k := range kinds {
			res, cpu, rcpu, err := h.ingestRound(ctx, turns, r, fmt.Sprint(h.run, "cr", r, "k", i), k.event)
			if err != nil {
				return nil, err
			}
			figs[4*i].add(res[0].PerSecond, res[1].PerSecond)
			figs[4*i+1].add(ms(res[0].P99), ms(res[1].P99))
			figs[4*i+2].add(cpu[0], cpu[1])
			figs[4*i+3].add(rcpu[0], rcpu[1])
			h.logf("cluster ingest round %d, %s: cluster %.0f req/s p99 %.2f ms, single %.0f req/s p99 %.2f ms", r+1, k.name,
				res[0].PerSecond, ms(res[0].P99), res[1].PerSecond, ms(res[1].P99))
		}
	}
	stopProfile()
	return figs, nil
}

func (h *harness) clusterApprove(ctx context.Context) (*figure, error) {
	model := httptest.NewServer(newModel(0, false))
	defer model.Close()
	single, cluster, err := h.clusterBobnets("approve", model.URL)
	if err != nil {
		return nil, err
	}
	defer single.stop()
	defer cluster.stop()
	// Tokens live in Postgres, which both share.
	tokens, err := proposerTokens(ctx, h.client, single.url, h.run+"c", approveCount)
	if err != nil {
		return nil, err
	}
	round := func(r, count int) (clusterLat, singleLat []time.Duration, err error) {
		cids, users, err := proposeRound(ctx, h.client, tokens, cluster.url, h.run+"c", r, count)
		if err != nil {
			return nil, nil, err
		}
		sids, _, err := proposeRound(ctx, h.client, tokens, single.url, h.run+"s", r, count)
		if err != nil {
			return nil, nil, err
		}
		for i := range count {
			first := (i+r)%2 == 0
			for _, clusterTurn := range []bool{first, !first} {
				base, id := single.url, sids[i]
				if clusterTurn {
					base, id = cluster.url, cids[i]
				}
				d, err := approveOne(ctx, h.client, base, id, users[i])
				if err != nil {
					return nil, nil, err
				}
				if clusterTurn {
					clusterLat = append(clusterLat, d)
				} else {
					singleLat = append(singleLat, d)
				}
			}
		}
		return clusterLat, singleLat, nil
	}
	h.logf("cluster approve: warming up")
	if _, _, err := round(-1, 5); err != nil {
		return nil, err
	}
	fig := &figure{Name: "cluster: approve → committed 64-card board, p50", Unit: "ms", Goal: goal{Ratio: 1.1}}
	for r := range h.rounds {
		cl, sl, err := round(r, approveCount)
		if err != nil {
			return nil, err
		}
		fig.add(ms(percentile(cl, 50)), ms(percentile(sl, 50)))
		h.logf("cluster approve round %d: p50 cluster %.2f ms, single %.2f ms", r+1, fig.Bob[r], fig.Bare[r])
	}
	return fig, nil
}

// clusterFloor times the bare ingest handler on the cluster beside the
// same on the single Redis, a channel each: what the least an ingest
// does (one XADD, to one of 16 streams on the cluster) reads on this
// machine when the cluster's six servers share its cores, without and
// with the WAIT 1 a durable admission on a cluster ends with. BobNet's
// cluster figures are read against these.
func (h *harness) clusterFloor(ctx context.Context, crdb redis.UniversalClient) ([]*figure, error) {
	stream := "loadbench:" + h.run + ":floor"
	clusterEnv := []string{"REDIS_URL=" + h.clusterURL, "LOADBENCH_REDIS_MODE=cluster"}
	type side struct {
		name string
		env  []string
		args []string
		rdb  redis.UniversalClient
		p    *proc
		url  string
	}
	sides := []*side{
		{name: "bare-ingest-cluster", env: clusterEnv, args: []string{"-stream", stream, "-streams", "16"}, rdb: crdb},
		{name: "bare-ingest-cluster-wait", env: clusterEnv, args: []string{"-stream", stream + "w", "-streams", "16", "-wait"}, rdb: crdb},
		{name: "bare-ingest-single", args: []string{"-stream", stream}, rdb: h.rdb},
	}
	var err error
	for _, s := range sides {
		if s.p, s.url, err = h.startBareOn(s.env, s.name, "bare-ingest", s.args...); err != nil {
			return nil, err
		}
		defer s.p.stop()
	}
	figs := []*figure{
		{Name: "cluster floor: the bare handler (one XADD), a channel each, throughput", Unit: "req/s"},
		{Name: "cluster floor: the bare handler (one XADD), a channel each: Redis's CPU per event (every node)", Unit: "µs"},
		{Name: "cluster floor: the bare handler with WAIT 1, a channel each, throughput", Unit: "req/s"},
		{Name: "cluster floor: the bare handler with WAIT 1, a channel each: Redis's CPU per event (every node)", Unit: "µs"},
	}
	turns := make([]ingestSide, len(sides))
	for i, s := range sides {
		turns[i] = ingestSide{s.p.cmd.Process.Pid, s.rdb, s.url}
	}
	h.logf("cluster floor: warming up")
	for i, s := range sides {
		if _, err := ingestRun(ctx, h.client, s.url+"/slack/events", fmt.Sprint(h.run, "fw", i), time.Second, eachEvents); err != nil {
			return nil, err
		}
	}
	for r := range h.rounds {
		res, _, rcpu, err := h.ingestRound(ctx, turns, r, fmt.Sprint(h.run, "fr", r), eachEvents)
		if err != nil {
			return nil, err
		}
		figs[0].add(res[0].PerSecond, res[2].PerSecond)
		figs[1].add(rcpu[0], rcpu[2])
		figs[2].add(res[1].PerSecond, res[2].PerSecond)
		figs[3].add(rcpu[1], rcpu[2])
		h.logf("cluster floor round %d: cluster %.0f req/s, with WAIT %.0f req/s, single %.0f req/s", r+1,
			res[0].PerSecond, res[1].PerSecond, res[2].PerSecond)
	}
	return figs, nil
}
