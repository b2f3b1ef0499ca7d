package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeSection returns the text of the README section "## title", up to
// the next "## " heading.
func readmeSection(readme, title string) string {
	start := strings.Index(readme, "\n## "+title+"\n")
	if start < 0 {
		return ""
	}
	rest := readme[start+len(title)+5:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// minikubeletCommands reads the command table the CLI dispatches and
// completes (completionCommands in cmd/minikubelet/completion.go) from the
// source: the name of each entry.
func minikubeletCommands(root string) ([]string, error) {
	path := filepath.Join(root, "cmd", "minikubelet", "completion.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "completionCommands" || len(vs.Values) != 1 {
			return true
		}
		table, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return false
		}
		for _, elt := range table.Elts {
			entry, ok := elt.(*ast.CompositeLit)
			if !ok {
				continue
			}
			for _, field := range entry.Elts {
				kv, ok := field.(*ast.KeyValueExpr)
				if !ok || fmt.Sprint(kv.Key) != "name" {
					continue
				}
				if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						names = append(names, s)
					}
				}
			}
		}
		return false
	})
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no completionCommands table with names found", path)
	}
	return names, nil
}

// checkNextSection returns a problem for each `make TARGET` the section
// names that the Makefile lacks and each `minikubelet COMMAND` that is not
// one of commands. Only code spans count.
func checkNextSection(section, makefile string, commands []string) []string {
	var problems []string
	spans := regexp.MustCompile("`[^`]+`").FindAllString(section, -1)
	makeRE := regexp.MustCompile(`(?:^|[\s(;&])make ([a-z][a-z0-9-]*)`)
	cmdRE := regexp.MustCompile(`(?:^|[\s(;&])minikubelet ([a-z][a-z-]*)`)
	for _, span := range spans {
		span = strings.Trim(span, "`")
		for _, m := range makeRE.FindAllStringSubmatch(span, -1) {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).MatchString(makefile) {
				problems = append(problems, fmt.Sprintf("README's Next section names `make %s`, which the Makefile does not define", m[1]))
			}
		}
		for _, m := range cmdRE.FindAllStringSubmatch(span, -1) {
			if !slices.Contains(commands, m[1]) {
				problems = append(problems, fmt.Sprintf("README's Next section names `minikubelet %s`, which is not a minikubelet command (%s)", m[1], strings.Join(commands, ", ")))
			}
		}
	}
	return problems
}

// The README's "Next" section is what a new user does after the demo:
// every make target and minikubelet command it names exists.
func TestReadmeNextSectionCommandsExist(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	commands, err := minikubeletCommands(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	section := readmeSection(string(readme), "Next")
	if section == "" {
		t.Fatal(`README.md has no "## Next" section`)
	}
	// What the section is for (issue 28): installing, the daemon, kubectl,
	// the fast tests, and undoing the demo.
	for _, want := range []string{"make install", "make test-unit", "make demo-down", "hack/minikubelet.service", "hack/start-minikubelet.sh", "minikubelet kubeconfig", "kubectl"} {
		if !strings.Contains(section, want) {
			t.Errorf("README's Next section does not mention %s", want)
		}
	}
	for _, p := range checkNextSection(section, string(makefile), commands) {
		t.Error(p)
	}
}

// The check finds a missing target and an unknown command.
func TestCheckNextSection_FindsMissingOnes(t *testing.T) {
	section := "Run `make install`, then `make frobnicate`; `minikubelet serve`, `sudo minikubelet teleport pods` and `source <(minikubelet completion bash)`. Not code: make nothing, minikubelet nothing. A path: `/usr/local/bin/minikubelet serve`."
	got := checkNextSection(section, "install: build\n\tinstall ...\n", []string{"serve", "completion"})
	want := []string{
		"README's Next section names `make frobnicate`, which the Makefile does not define",
		"README's Next section names `minikubelet teleport`, which is not a minikubelet command (serve, completion)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := readmeSection("# T\n\n## Next\n\nbody\n\n## Other\n\nx\n", "Next"); strings.TrimSpace(got) != "body" {
		t.Errorf("readmeSection = %q, want body", got)
	}
	cmds, err := minikubeletCommands(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"serve", "run", "describe", "kubeconfig", "completion"} {
		if !slices.Contains(cmds, c) {
			t.Errorf("the command table read from the source lacks %s: %v", c, cmds)
		}
	}
}
