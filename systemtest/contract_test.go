package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/bobnet/bobnet/httpapi"
)

// contract is openapi.json as the API tests hold BobNet to it.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	contractOnce sync.Once
	contractDoc  *contract
	contractErr  error
)

// loadContract loads openapi.json once for every test. Response schemas
// are closed first: the document leaves them open so that clients
// tolerate fields added later, but every field BobNet sends today must be
// described, so the tests refuse fields the document does not name.
func loadContract(t testing.TB) *contract {
	t.Helper()
	contractOnce.Do(func() {
		var raw map[string]any
		if contractErr = json.Unmarshal(httpapi.OpenAPI, &raw); contractErr != nil {
			return
		}
		closeSchemas(raw)
		js, _ := json.Marshal(raw)
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(js)
		if err != nil {
			contractErr = fmt.Errorf("load: %w", err)
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			contractErr = fmt.Errorf("validate: %w", err)
			return
		}
		// Any host: the tests serve on ports of their own.
		doc.Servers = nil
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			contractErr = fmt.Errorf("router: %w", err)
			return
		}
		contractDoc = &contract{doc: doc, router: router}
	})
	if contractErr != nil {
		t.Fatalf("openapi.json: %v", contractErr)
	}
	return contractDoc
}

// closeSchemas sets additionalProperties to false on every object schema
// with properties that does not say otherwise.
func closeSchemas(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"].(map[string]any); ok {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
		}
		for _, c := range v {
			closeSchemas(c)
		}
	case []any:
		for _, c := range v {
			closeSchemas(c)
		}
	}
}

// contractClient is an HTTP client whose every exchange is checked
// against openapi.json: a mismatch fails t.
func contractClient(t testing.TB) *http.Client {
	return &http.Client{Transport: newContractTransport(t)}
}

func newContractTransport(t testing.TB) *contractTransport {
	return &contractTransport{t: t, c: loadContract(t), base: http.DefaultTransport, seen: map[string]bool{}}
}

// contractTransport checks each request and its answer against the
// contract, and remembers which operations answered which statuses.
type contractTransport struct {
	t    testing.TB
	c    *contract
	base http.RoundTripper

	mu   sync.Mutex
	seen map[string]bool // "operationId status"
}

// saw reports whether operation op answered status through ct.
func (ct *contractTransport) saw(op string, status int) bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.seen[fmt.Sprintf("%s %d", op, status)]
}

// RoundTrip sends req and checks the exchange. A request the document
// refuses must be refused by BobNet too (4xx); an answer must have a
// status the operation declares, and its body must match that status's
// schema. Event streams are checked by status and content type only.
func (ct *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The body is read here, so that it can be both sent and checked; a
	// clone carries it, as a RoundTripper may not change req.
	var reqBody []byte
	sent := req.Clone(req.Context())
	if req.Body != nil {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		sent.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := ct.base.RoundTrip(sent)
	if err != nil {
		return resp, err
	}
	op, mismatch := ct.c.check(req, reqBody, resp)
	if op != "" {
		ct.mu.Lock()
		ct.seen[fmt.Sprintf("%s %d", op, resp.StatusCode)] = true
		ct.mu.Unlock()
	}
	if mismatch != nil {
		ct.t.Errorf("contract: %s %s -> %d: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, mismatch)
	}
	return resp, nil
}

// check returns the exchange's operation and how the exchange differs
// from the contract, or nil. It may replace resp.Body with a copy it has
// read.
func (c *contract) check(req *http.Request, reqBody []byte, resp *http.Response) (string, error) {
	// A copy, so that validating does not consume what was sent.
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return "", nil // neither served nor described
		}
		return "", fmt.Errorf("not in openapi.json (%w), yet answered", err)
	}
	op := route.Operation.OperationID
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: contractOptions()}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && resp.StatusCode < 400 {
		return op, fmt.Errorf("openapi.json refuses this request, BobNet took it: %w", describe(reqErr))
	}

	in.Options = contractOptions()
	in.Options.IncludeResponseStatus = true
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: in.Options}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		// A stream, a page or a file: its status and content type.
		in.Options.ExcludeResponseBody = true
		if err := declaresContent(route, resp.StatusCode, mt); err != nil {
			return op, err
		}
	} else {
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return op, err
		}
		out.SetBodyBytes(body)
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return op, describe(err)
	}
	return op, nil
}

// contractOptions are the validator's options: every mismatch, each said
// in one line.
func contractOptions() *openapi3filter.Options {
	o := &openapi3filter.Options{
		MultiError: true,
		// Tokens are BobNet's to check (and a loopback server without
		// BOBNET_API_TOKEN needs none); the document names the scopes.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	o.WithCustomSchemaErrorFunc(oneLine)
	return o
}

// declaresContent fails unless the operation's answer for status declares
// media type mt.
func declaresContent(route *routers.Route, status int, mt string) error {
	r := route.Operation.Responses.Status(status)
	if r == nil || r.Value == nil {
		return fmt.Errorf("status %d is not declared", status)
	}
	if r.Value.Content.Get(mt) == nil {
		return fmt.Errorf("status %d: content type %q is not declared", status, mt)
	}
	return nil
}

// describe flattens kin-openapi's multi-errors into one line each.
func describe(err error) error {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var lines []string
		for _, e := range me {
			lines = append(lines, e.Error())
		}
		return errors.New(strings.Join(lines, "; "))
	}
	return err
}
