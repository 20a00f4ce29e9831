// Command loadbench is `make bench`'s process-level harness: it starts
// the built `bobnet serve` as a process of its own against the
// throwaway Postgres and Redis, drives it over HTTP the way traffic
// comes, and times it beside a bare implementation of each path, each in
// a process of its own, with the same client, interleaved:
//
//	loadbench [flags]            run the workloads and print the table
//	loadbench bare-approve …     the bare approve endpoint (started by the harness)
//	loadbench bare-ingest …      the bare Slack events endpoint
//	loadbench bare-preview …     the bare preview path (XREADGROUP, model, chat.postMessage)
//
// DATABASE_URL and REDIS_URL name the services; LOADBENCH_REDIS_MODE
// (single or cluster) says how the harness and the bare implementations
// read REDIS_URL. BobNet gets REDIS_URL and BOBNET_REDIS_* unchanged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the exit code: 0 done, 1
// failed, 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	var err error
	switch sub {
	case "bare-approve":
		err = runBareApprove(ctx, args[1:], stderr)
	case "bare-ingest":
		err = runBareIngest(ctx, args[1:], stderr)
	case "bare-preview":
		err = runBarePreview(ctx, args[1:], stderr)
	default:
		err = runHarness(ctx, args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadbench:", err)
		return 1
	}
	return 0
}

// services are what a bare implementation reads from the environment.
func services(needDB bool) (dbURL, redisURL, mode string, err error) {
	dbURL, redisURL, mode = os.Getenv("DATABASE_URL"), os.Getenv("REDIS_URL"), os.Getenv("LOADBENCH_REDIS_MODE")
	if redisURL == "" || (needDB && dbURL == "") {
		return "", "", "", errors.New("DATABASE_URL and REDIS_URL are required (scripts/services.sh starts throwaway ones)")
	}
	return dbURL, redisURL, mode, nil
}

// serveUntil serves h, with GET /healthz, on addr until ctx ends.
func serveUntil(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runBareApprove(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bare-approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	prefix := fs.String("prefix", "", "key prefix of the stored plans")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dbURL, redisURL, mode, err := services(true)
	if err != nil {
		return err
	}
	rdb, err := newRedis(redisURL, mode, 0)
	if err != nil {
		return err
	}
	defer rdb.Close()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	return serveUntil(ctx, *listen, bareApprove(rdb, pool, *prefix))
}

func runBareIngest(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bare-ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	stream := fs.String("stream", "", "the stream events are added to")
	streams := fs.Int("streams", 1, "streams to spread the events over, by the body's hash (a cluster's shards)")
	wait := fs.Bool("wait", false, "follow each XADD with WAIT 1 on its master")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stream == "" {
		return errors.New("bare-ingest: -stream is required")
	}
	_, redisURL, mode, err := services(false)
	if err != nil {
		return err
	}
	rdb, err := newRedis(redisURL, mode, 0)
	if err != nil {
		return err
	}
	defer rdb.Close()
	return serveUntil(ctx, *listen, bareIngest(rdb, bareStreams(*stream, *streams), *wait, slackSecret))
}

func runBarePreview(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bare-preview", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address of its health check")
	stream := fs.String("stream", "", "the stream of requests")
	workers := fs.Int("workers", 32, "workers reading the stream")
	modelURL := fs.String("model", "", "the model server's base URL (…/v1)")
	slackURL := fs.String("slack", "", "the Slack Web API's base URL (…/api/)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stream == "" || *modelURL == "" || *slackURL == "" || *workers < 1 {
		return errors.New("bare-preview: -stream, -model, -slack and -workers ≥ 1 are required")
	}
	_, redisURL, mode, err := services(false)
	if err != nil {
		return err
	}
	// One connection per blocked reader and as many again for the work
	// after the model: the pool never makes a worker wait.
	rdb, err := newRedis(redisURL, mode, 2**workers)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if err := pingRedis(ctx, rdb); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	b := &barePreview{rdb: rdb, stream: *stream, group: "bare", modelURL: *modelURL, slackURL: *slackURL,
		client:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *workers}},
		onError: func(err error) { logger.Error("bare preview", "err", err) }}
	if err := b.rdb.XGroupCreateMkStream(ctx, b.stream, b.group, "$").Err(); err != nil && !isBusyGroup(err) {
		return fmt.Errorf("create the consumer group: %w", err)
	}
	go func() { _ = b.run(ctx, *workers) }()
	return serveUntil(ctx, *listen, http.NotFoundHandler())
}
