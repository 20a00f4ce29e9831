package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/planner/demomodel"
)

// runDemoModel is `bobnet demo-model`: the canned stand-in for a model
// server that `make demo` points BobNet at, serving until interrupted.
func runDemoModel(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bobnet demo-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:11435", "loopback `address` to serve the OpenAI-compatible API on")
	articles := fs.String("articles", "testdata/demo/articles", "`folder` of the canned Markdown articles a run's cards get")
	pace := fs.Duration("pace", 3*time.Second, "how long a streamed answer takes, so the plan is drafted card by card (0: at once)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	dir := "testdata/plans"
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "usage: bobnet demo-model [--listen ADDR] [--articles DIR] [--pace DURATION] [DIR]")
		return 2
	}
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if *pace < 0 {
		fmt.Fprintf(stderr, "bobnet demo-model: --pace %s: not below zero\n", *pace)
		return 2
	}
	m, err := demomodel.Load(dir, *articles, *pace)
	if err != nil {
		fmt.Fprintf(stderr, "bobnet demo-model: %v (run it at the top of the repository, or name the folders of canned plans and articles)\n", err)
		return 2
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !app.IsLoopback(host) {
		fmt.Fprintf(stderr, "bobnet demo-model: --listen %q: a loopback address is required\n", *listen)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "bobnet demo-model: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(stdout, "bobnet demo-model: canned plans from %s and articles from %s on http://%s/v1 (model %q)\n", dir, *articles, ln.Addr(), demomodel.Name)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "bobnet demo-model: %v\n", err)
		return 1
	}
	return 0
}
