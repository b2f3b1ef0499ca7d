package lifecycle

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// MaxHookOutput bounds what is kept of an exec hook's output (stdout, then
// stderr): the kubelet's bound on a hook's or probe's HTTP body
// (maxRespBodyLength, 10 KiB), as probes cut their output. The kubelet
// quotes an exec hook's whole output in its message; here a hook printing
// megabytes must not make every status, log line and event carry them.
const MaxHookOutput = 10 * 1024

// MaxHookMessage bounds a hook failure's message (the container's waiting
// message, the log): the quoted output (up to 4 bytes per byte kept) is cut
// again with the rest of the message. Its event is cut further
// (podevents.MaxMessageBytes).
const MaxHookMessage = 12 * 1024

// BoundedOutput joins stdout and stderr into a fresh string of at most
// limit bytes, cut on a character boundary: it holds no reference to
// either slice.
func BoundedOutput(stdout, stderr []byte, limit int) string {
	var b strings.Builder
	b.Grow(min(len(stdout)+len(stderr), limit+utf8.UTFMax))
	for _, p := range [][]byte{stdout, stderr} {
		if room := limit + utf8.UTFMax - b.Len(); len(p) > room {
			p = p[:max(room, 0)]
		}
		b.Write(p)
	}
	return podevents.ClipUTF8(b.String(), limit)
}

// HookMessage formats a hook failure's message, cut to MaxHookMessage
// bytes on a character boundary.
func HookMessage(format string, args ...any) string {
	return podevents.TruncateMessage(fmt.Sprintf(format, args...), MaxHookMessage)
}
