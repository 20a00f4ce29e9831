package web

import (
	"bytes"
	"embed"
	"html/template"
	"sync"
)

// templates are every page's template, embedded once.
//
//go:embed templates/*.tmpl
var templates embed.FS

// lazyTemplate returns templates/name, parsed when first drawn: a server
// nobody has opened a page of keeps neither its parse tree nor the
// parser's pages. A template that does not parse is a bug caught by every
// test that draws it, so it panics.
func lazyTemplate(name string, funcs template.FuncMap) func() *template.Template {
	return sync.OnceValue(func() *template.Template {
		return template.Must(template.New(name).Funcs(funcs).ParseFS(templates, "templates/"+name))
	})
}

// draw renders a page whole before its first byte goes out: a template
// error is ours and is answered as one, while a reader who closed the
// page (a broken pipe) is nobody's error.
func draw(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
