package main

import (
	"context"
	"fmt"
	"io"
)

const completionUsage = `Usage: minikubelet completion bash|zsh

Print a shell completion script for minikubelet's commands and flags.
  bash: source <(minikubelet completion bash)
  zsh:  source <(minikubelet completion zsh)
`

// bashCompletion completes commands, the "pods" resource, flags per
// command, and pod names (from 'minikubelet get pods -o name', which needs
// the daemon and the socket's permission; failures complete nothing).
const bashCompletion = `# bash completion for minikubelet
_minikubelet_pods() {
    local ns_args=()
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        if [[ ${COMP_WORDS[i]} == -n || ${COMP_WORDS[i]} == --namespace ]]; then
            ns_args=(-n "${COMP_WORDS[i+1]}")
        fi
    done
    minikubelet get pods "${ns_args[@]}" -o name 2>/dev/null | sed 's|^pod/||'
}

_minikubelet() {
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    local common="--socket -n --namespace -h --help"

    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "run get describe logs exec attach delete completion version help" -- "$cur"))
        return
    fi
    case $prev in
        -o|--output) COMPREPLY=($(compgen -W "wide json yaml name" -- "$cur")); return ;;
        -f|--filename) [[ $cmd == delete ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; } ;;
        -n|--namespace|-c|--container|--tail|--since|--grace-period|--timeout) return ;;
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local flags
    case $cmd in
        get) flags="$common -A --all-namespaces -o --output -w --watch" ;;
        describe) flags="$common" ;;
        logs) flags="$common -c --container -f --follow -p --previous --tail --timestamps --since" ;;
        exec) flags="$common -c --container -i --stdin -t --tty --timeout" ;;
        attach) flags="$common -c --container -i --stdin -t --tty -q --quiet" ;;
        delete) flags="$common -f --filename --grace-period --wait --timeout" ;;
        completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")); return ;;
        run) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        help) COMPREPLY=($(compgen -W "run get describe logs exec attach delete completion" -- "$cur")); return ;;
        *) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    case $cmd in
        get|describe|delete)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "pods" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$(_minikubelet_pods)" -- "$cur"))
            fi ;;
        logs|exec|attach)
            COMPREPLY=($(compgen -W "$(_minikubelet_pods)" -- "$cur")) ;;
    esac
}
complete -F _minikubelet minikubelet
`

// zshCompletion is the zsh equivalent of bashCompletion.
const zshCompletion = `#compdef minikubelet
# zsh completion for minikubelet

_minikubelet_pods() {
    local -a pods
    pods=(${(f)"$(minikubelet get pods ${opt_args[-n]:+-n ${opt_args[-n]}} -o name 2>/dev/null | sed 's|^pod/||')"})
    _describe 'pod' pods
}

_minikubelet() {
    local -a common
    common=(
        '--socket[the daemon API socket]:socket:_files'
        '(-n --namespace)'{-n,--namespace}'[namespace]:namespace:'
        '(-h --help)'{-h,--help}'[show help]'
    )
    local curcontext=$curcontext state line
    typeset -A opt_args
    _arguments -C '1:command:(run get describe logs exec attach delete completion version help)' '*::arg:->args'
    case $line[1] in
        get)
            _arguments $common \
                '(-A --all-namespaces)'{-A,--all-namespaces}'[all namespaces]' \
                '(-o --output)'{-o,--output}'[output format]:format:(wide json yaml name)' \
                '(-w --watch)'{-w,--watch}'[print each change]' \
                '1:resource:(pods)' '*:pod:_minikubelet_pods' ;;
        describe)
            _arguments $common '1:resource:(pods)' '*:pod:_minikubelet_pods' ;;
        logs)
            _arguments $common \
                '(-c --container)'{-c,--container}'[container]:container:' \
                '(-f --follow)'{-f,--follow}'[follow]' \
                '(-p --previous)'{-p,--previous}'[previous instance]' \
                '--tail[lines]:lines:' '--timestamps[timestamps]' '--since[duration]:duration:' \
                '1:pod:_minikubelet_pods' ;;
        exec)
            _arguments $common \
                '(-c --container)'{-c,--container}'[container]:container:' \
                '(-i --stdin)'{-i,--stdin}'[pass stdin]' '(-t --tty)'{-t,--tty}'[terminal]' \
                '--timeout[duration]:duration:' \
                '1:pod:_minikubelet_pods' '*::command:_normal' ;;
        attach)
            _arguments $common \
                '(-c --container)'{-c,--container}'[container]:container:' \
                '(-i --stdin)'{-i,--stdin}'[pass stdin]' '(-t --tty)'{-t,--tty}'[terminal]' \
                '(-q --quiet)'{-q,--quiet}'[only the session output]' \
                '1:pod:_minikubelet_pods' ;;
        delete)
            _arguments $common \
                '(-f --filename)'{-f,--filename}'[manifest]:file:_files' \
                '--grace-period[seconds]:seconds:' '--wait[wait until gone]' '--timeout[duration]:duration:' \
                '1:resource:(pods)' '*:pod:_minikubelet_pods' ;;
        completion)
            _arguments '1:shell:(bash zsh)' ;;
        run)
            _files ;;
    esac
}

compdef _minikubelet minikubelet
`

func completionCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stderr, completionUsage)
		return nil
	}
	if len(args) != 1 {
		fmt.Fprint(stderr, completionUsage)
		return &exitError{code: 2, err: fmt.Errorf("completion needs one shell: bash or zsh")}
	}
	switch args[0] {
	case "bash":
		_, err := io.WriteString(stdout, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(stdout, zshCompletion)
		return err
	}
	fmt.Fprint(stderr, completionUsage)
	return &exitError{code: 2, err: fmt.Errorf("completion supports bash and zsh, not %q", args[0])}
}
