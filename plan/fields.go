package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// join and index build the JSON path an issue points at.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// str reads an optional string field; a wrong type is an error.
func (v *validator) str(m map[string]any, path, field string, maxLen int) string {
	raw, ok := m[field]
	if !ok || raw == nil {
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		v.errorf(join(path, field), "must be a string, not %s", typeName(raw))
		return ""
	}
	if maxLen > 0 && utf8.RuneCountInString(s) > maxLen {
		v.errorf(join(path, field), "is longer than %d characters", maxLen)
	}
	if _, err := CheckText(s, false); err != nil {
		v.errorf(join(path, field), "%v; plans are plain text", err)
	}
	return s
}

// line reads a one-line display text (a title, a board name) with its
// invisible formatting characters dropped; see CheckText.
func line(s string) string {
	out, _ := CheckText(s, true) // control characters are reported by str
	return strings.TrimSpace(out)
}

// required reads a string field that must be present and non-blank.
func (v *validator) required(m map[string]any, path, field string, maxLen int) string {
	if raw := m[field]; raw != nil {
		if _, ok := raw.(string); !ok {
			return v.str(m, path, field, maxLen) // reports the type
		}
	}
	s := v.str(m, path, field, maxLen)
	if strings.TrimSpace(s) == "" {
		v.errorf(join(path, field), "is required and must not be blank")
	}
	return s
}

// strList reads an optional list of strings.
func (v *validator) strList(m map[string]any, path, field string, maxItems, maxLen int) []string {
	raw, ok := m[field]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.errorf(join(path, field), "must be a list of strings, not %s", typeName(raw))
		return nil
	}
	if len(list) > maxItems {
		v.errorf(join(path, field), "has %d items; at most %d are allowed", len(list), maxItems)
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			v.errorf(index(join(path, field), i), "must be a string, not %s", typeName(item))
			continue
		}
		if utf8.RuneCountInString(s) > maxLen {
			v.errorf(index(join(path, field), i), "is longer than %d characters", maxLen)
		}
		if _, err := CheckText(s, false); err != nil {
			v.errorf(index(join(path, field), i), "%v; plans are plain text", err)
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// list reads an optional list of anything.
func (v *validator) list(m map[string]any, path, field string) []any {
	raw, ok := m[field]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		v.errorf(join(path, field), "must be a list, not %s", typeName(raw))
		return nil
	}
	return list
}

// linkEntry is one entry of an action's "links": its two ends and where
// it was written.
type linkEntry struct{ card, dep, path string }

// links reads the entries of an action's "links", raw: at most
// maxLinksPerAction (more is an error, and the rest go unread), each an
// object naming card and depends_on. shape is how an entry should look,
// for the error on one that is not an object.
func (v *validator) links(raw []any, path, shape string) []linkEntry {
	if len(raw) > maxLinksPerAction {
		v.errorf(join(path, "links"), "has %d links; at most %d are allowed", len(raw), maxLinksPerAction)
		raw = raw[:maxLinksPerAction]
	}
	var out []linkEntry
	for i, r := range raw {
		lp := index(join(path, "links"), i)
		lm, ok := r.(map[string]any)
		if !ok {
			v.errorf(lp, "must be an object %s, not %s", shape, typeName(r))
			continue
		}
		out = append(out, linkEntry{
			card: strings.TrimSpace(v.required(lm, lp, "card", maxTempID)),
			dep:  strings.TrimSpace(v.required(lm, lp, "depends_on", maxTempID)),
			path: lp,
		})
	}
	return out
}

// typeName says what a JSON value is, for messages about wrong types.
func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true/false"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}
