// Package webtest starts a headless browser for tests of BobNet's pages.
package webtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser starts headless Chromium (the binary named by BOBNET_CHROMIUM)
// for a browser test and returns a chromedp context, closed when the test
// ends. It skips the test only when BOBNET_CHROMIUM is unset; `make test`
// always sets it.
func Browser(t testing.TB) context.Context {
	t.Helper()
	exe := os.Getenv("BOBNET_CHROMIUM")
	if exe == "" {
		t.Skip("BOBNET_CHROMIUM is not set; `make test` installs Chromium and sets it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root on CI machines
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		// This machine has no network beyond loopback; without these
		// Chromium keeps trying to reach its own services.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// The first run starts the browser, which lives as long as that run's
	// context: so it gets the test-long context, and the actions a bounded
	// one derived from it.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	bounded, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return bounded
}
