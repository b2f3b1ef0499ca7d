package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

const completionUsage = `Usage: minikubelet completion bash|zsh|fish

Print a shell completion script for minikubelet's commands, their flags
(generated from the commands' own flag sets), resource kinds and pod names.
  bash: source <(minikubelet completion bash)
  zsh:  source <(minikubelet completion zsh)
  fish: minikubelet completion fish | source
`

// completionShells are the shells completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// cmdFunc is the signature of every command's entry point.
type cmdFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// completionCommands are minikubelet's commands as runMain and apiCommands
// dispatch them (TestCompletion_CommandTableMatchesDispatch keeps the two
// in step). run is nil for a command without flags.
var completionCommands = []struct {
	name, help string
	run        cmdFunc
	kinds      []string // words for the first argument: resource kinds, shells
	pods       bool     // pod names as arguments (after the kind, if kinds)
	files      bool     // file arguments
}{
	{name: "serve", help: "the daemon: run the node's pods", run: serveCommand},
	{name: "run", help: "run the pods in a manifest file", run: runCommand, files: true},
	{name: "get", help: "list pods", run: getCommand, kinds: []string{"pods"}, pods: true},
	{name: "describe", help: "show a pod or the node", run: describeCommand, kinds: []string{"pods", "node"}, pods: true},
	{name: "logs", help: "print a container's log", run: logsCommand, pods: true},
	{name: "exec", help: "run a command in a container", run: execCommand, pods: true},
	{name: "attach", help: "attach to a container's process", run: attachCommand, pods: true},
	{name: "delete", help: "delete pods", run: deleteCommand, kinds: []string{"pods"}, pods: true},
	{name: "kubeconfig", help: "print the admin kubeconfig", run: kubeconfigCommand},
	{name: "completion", help: "print a shell completion script", kinds: completionShells},
	{name: "version", help: "print the version"},
	{name: "help", help: "show help"},
}

// flagSetCapture, when set, is handed every flag set a command creates
// (newCommandFlagSet): the completion scripts are generated from the real
// flag sets, so a new flag is completed without touching this file.
var flagSetCapture atomic.Pointer[func(*flag.FlagSet)]

// newCommandFlagSet is the flag set of a command named name.
func newCommandFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if f := flagSetCapture.Load(); f != nil {
		(*f)(fs)
	}
	return fs
}

var captureMu sync.Mutex

// commandFlagSet returns the flag set the command builds, complete: the
// command runs with -h, which every command answers by printing its usage
// (here discarded) right after defining its flags.
func commandFlagSet(name string, run cmdFunc) *flag.FlagSet {
	captureMu.Lock()
	defer captureMu.Unlock()
	var got atomic.Pointer[flag.FlagSet]
	capture := func(fs *flag.FlagSet) {
		if fs.Name() == name {
			got.CompareAndSwap(nil, fs)
		}
	}
	flagSetCapture.Store(&capture)
	defer flagSetCapture.Store(nil)
	_ = run(context.Background(), []string{"-h"}, io.Discard, io.Discard)
	return got.Load()
}

// compFlag is one flag as a completion script offers it.
type compFlag struct {
	name   string // with its dashes: -n, --namespace
	usage  string
	value  bool     // takes a value (not a bool flag)
	values []string // the values to offer
	file   bool     // the value is a path
}

// flagValues are the fixed values of flags, by flag name.
var flagValues = map[string][]string{
	"output": {"wide", "json", "yaml", "name"}, "o": {"wide", "json", "yaml", "name"},
	"cgroup-driver": {"cgroupfs", "systemd"},
	"log-level":     {"debug", "info", "warn", "error"},
	"log-format":    {"text", "json"},
}

// pathFlag reports whether a flag's value is a file or directory path.
func pathFlag(name string) bool {
	if name == "f" || name == "filename" || name == "socket" || name == "config" {
		return true
	}
	for _, s := range []string{"-dir", "kubeconfig", "-file", "-root", "cert", "-key", "-ca"} {
		if strings.HasSuffix(name, s) || strings.Contains(name, s+"-") {
			return true
		}
	}
	return false
}

// dashed is a flag's name as typed: -n for one letter, -it for a
// combination of one-letter flags (kubectl's -it), --name otherwise.
func dashed(fs *flag.FlagSet, name string) string {
	combo := len(name) > 1
	for _, r := range name {
		combo = combo && fs.Lookup(string(r)) != nil
	}
	if len(name) == 1 || combo {
		return "-" + name
	}
	return "--" + name
}

