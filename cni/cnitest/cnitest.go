// Package cnitest provides test doubles for code that uses package cni:
// fake CNI plugin binaries that answer the VERSION command, and a scripted
// NetworkReady check for cni.WaitReady.
package cnitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Plugins are the binaries a minikubelet node needs: the conflist's plugins,
// its IPAM plugin, and loopback, which containerd runs for every sandbox.
var Plugins = []string{"bridge", "host-local", "portmap", "loopback"}

// SpecVersions is what the real plugins pinned in go.mod claim to support
// (a subset is enough for the tests).
var SpecVersions = []string{"0.3.1", "0.4.0", "1.0.0"}

// WritePlugins writes fake plugin executables named names into dir (created
// if needed). Each is a shell script that answers CNI_COMMAND=VERSION with
// supported as its supportedVersions and fails every other command, so it is
// good for checks, never for ADD/DEL. With no names it writes Plugins.
func WritePlugins(t testing.TB, dir string, supported []string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		names = Plugins
	}
	answer, err := json.Marshal(struct {
		CNIVersion        string   `json:"cniVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}{"1.0.0", supported})
	if err != nil {
		t.Fatalf("encode fake VERSION answer: %v", err)
	}
	script := fmt.Sprintf(`#!/bin/sh
cat >/dev/null
if [ "$CNI_COMMAND" = VERSION ]; then
	echo '%s'
	exit 0
fi
echo '{"cniVersion":"1.0.0","code":4,"msg":"fake plugin only answers VERSION"}'
exit 1
`, answer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("create fake plugin dir: %v", err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(script), 0o755); err != nil {
			t.Fatalf("write fake plugin %s: %v", n, err)
		}
	}
}

// Ready is a scripted readiness check with the signature cni.WaitReady takes
// (pass r.Check). It reports not ready, with Reason and Message, until it
// has been called ReadyAfter times; Err, if set, is returned by every call
// until then instead. The zero value is ready on the first call.
type Ready struct {
	// ReadyAfter is how many calls report not ready before one reports ready;
	// negative means never ready.
	ReadyAfter int
	// Reason and Message are what a not-ready answer carries, like CRI
	// Status's NetworkReady condition.
	Reason, Message string
	// Err is returned by not-ready calls, as if the runtime could not be asked.
	Err error

	mu    sync.Mutex // guards calls
	calls int        // number of Check calls so far
}

// Check answers one readiness poll.
func (r *Ready) Check(context.Context) (ok bool, reason, message string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.ReadyAfter >= 0 && r.calls > r.ReadyAfter {
		return true, "", "", nil
	}
	if r.Err != nil {
		return false, "", "", r.Err
	}
	return false, r.Reason, r.Message, nil
}

// Calls returns how many times Check has been called.
func (r *Ready) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
