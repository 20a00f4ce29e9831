package web

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// outputs renders cards' outputs, Markdown from models and other tools,
// into HTML safe to put in the run page.
//
// goldmark's renderer is the sanitizer: without its Unsafe option it
// writes no raw HTML (a comment stands in its place), escapes all text and
// attribute values, and drops link and image destinations with a
// javascript:, vbscript:, file: or data: scheme (bar data: images). The
// page's Content-Security-Policy lets nothing run or load but images over
// https besides. A second sanitizer over goldmark's own output (bluemonday
// was one) would hold its regular expressions and an HTML parser in every
// server for what goldmark already does; TestOutputHTMLIsSafe parses what
// this writes with an independent HTML parser and holds it to an
// allowlist instead.
type outputs struct{ md goldmark.Markdown }

func newOutputs() outputs {
	return outputs{md: goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkMarks{}, 1000))),
	)}
}

// HTML renders one output.
func (o outputs) HTML(markdown string) template.HTML {
	var buf bytes.Buffer
	if err := o.md.Convert([]byte(markdown), &buf); err != nil {
		// goldmark does not fail on text; should it, show the text
		// itself, escaped.
		buf.Reset()
		template.HTMLEscape(&buf, []byte(markdown))
	}
	return template.HTML(buf.String()) // goldmark without Unsafe: see outputs
}

// linkMarks keeps links to web pages and mail addresses only (an output
// has no business opening a local file or another program, as
// ms-msdt: or search-ms: links do) and images from the web or inline
// raster data. It marks every link nofollow (outputs are nobody's
// endorsement), and opens links to other sites in a new tab without
// handing them the page (noopener).
type linkMarks struct{}

func (linkMarks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var drop []*ast.AutoLink
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			// Destinations are resolved as goldmark's renderer resolves
			// them, entities and all.
			scheme, abs := urlScheme(util.URLEscape(l.Destination, true))
			if scheme != "" && !allowedScheme(scheme, false) {
				l.Destination = nil // rendered as href=""
			}
			markLink(l, abs)
		case *ast.AutoLink:
			scheme, abs := urlScheme(util.URLEscape(l.URL(source), false))
			if scheme != "" && !allowedScheme(scheme, false) {
				drop = append(drop, l)
			}
			markLink(l, abs)
		case *ast.Image:
			scheme, _ := urlScheme(util.URLEscape(l.Destination, true))
			if scheme != "" && !allowedScheme(scheme, true) {
				l.Destination = nil
			}
		}
		return ast.WalkContinue, nil
	})
	// An autolink to a program is left as its text.
	for _, l := range drop {
		l.Parent().ReplaceChild(l.Parent(), l, ast.NewString(l.Label(source)))
	}
}

func markLink(n ast.Node, absolute bool) {
	if absolute {
		n.SetAttributeString("rel", []byte("nofollow noopener"))
		n.SetAttributeString("target", []byte("_blank"))
	} else {
		n.SetAttributeString("rel", []byte("nofollow"))
	}
}

// allowedScheme: links lead to web pages and mail addresses, images come
// from the web or inline data (goldmark keeps data: only for PNG, GIF,
// JPEG and WebP).
func allowedScheme(scheme string, image bool) bool {
	switch strings.ToLower(scheme) {
	case "http", "https":
		return true
	case "mailto":
		return !image
	case "data":
		return image
	}
	return false
}

// urlScheme reads a URL's scheme as the URL standard does (a letter, then
// letters, digits, +, - or ., then a colon) and reports whether the URL
// leads off the page's site: it has a scheme or starts with //.
func urlScheme(u []byte) (scheme string, absolute bool) {
	if bytes.HasPrefix(u, []byte("//")) {
		return "", true
	}
	i := bytes.IndexByte(u, ':')
	if i < 1 || !isLetter(u[0]) {
		return "", false
	}
	for _, c := range u[1:i] {
		if !isLetter(c) && !('0' <= c && c <= '9') && c != '+' && c != '-' && c != '.' {
			return "", false
		}
	}
	return string(u[:i]), true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
