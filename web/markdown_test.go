package web

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// hostileOutputs are outputs written to get something past the page:
// scripts, handlers, dangerous schemes however spelled, markup smuggled
// through titles, references, tables and code.
var hostileOutputs = []string{
	"<script>alert('x')</script><img src=x onerror=alert(2)>",
	"<a href=\"javascript:alert(1)\">raw</a> <iframe src=//evil></iframe> <style>*{}</style> <svg onload=alert(1)>",
	"[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](java&#x73;cript:alert(1)) [d](&#106;avascript:alert(1))",
	"[e](<  javascript:alert(1)>) [f](java\tscript:alert(1)) [g](vbscript:msgbox) [h](file:///etc/passwd) [i](data:text/html,<script>alert(1)</script>)",
	"![x](javascript:alert(1)) ![y](data:image/svg+xml,<svg/onload=alert(1)>) ![z](data:image/png;base64,iVBORw0KGgo=) ![w](https://example.org/a.png \"t\")",
	"[t](https://example.org \"\\\" onmouseover=alert(1) x=\\\"\") [u](https://example.org 'a\" onclick=\"alert(1)')",
	"[ref][r]\n\n[r]: javascript:alert(1) \"title\"\n\n[ok][s]\n\n[s]: https://example.org/ok",
	"<javascript:alert(1)> <https://example.org/auto> www.example.org/w <mailto:a@example.org> a@example.org",
	"| <b onclick=alert(1)>a</b> | `<script>` |\n|:--|--:|\n| [x](javascript:x) | <img src=x> |\n",
	"```html\n<script>alert(1)</script>\n```\n\n    <script>indented</script>\n\n<!-- --><script>alert(1)</script>",
	"- [x] done <input type=text autofocus onfocus=alert(1)>\n- [ ] todo\n\n1986. list\n\n> quote <em onmouseover=x>q</em>",
	"<div\nonclick=alert(1)>x</div>\n\n<p style=\"background:url(javascript:alert(1))\">p</p>",
	"[x](https://example.org/\"onmouseover=\"alert(1)) [y](https://example.org/<script>)",
	"[m](ms-msdt:/id PCWDiagnostic) <search-ms:query=x> [](&#70;:) ![f](file:///c:/x.png) [s](//evil.example/x)",
}

// TestOutputHTMLIsSafe: whatever an output holds, what the page gets has
// only the elements and attributes Markdown makes, and no link or image
// that could run anything. The HTML is read back by golang.org/x/net/html,
// a parser that follows the HTML standard, as a browser would.
func TestOutputHTMLIsSafe(t *testing.T) {
	t.Parallel()
	o := newOutputs()
	for _, in := range hostileOutputs {
		out := string(o.HTML(in))
		if err := checkOutputHTML(out); err != nil {
			t.Errorf("%q\n-> %s\n: %v", in, out, err)
		}
	}
}

// FuzzOutputHTML runs the same check on any output.
func FuzzOutputHTML(f *testing.F) {
	for _, in := range hostileOutputs {
		f.Add(in)
	}
	o := newOutputs()
	f.Fuzz(func(t *testing.T, in string) {
		out := string(o.HTML(in))
		if err := checkOutputHTML(out); err != nil {
			t.Fatalf("%q\n-> %s\n: %v", in, out, err)
		}
	})
}

