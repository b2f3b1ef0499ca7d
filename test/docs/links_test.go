// Package docs checks the repository's Markdown: README.md and docs/*.md.
// It needs nothing but the files: every relative link resolves to a file
// (and a heading, for a #anchor into Markdown), every repository path the
// text names in backticks exists, and the README names only `make` targets
// and minikubelet flags that exist.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

const repoRoot = "../.."

// markdownFiles are the documents checked: README.md and docs/*.md.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

func TestDocsLinksResolve(t *testing.T) {
	for _, p := range checkLinks(repoRoot, markdownFiles(t, repoRoot)) {
		t.Error(p)
	}
}

func TestDocsPathsExist(t *testing.T) {
	for _, p := range checkPaths(repoRoot, markdownFiles(t, repoRoot)) {
		t.Error(p)
	}
}

// The README is what a new user follows: every `make TARGET` (in code: a
// code span or a line of a code block) must be a target of the Makefile and every --flag one that cmd/minikubelet defines.
func TestReadmeCommandsExist(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)(?:^|`)make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(readme), -1) {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).Match(makefile) {
			t.Errorf("README.md names `make %s`, which the Makefile does not define", m[1])
		}
	}
	var defined strings.Builder
	err = filepath.WalkDir(filepath.Join(repoRoot, "cmd"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		defined.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[\s(\x60\[])--([a-z][a-z0-9-]+)`).FindAllStringSubmatch(string(readme), -1) {
		if seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		if !strings.Contains(defined.String(), `"`+m[1]+`"`) {
			t.Errorf("README.md names --%s, which no flag in cmd/ defines", m[1])
		}
	}
}

// A broken link, a missing anchor and a missing path must each be reported;
// links in code are not links.
func TestCheckLinks_FindsBrokenOnes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n## What `run` shows\n\n"+
		"[ok](docs/a.md) [ok anchor](docs/a.md#the-part-two) [self](#what-run-shows) [dir](docs/)\n"+
		"[web](https://example.com/x) [mail](mailto:a@b.c) ![img](docs/a.md)\n"+
		"[gone](docs/missing.md) [bad anchor](docs/a.md#nowhere) [bad self](#top-1)\n"+
		"[outside](../elsewhere.md) [ref]\n\n"+
		"```\n[in a fence](docs/fenced-missing.md)\n```\n"+
		"`[in code](docs/code-missing.md)`\n\n"+
		"[ref]: docs/ref-missing.md\n")
	write("docs/a.md", "# A\n\n## The part: two\n\n## Dup\n\n## Dup\n\n[back](../README.md#top) [dup](#dup-1) [up](../README.md#gone)\n"+
		"`agent/here.go` `agent/not-here.go` `cmd/x <y>` `hack/*.sh`\n")
	write("agent/here.go", "package agent\n")
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs", "a.md")}

	got := checkLinks(root, files)
	want := []string{
		"README.md:7: docs/missing.md: no such file",
		"README.md:7: docs/a.md#nowhere: no heading #nowhere in docs/a.md",
		"README.md:7: #top-1: no heading #top-1 in README.md",
		"README.md:8: ../elsewhere.md: outside the repository",
		"README.md:15: docs/ref-missing.md: no such file",
		"docs/a.md:9: ../README.md#gone: no heading #gone in README.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("checkLinks:\n got %q\nwant %q", got, want)
	}
	if got, want := checkPaths(root, files), []string{"docs/a.md:10: agent/not-here.go: no such file or directory"}; !slices.Equal(got, want) {
		t.Errorf("checkPaths:\n got %q\nwant %q", got, want)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"What `minikubelet run` shows":        "what-minikubelet-run-shows",
		"The daemon and the CLI":              "the-daemon-and-the-cli",
		"containerd 1.6 and 2.x":              "containerd-16-and-2x",
		"Hardening: bad input, chaos":         "hardening-bad-input-chaos",
		"See [the table](#x) **now**":         "see-the-table-now",
		"Setting up and testing: `make demo`": "setting-up-and-testing-make-demo",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// A repository path in backticks: a top-level directory of the
	// repository, then more path; nothing that is a pattern or a command.
	repoPath = regexp.MustCompile("`((?:agent|cmd|cri|cni|cgroups|probes|hack|test|examples|docs)/[A-Za-z0-9_./-]*)`")
)

// lines returns the document's lines with fenced code blocks blanked, so
// that line numbers stay right and nothing in code counts as a link or a
// heading.
func lines(text string) []string {
	ls := strings.Split(text, "\n")
	fence := ""
	for i, l := range ls {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			ls[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			ls[i] = ""
		}
	}
	return ls
}

// slug is GitHub's anchor for a heading: the rendered text lowercased,
// punctuation other than '-' and '_' dropped, spaces turned into '-'.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors a Markdown document defines: its headings'
// slugs (a repeated one gets -1, -2, … as on GitHub) and HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	for _, l := range lines(text) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := count[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		count[s]++
	}
	return out
}

// checkLinks returns one line per broken relative link in files (paths
// under root): "file:line: target: problem".
func checkLinks(root string, files []string) []string {
	absRoot, _ := filepath.Abs(root)
	var problems []string
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchorCache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchorCache[path] = anchors(string(b))
		return anchorCache[path], nil
	}
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		b, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		for i, l := range lines(string(b)) {
			l = codeSpan.ReplaceAllString(l, "")
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
			if m := refDef.FindStringSubmatch(l); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) {
					continue // a URL (https:, mailto:): not checked offline
				}
				bad := func(format string, args ...any) {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", rel, i+1, target, fmt.Sprintf(format, args...)))
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				}
				absDest, _ := filepath.Abs(dest)
				if absDest != absRoot && !strings.HasPrefix(absDest, absRoot+string(filepath.Separator)) {
					bad("outside the repository")
					continue
				}
				st, err := os.Stat(dest)
				if err != nil {
					bad("no such file")
					continue
				}
				if anchor == "" || st.IsDir() || !strings.HasSuffix(dest, ".md") {
					continue
				}
				as, err := anchorsOf(dest)
				if err != nil {
					bad("%v", err)
					continue
				}
				if !as[anchor] {
					destRel, _ := filepath.Rel(root, dest)
					bad("no heading #%s in %s", anchor, filepath.ToSlash(destRel))
				}
			}
		}
	}
	return problems
}

// checkPaths returns one line per repository path named in backticks in
// files that does not exist: "file:line: path: problem".
func checkPaths(root string, files []string) []string {
	var problems []string
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		b, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		// Paths in code blocks count too: they are commands to copy.
		for i, l := range strings.Split(string(b), "\n") {
			for _, m := range repoPath.FindAllStringSubmatch(l, -1) {
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file or directory", filepath.ToSlash(rel), i+1, m[1]))
				}
			}
		}
	}
	return problems
}
