package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/bobnet/bobnet/httpjson"
)

// GuardConfig says where BobNet is reached, for Guard.
type GuardConfig struct {
	// PublicURL is where people reach BobNet (BOBNET_PUBLIC_URL).
	PublicURL string
	// Listen is the address BobNet listens on (BOBNET_LISTEN).
	Listen string
	// Tokenless is set when no API token guards the API: BobNet then
	// listens on loopback only, and the Host check below is what keeps a
	// web page the operator visits from reaching it through DNS
	// rebinding.
	Tokenless bool
}

// Guard refuses API requests a browser was tricked into sending: a
// cross-site Origin on any API request, and, without a token, a Host that
// is not BobNet's own (a rebinding attacker's name resolving to
// 127.0.0.1). Clients that are not browsers send no Origin and are not
// affected.
func Guard(cfg GuardConfig) func(http.Handler) http.Handler {
	hosts := map[string]bool{}
	origins := map[string]bool{}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		hosts[strings.ToLower(u.Host)] = true
		origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	if host, port, err := net.SplitHostPort(cfg.Listen); err == nil {
		names := []string{host}
		if ip := net.ParseIP(host); host == "" || host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
			names = append(names, "localhost", "127.0.0.1", "::1")
		}
		for _, n := range names {
			hp := strings.ToLower(net.JoinHostPort(n, port))
			hosts[hp] = true
			origins["http://"+hp] = true
			origins["https://"+hp] = true
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if o := r.Header.Get("Origin"); o != "" && !origins[strings.ToLower(o)] {
				httpjson.Error(w, http.StatusForbidden, "cross-site request refused: Origin "+o+" is not BobNet's own (set BOBNET_PUBLIC_URL to the address people use)")
				return
			}
			if cfg.Tokenless && !hosts[strings.ToLower(r.Host)] {
				httpjson.Error(w, http.StatusForbidden, "request refused: Host "+r.Host+" is not BobNet's own address (set BOBNET_PUBLIC_URL to the address people use)")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