// TestOutputKeepsMarkdown: the allowlist does not pass by losing content;
// links to other sites open in a new tab without the page, and all links
// are nofollow.
func TestOutputKeepsMarkdown(t *testing.T) {
	t.Parallel()
	o := newOutputs()
	out := string(o.HTML("## News\n\nSee [the source](https://example.org/s), [our board](/boards/b_1), <https://example.org/a> and www.example.org.\n\n" +
		"| a | b |\n|:--|--:|\n| 1 | 2 |\n\n- [x] done\n\n```go\nx := 1\n```\n\n![chart](https://example.org/c.png)\n\n<b>raw</b> stays out, and <search-ms:query=report> is text"))
	for _, want := range []string{
		"<h2>News</h2>",
		`<a href="https://example.org/s" rel="nofollow noopener" target="_blank">the source</a>`,
		`<a href="/boards/b_1" rel="nofollow">our board</a>`,
		`<a href="https://example.org/a" rel="nofollow noopener" target="_blank">https://example.org/a</a>`,
		`<a href="http://www.example.org" rel="nofollow noopener" target="_blank">www.example.org</a>`,
		"<table>", "<td", ">2</td>", `type="checkbox"`, `class="language-go"`, `<img src="https://example.org/c.png" alt="chart">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s in\n%s", want, out)
		}
	}
	if !strings.Contains(out, "search-ms:query=report is text") {
		t.Errorf("an autolink to a program is not kept as text:\n%s", out)
	}
	if strings.Contains(out, "<b>") {
		t.Errorf("raw HTML rendered:\n%s", out)
	}
	if err := checkOutputHTML(out); err != nil {
		t.Error(err)
	}
}

// allowedAttrs is what each element Markdown (with GitHub's extensions)
// makes may carry.
var allowedAttrs = map[atom.Atom][]string{
	atom.P: nil, atom.H1: nil, atom.H2: nil, atom.H3: nil, atom.H4: nil, atom.H5: nil, atom.H6: nil,
	atom.Blockquote: nil, atom.Ul: nil, atom.Ol: {"start"}, atom.Li: nil, atom.Pre: nil,
	atom.Code: {"class"}, atom.Hr: nil, atom.Br: nil, atom.Em: nil, atom.Strong: nil, atom.Del: nil,
	atom.A: {"href", "rel", "target", "title"}, atom.Img: {"src", "alt", "title"},
	atom.Table: nil, atom.Thead: nil, atom.Tbody: nil, atom.Tr: nil,
	atom.Th: {"align", "style"}, atom.Td: {"align", "style"},
	atom.Input: {"checked", "disabled", "type"},
}

var (
	schemePrefix = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)
	safeScheme   = regexp.MustCompile(`^(?i:https?|mailto)$`)
	safeDataURL  = regexp.MustCompile(`^(?i)data:image/(png|gif|jpeg|webp)[;,]`)
	alignStyle   = regexp.MustCompile(`^text-align:\s*(left|center|right);?$`)
	languageName = regexp.MustCompile(`^language-`)
)

func checkOutputHTML(out string) error {
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(out), body)
	if err != nil {
		return err
	}
	var check func(*html.Node) error
	check = func(n *html.Node) error {
		if n.Type == html.ElementNode {
			allowed, ok := allowedAttrs[n.DataAtom]
			if !ok {
				return errorf("element <%s>", n.Data)
			}
			for _, a := range n.Attr {
				if a.Namespace != "" || !slices.Contains(allowed, a.Key) {
					return errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
				}
				if err := checkAttr(n, a); err != nil {
					return err
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if err := check(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range nodes {
		if err := check(n); err != nil {
			return err
		}
	}
	return nil
}

func checkAttr(n *html.Node, a html.Attribute) error {
	switch a.Key {
	case "href", "src":
		if !safeURL(a.Val, n.DataAtom == atom.Img) {
			return errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
		}
	case "target":
		if a.Val != "_blank" {
			return errorf("target=%q", a.Val)
		}
	case "rel":
		if a.Val != "nofollow" && a.Val != "nofollow noopener" {
			return errorf("rel=%q", a.Val)
		}
	case "type":
		if a.Val != "checkbox" {
			return errorf("input type=%q", a.Val)
		}
	case "style":
		if !alignStyle.MatchString(a.Val) {
			return errorf("style=%q", a.Val)
		}
	case "align":
		if a.Val != "left" && a.Val != "center" && a.Val != "right" {
			return errorf("align=%q", a.Val)
		}
	case "class":
		if !languageName.MatchString(a.Val) {
			return errorf("class=%q", a.Val)
		}
	}
	return nil
}

// safeURL reads a URL as a browser's URL parser would (leading and
// trailing C0 controls and spaces dropped, tabs and newlines removed
// anywhere, a scheme only where a letter starts letters, digits, +, - and
// . up to a colon) and allows no scheme but http, https and mailto, and
// data: for raster images.
func safeURL(raw string, image bool) bool {
	u := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	u = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(u)
	if image && safeDataURL.MatchString(u) {
		return true
	}
	m := schemePrefix.FindStringSubmatch(u)
	if m == nil {
		return true // relative
	}
	return safeScheme.MatchString(m[1])
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("unsafe output: "+format, args...)
}
