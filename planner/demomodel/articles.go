package demomodel

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ArticleLabel opens every canned article, so the edition says where its
// text came from.
const ArticleLabel = "_Canned demo article, not written for this card. Point OPENAI_BASE_URL at a real model for real work._"

// article is one canned card output: a Markdown file whose name (words
// joined by "-") says which card titles it answers.
type article struct {
	words []string
	text  string
}

// loadArticles reads the *.md files of dir, in name order.
func loadArticles(dir string) ([]article, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return nil, fmt.Errorf("demo model: articles: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("demo model: no canned articles (*.md) in %s", dir)
	}
	sort.Strings(paths)
	out := make([]article, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("demo model: %w", err)
		}
		text := strings.TrimSpace(string(b))
		if text == "" {
			return nil, fmt.Errorf("demo model: %s is empty", p)
		}
		stem := strings.TrimSuffix(filepath.Base(p), ".md")
		out = append(out, article{words: strings.Split(strings.ToLower(stem), "-"), text: ArticleLabel + "\n\n" + text})
	}
	return out, nil
}

// runnerPrompt says whether a request is a run's prompt to work a card
// (run.Messages: "You are BobNet's <profile>" and "Card <handle>.") and
// what the card's title is.
func runnerPrompt(msgs []openai.ChatCompletionMessage) (title string, ok bool) {
	var system, user string
	for _, m := range msgs {
		switch m.Role {
		case openai.ChatMessageRoleSystem:
			system = m.Content
		case openai.ChatMessageRoleUser:
			user = m.Content
		}
	}
	if !strings.HasPrefix(system, "You are BobNet's ") || !strings.HasPrefix(user, "Card ") {
		return "", false
	}
	first, rest, _ := strings.Cut(user, "\n")
	if !strings.HasSuffix(first, ".") || !strings.Contains(user, "Answer with the output of ") {
		return "", false
	}
	// The title is quoted as data: <<<FENCE title\n…\nFENCE>>>.
	open, rest, found := strings.Cut(rest, "\n")
	fence, label, _ := strings.Cut(strings.TrimPrefix(open, "<<<"), " ")
	if !found || !strings.HasPrefix(open, "<<<") || label != "title" {
		return "", true
	}
	title, _, _ = strings.Cut(rest, "\n"+fence+">>>")
	return title, true
}

// Article is the canned output for a card titled title: the article whose
// name's words are all in the title, else one picked by a hash of the
// title, so a card gets the same article every time.
func (m *Model) Article(title string) string {
	t := strings.ToLower(title)
	for _, a := range m.articles {
		all := true
		for _, w := range a.words {
			all = all && strings.Contains(t, w)
		}
		if all {
			return a.text
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(t))
	return m.articles[h.Sum32()%uint32(len(m.articles))].text
}
