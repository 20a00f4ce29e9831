package planner

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/bobnet/bobnet/plan"
	"go.yaml.in/yaml/v3"
)

//go:embed profiles/*/AGENT.md
var builtinProfiles embed.FS

// ErrNoFrontMatter means an AGENT.md file does not start with a YAML front
// matter block between --- lines.
var ErrNoFrontMatter = errors.New("no YAML front matter (a block between --- lines at the top)")

// DefaultProfiles returns the four built-in assignee profiles: Coder,
// Planner, Researcher and Reviewer.
func DefaultProfiles() []Profile {
	ps, err := loadProfiles(builtinProfiles, "profiles")
	if err != nil {
		// The files are compiled in and tested; failing here is a build bug.
		panic(fmt.Sprintf("built-in profiles: %v", err))
	}
	return ps
}

// LoadProfiles reads every AGENT.md under dir (seed 003's format: YAML front
// matter with name, description, skills…, then Markdown instructions). The
// profile name defaults to the folder's path below dir. Profiles come back
// sorted by name; two files naming the same profile are an error.
func LoadProfiles(dir string) ([]Profile, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("profiles: %s is not a folder", dir)
	}
	ps, err := loadProfiles(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("profiles in %s: %w", dir, err)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("profiles: no AGENT.md files under %s", dir)
	}
	return ps, nil
}

func loadProfiles(fsys fs.FS, root string) ([]Profile, error) {
	var out []Profile
	seen := map[string]string{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "AGENT.md" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		prof, err := ParseProfile(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if prof.Name == "" {
			rel := strings.TrimPrefix(path.Dir(p), root+"/")
			prof.Name = rel
		}
		key := strings.ToLower(prof.Name)
		if first, dup := seen[key]; dup {
			return fmt.Errorf("%s: profile %q is already defined in %s", p, prof.Name, first)
		}
		seen[key] = p
		out = append(out, prof)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// ParseProfile reads one AGENT.md file.
func ParseProfile(b []byte) (Profile, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return Profile{}, ErrNoFrontMatter
	}
	front, body, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return Profile{}, ErrNoFrontMatter
	}
	var p Profile
	if err := yaml.Unmarshal(front, &p); err != nil {
		return Profile{}, fmt.Errorf("front matter: %w", err)
	}
	p.Name = strings.TrimSpace(p.Name)
	if len(p.Name) > 100 || strings.ContainsAny(p.Name, "\n,") {
		return Profile{}, fmt.Errorf("front matter: name %q must be one line of at most 100 characters without commas", p.Name)
	}
	p.Runner = strings.TrimSpace(p.Runner)
	if name, isHook := strings.CutPrefix(p.Runner, "hook:"); p.Runner != "" && p.Runner != "model" && (!isHook || name == "") {
		return Profile{}, fmt.Errorf("front matter: runner %q must be model, hook:<name> or left out (people work the cards)", p.Runner)
	}
	if p.Review != "" && p.Review != "none" && p.Review != "always" {
		return Profile{}, fmt.Errorf("front matter: review %q must be none or always", p.Review)
	}
	p.Description = strings.TrimSpace(p.Description)
	p.Body = strings.TrimSpace(strings.TrimPrefix(string(body), "\n"))
	return p, nil
}

// ProfileNames returns the profiles' names, for validation options.
func ProfileNames(ps []Profile) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// RunnersOf says who works the cards of each profile's assignee in a run,
// and whether their output waits in Review; the first profile of a name
// counts. People work the cards of anyone else, reviewed.
func RunnersOf(ps []Profile) plan.Runners {
	rs := plan.Runners{ByName: map[string]plan.Runner{}}
	for _, p := range ps {
		key := plan.RunnerKey(p.Name)
		if _, ok := rs.ByName[key]; !ok {
			rs.ByName[key] = plan.Runner{Name: p.Runner, NoReview: p.Review == "none"}
		}
	}
	return rs
}

// Profile is an assignee profile loaded from an AGENT.md file (seed 003).
type Profile struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Skills      []string `yaml:"skills" json:"skills,omitempty"`
	Model       string   `yaml:"model" json:"model,omitempty"`
	// Runner says who works the profile's cards in a run of a board:
	// "model" (BobNet asks the model, with Body as its instructions),
	// "hook:<name>" (another tool, through that hook's callbacks) or empty
	// (people, from chat, the page or the API).
	Runner string `yaml:"runner" json:"runner,omitempty"`
	// Review "none" sends a runner's output straight to Done; otherwise
	// it waits in Review for a person to accept it or send it back.
	Review string `yaml:"review" json:"review,omitempty"`
	// Body is the Markdown after the front matter.
	Body string `yaml:"-" json:"-"`
}