// commandFlags lists the flags of the command's flag set, sorted, with -h
// and --help (which the flag package answers without defining them).
func commandFlags(name string, run cmdFunc) []compFlag {
	out := []compFlag{{name: "-h", usage: "show help"}, {name: "--help", usage: "show help"}}
	if run == nil {
		return out
	}
	fs := commandFlagSet(name, run)
	if fs == nil {
		return out
	}
	fs.VisitAll(func(f *flag.Flag) {
		cf := compFlag{name: dashed(fs, f.Name), usage: f.Usage, value: true}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			cf.value = false
		}
		if cf.value {
			cf.values = flagValues[f.Name]
			cf.file = cf.values == nil && pathFlag(f.Name)
		}
		out = append(out, cf)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func commandNames() []string {
	var names []string
	for _, c := range completionCommands {
		names = append(names, c.name)
	}
	return names
}

// bashCompletion writes the bash script: commands, each command's flags
// and flag values, resource kinds, and pod names (from 'minikubelet get
// pods -o name', which needs the daemon and the socket's permission;
// failures complete nothing).
func bashCompletion(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for minikubelet, generated from its flag sets
# (minikubelet completion bash).
_minikubelet_pods() {
    local ns_args=() sock_args=() i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case ${COMP_WORDS[i]} in
            -n|--namespace) ns_args=(-n "${COMP_WORDS[i+1]}") ;;
            --socket) sock_args=(--socket "${COMP_WORDS[i+1]}") ;;
        esac
    done
    minikubelet get pods "${ns_args[@]}" "${sock_args[@]}" -o name 2>/dev/null | sed 's|^pod/||'
}

_minikubelet() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]}
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
        return
    fi
    local flags="" valueflags="" kinds="" pods="" files=""
    case $cmd in
`, strings.Join(commandNames(), " "))
	for _, c := range completionCommands {
		flags := commandFlags(c.name, c.run)
		var names, valued []string
		for _, f := range flags {
			names = append(names, f.name)
			if f.value {
				valued = append(valued, f.name)
			}
		}
		kinds := c.kinds
		if c.name == "help" {
			kinds = commandNames()
		}
		fmt.Fprintf(w, "        %s) flags=%q; valueflags=%q; kinds=%q; pods=%q; files=%q ;;\n",
			c.name, strings.Join(names, " "), strings.Join(valued, " "), strings.Join(kinds, " "), yes(c.pods), yes(c.files))
	}
	fmt.Fprint(w, `        *) return ;;
    esac
    # The value of a flag.
    case $cmd:$prev in
`)
	for _, c := range completionCommands {
		for _, f := range commandFlags(c.name, c.run) {
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(w, "        %s:%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", c.name, f.name, strings.Join(f.values, " "))
			case f.file:
				fmt.Fprintf(w, "        %s:%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", c.name, f.name)
			}
		}
	}
	fmt.Fprint(w, `    esac
    if [[ " $valueflags " == *" $prev "* ]]; then
        return
    fi
    # Arguments after "--" (exec's command) are not minikubelet's.
    local i w n=0 first=""
    for ((i = 2; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        [[ $w == -- ]] && return
        if [[ $w == -* ]]; then
            [[ " $valueflags " == *" $w "* ]] && ((i++))
            continue
        fi
        [[ -z $first ]] && first=$w
        ((n++))
    done
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    if [[ -n $kinds && $n -eq 0 ]]; then
        COMPREPLY=($(compgen -W "$kinds" -- "$cur"))
    elif [[ -n $pods ]]; then
        # describe node takes the node's name, not a pod's.
        case $first in node|nodes|no) return ;; esac
        [[ -z $kinds && $n -gt 0 ]] && return
        COMPREPLY=($(compgen -W "$(_minikubelet_pods)" -- "$cur"))
    elif [[ -n $files ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _minikubelet minikubelet
`)
}

func yes(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// zshQuote makes s safe inside a single-quoted _arguments spec.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`)
	return r.Replace(s)
}

// zshCompletion writes the zsh script, the same completions as bash's.
func zshCompletion(w io.Writer) {
	fmt.Fprint(w, `#compdef minikubelet
# zsh completion for minikubelet, generated from its flag sets
# (minikubelet completion zsh).

_minikubelet_pods() {
    local -a pods ns
    [[ -n ${opt_args[-n]:-${opt_args[--namespace]}} ]] && ns=(-n ${opt_args[-n]:-${opt_args[--namespace]}})
    pods=(${(f)"$(minikubelet get pods $ns -o name 2>/dev/null | sed 's|^pod/||')"})
    _describe 'pod' pods
}

_minikubelet() {
    local curcontext=$curcontext state line
    typeset -A opt_args
    local -a commands
    commands=(
`)
	for _, c := range completionCommands {
		fmt.Fprintf(w, "        '%s:%s'\n", c.name, zshQuote(c.help))
	}
	fmt.Fprint(w, `    )
    _arguments -C '1:command:->command' '*::arg:->args'
    case $state in
        command) _describe 'command' commands; return ;;
    esac
    case $line[1] in
`)
	for _, c := range completionCommands {
		fmt.Fprintf(w, "        %s)\n            _arguments -s \\\n", c.name)
		for _, f := range commandFlags(c.name, c.run) {
			spec := fmt.Sprintf("'%s[%s]", f.name, zshQuote(f.usage))
			switch {
			case len(f.values) > 0:
				spec += fmt.Sprintf(":value:(%s)", strings.Join(f.values, " "))
			case f.file:
				spec += ":path:_files"
			case f.value:
				spec += ":value: "
			}
			fmt.Fprintf(w, "                %s' \\\n", spec)
		}
		kinds := c.kinds
		if c.name == "help" {
			kinds = commandNames()
		}
		switch {
		case len(kinds) > 0 && c.pods:
			fmt.Fprintf(w, "                '1:resource:(%s)' '*:pod:_minikubelet_pods' ;;\n", strings.Join(kinds, " "))
		case len(kinds) > 0:
			fmt.Fprintf(w, "                '1:argument:(%s)' ;;\n", strings.Join(kinds, " "))
		case c.pods && c.name == "exec":
			fmt.Fprint(w, "                '1:pod:_minikubelet_pods' '*::command:_normal' ;;\n")
		case c.pods:
			fmt.Fprint(w, "                '1:pod:_minikubelet_pods' ;;\n")
		case c.files:
			fmt.Fprint(w, "                '1:manifest:_files' ;;\n")
		default:
			fmt.Fprint(w, "                ;;\n")
		}
	}
	fmt.Fprint(w, `    esac
}

compdef _minikubelet minikubelet
`)
}

// fishQuote makes s safe inside a single-quoted fish string.
func fishQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s)
}

