package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out bytes.Buffer
	handled, err := apiCommands(context.Background(), "completion", []string{shell}, &out, io.Discard)
	require.True(t, handled)
	require.NoError(t, err)
	return out.String()
}

// The table the scripts are generated from names exactly the commands
// runMain dispatches: each of them is known to runMain, and each command
// the usage text names is in the table.
func TestCompletion_CommandTableMatchesDispatch(t *testing.T) {
	t.Setenv(socketEnv, filepath.Join(t.TempDir(), "none.sock")) // version asks a daemon
	for _, c := range completionCommands {
		err := runMain(context.Background(), []string{c.name, "-h"}, io.Discard, io.Discard)
		if err != nil {
			assert.NotContains(t, err.Error(), "unknown command", "%s is in the completion table but runMain does not know it", c.name)
		}
	}
	names := commandNames()
	for _, m := range regexp.MustCompile(`(?m)^  minikubelet ([a-z]+)`).FindAllStringSubmatch(usage, -1) {
		assert.Contains(t, names, m[1], "the usage names %q, which the completion table lacks", m[1])
	}
	err := runMain(context.Background(), []string{"no-such-command"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "unknown command", "the check above can fail")
}

// The flags come from the commands' own flag sets: the capture must see
// them (a broken capture would yield scripts without flags).
func TestCompletion_CapturesTheRealFlagSets(t *testing.T) {
	serve := commandFlagSet("serve", serveCommand)
	require.NotNil(t, serve)
	for _, name := range []string{"manifest-dir", "api-address", "root-dir", "kubeconfig", "eviction-hard"} {
		assert.NotNil(t, serve.Lookup(name), "serve's flag set lacks --%s", name)
	}
	run := commandFlagSet("run", runCommand)
	require.NotNil(t, run)
	for _, name := range []string{"rm", "foreground", "timeout", "cgroup-driver"} {
		assert.NotNil(t, run.Lookup(name), "run's flag set lacks --%s", name)
	}
	assert.Equal(t, "--rm", dashed(run, "rm"))
	exec := commandFlagSet("exec", execCommand)
	require.NotNil(t, exec)
	assert.Equal(t, "-it", dashed(exec, "it"), "a combination of one-letter flags")
	assert.Equal(t, "-c", dashed(exec, "c"))
	assert.Equal(t, "--container", dashed(exec, "container"))
}

// commandSection is the part of a shell's script about one command.
func commandSection(t *testing.T, shell, script, cmd string) string {
	t.Helper()
	var re *regexp.Regexp
	switch shell {
	case "bash":
		re = regexp.MustCompile(`(?m)^        ` + cmd + `\) flags=.*$`)
	case "zsh":
		re = regexp.MustCompile(`(?ms)^        ` + cmd + `\)\n.*?;;$`)
	case "fish":
		var lines []string
		for _, l := range strings.Split(script, "\n") {
			if strings.Contains(l, "-n '__fish_seen_subcommand_from "+cmd+"'") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	return re.FindString(script)
}

// fishFlag is how the fish script names a flag.
func fishFlag(name string) string {
	switch {
	case strings.HasPrefix(name, "--"):
		return " -l " + name[2:] + " "
	case len(name) == 2:
		return " -s " + name[1:] + " "
	}
	return " -o " + name[1:] + " "
}

// Every command, and every flag of every command's flag set, appears in
// each shell's script, in that command's part of it. The flags are read
// from the flag sets here, so a flag added to any command is checked
// without changing this test.
func TestCompletion_EveryCommandAndFlagInEveryShell(t *testing.T) {
	for _, shell := range completionShells {
		script := completionScript(t, shell)
		for _, c := range completionCommands {
			section := commandSection(t, shell, script, c.name)
			require.NotEmpty(t, section, "%s: no part for command %s", shell, c.name)
			if c.run == nil {
				continue
			}
			fs := commandFlagSet(c.name, c.run)
			require.NotNil(t, fs, c.name)
			n := 0
			fs.VisitAll(func(f *flag.Flag) {
				n++
				name := dashed(fs, f.Name)
				want := name
				switch shell {
				case "bash":
					want = " " + name + " "
					section = strings.Replace(section, `flags="`, `flags=" `, 1)
					section = strings.Replace(section, `";`, ` ";`, 1)
				case "zsh":
					want = "'" + name + "["
				case "fish":
					want = fishFlag(name)
				}
				assert.Contains(t, section, want, "%s: command %s lacks its flag %s", shell, c.name, name)
			})
			assert.Positive(t, n, "%s has no flags", c.name)
		}
		for _, kind := range []string{"pods", "node"} {
			assert.Contains(t, commandSection(t, shell, script, "describe"), kind, "%s: describe's resource kinds", shell)
		}
		for _, sh := range completionShells {
			assert.Contains(t, commandSection(t, shell, script, "completion"), sh, "%s: completion's shells", shell)
		}
	}
}

func TestCompletion_UnknownShell(t *testing.T) {
	var stderr bytes.Buffer
	_, err := apiCommands(context.Background(), "completion", []string{"tcsh"}, io.Discard, &stderr)
	assert.Equal(t, 2, exitCode(err))
	assert.ErrorContains(t, err, "bash, zsh, fish")
	assert.Contains(t, stderr.String(), "Usage: minikubelet completion bash|zsh|fish")
}

// The bash script run by bash: the COMPREPLY of a command line. A fake
// minikubelet on PATH answers 'get pods -o name' with two pods and records
// its arguments.
func TestCompletion_BashForReal(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash is needed for this test")
	dir := t.TempDir()
	script := filepath.Join(dir, "minikubelet.bash")
	require.NoError(t, os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644))
	argsFile := filepath.Join(dir, "args")
	fake := "#!/bin/sh\necho \"$*\" >" + argsFile + "\nprintf 'pod/web\\npod/db\\n'\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "minikubelet"), []byte(fake), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pod.yaml"), nil, 0o644))

	complete := func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := `source "$1"; COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _minikubelet; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", script)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + dir}
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "bash: %s", out)
		var reply []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				reply = append(reply, l)
			}
		}
		slices.Sort(reply)
		return reply
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }

	assert.Equal(t, sorted(commandNames()...), complete("minikubelet "))
	assert.Equal(t, []string{"describe"}, complete("minikubelet desc"))
	assert.Equal(t, sorted("pods", "node"), complete("minikubelet describe "))
	assert.Equal(t, sorted("bash", "zsh", "fish"), complete("minikubelet completion "))
	assert.Equal(t, sorted("wide", "json", "yaml", "name"), complete("minikubelet get pods -o "))
	assert.Equal(t, sorted("cgroupfs", "systemd"), complete("minikubelet serve --cgroup-driver "))
	assert.Equal(t, []string{"--manifest-dir"}, complete("minikubelet serve --manifest-d"))
	assert.Equal(t, sorted("--resolv-conf", "--rm", "--root-dir", "--runtime-endpoint", "--runtime-request-timeout"), complete("minikubelet run --r"))
	assert.Equal(t, sorted("--api-address", "--api-allow-remote"), complete("minikubelet serve --api-"))
	assert.Empty(t, complete("minikubelet serve --node-name "), "a flag's free-form value")

	// Every flag of every command, from its flag set.
	for _, c := range completionCommands {
		if c.run == nil {
			continue
		}
		fs := commandFlagSet(c.name, c.run)
		want := []string{"-h", "--help"}
		fs.VisitAll(func(f *flag.Flag) { want = append(want, dashed(fs, f.Name)) })
		assert.Equal(t, sorted(want...), complete("minikubelet "+c.name+" -"), "the flags of %s", c.name)
	}

	// Pod names, with the namespace passed on.
	assert.Equal(t, sorted("web", "db"), complete("minikubelet logs "))
	assert.Equal(t, sorted("web", "db"), complete("minikubelet describe pods "))
	assert.Equal(t, sorted("web", "db"), complete("minikubelet get pods -n kube-system "))
	args, err := os.ReadFile(argsFile)
	require.NoError(t, err)
	assert.Equal(t, "get pods -n kube-system -o name\n", string(args))
	assert.Empty(t, complete("minikubelet describe node "), "describe node takes the node's name")
	assert.Empty(t, complete("minikubelet logs web "), "logs takes one pod")
	assert.Empty(t, complete("minikubelet exec web -- "), "exec's command is not minikubelet's")
	assert.Equal(t, []string{"pod.yaml"}, complete("minikubelet run pod"), "run takes a file")
}