// fishCompletion writes the fish script, the same completions as bash's.
func fishCompletion(w io.Writer) {
	fmt.Fprint(w, `# fish completion for minikubelet, generated from its flag sets
# (minikubelet completion fish | source).
function __minikubelet_pods
    minikubelet get pods -o name 2>/dev/null | string replace 'pod/' ''
end

complete -c minikubelet -f
`)
	for _, c := range completionCommands {
		fmt.Fprintf(w, "complete -c minikubelet -n '__fish_use_subcommand' -a %s -d '%s'\n", c.name, fishQuote(c.help))
	}
	for _, c := range completionCommands {
		cond := fmt.Sprintf("-n '__fish_seen_subcommand_from %s'", c.name)
		for _, f := range commandFlags(c.name, c.run) {
			opt := "-l " + strings.TrimPrefix(f.name, "--")
			if !strings.HasPrefix(f.name, "--") {
				// fish's -o is an old-style option: -n, -it.
				opt = "-o " + strings.TrimPrefix(f.name, "-")
				if len(f.name) == 2 {
					opt = "-s " + f.name[1:]
				}
			}
			switch {
			case len(f.values) > 0:
				opt += fmt.Sprintf(" -x -a '%s'", strings.Join(f.values, " "))
			case f.file:
				opt += " -r -F"
			case f.value:
				opt += " -x"
			}
			fmt.Fprintf(w, "complete -c minikubelet %s %s -d '%s'\n", cond, opt, fishQuote(f.usage))
		}
		kinds := c.kinds
		if c.name == "help" {
			kinds = commandNames()
		}
		if len(kinds) > 0 {
			fmt.Fprintf(w, "complete -c minikubelet %s -a '%s'\n", cond, strings.Join(kinds, " "))
		}
		if c.pods {
			fmt.Fprintf(w, "complete -c minikubelet %s -a '(__minikubelet_pods)'\n", cond)
		}
		if c.files {
			fmt.Fprintf(w, "complete -c minikubelet %s -F\n", cond)
		}
	}
}

func completionCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stderr, completionUsage)
		return nil
	}
	if len(args) != 1 {
		fmt.Fprint(stderr, completionUsage)
		return &exitError{code: 2, err: fmt.Errorf("completion needs one shell: %s", strings.Join(completionShells, ", "))}
	}
	switch args[0] {
	case "bash":
		bashCompletion(stdout)
		return nil
	case "zsh":
		zshCompletion(stdout)
		return nil
	case "fish":
		fishCompletion(stdout)
		return nil
	}
	fmt.Fprint(stderr, completionUsage)
	return &exitError{code: 2, err: fmt.Errorf("completion supports %s, not %q", strings.Join(completionShells, ", "), args[0])}
}
