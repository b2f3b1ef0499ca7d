package deviceplugin

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const res = "example.com/dev"

func TestRegistrationSocketIsRootOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A socket a previous run left is removed (plugins register again);
	// other files stay.
	stale, err := net.Listen("unix", filepath.Join(dir, "old-plugin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ := newStarted(t, dir)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("plugin directory mode %v, want 0700", fi.Mode().Perm())
	}
	si, err := os.Lstat(m.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	if si.Mode()&os.ModeSocket == 0 || si.Mode().Perm() != 0o600 {
		t.Errorf("registration socket mode %v, want a 0600 socket", si.Mode())
	}
	if _, err := os.Lstat(filepath.Join(dir, "old-plugin.sock")); !os.IsNotExist(err) {
		t.Errorf("stale socket still there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "keep")); err != nil {
		t.Errorf("a regular file was removed: %v", err)
	}
	m.Stop()
	if _, err := os.Lstat(m.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket left after Stop: %v", err)
	}
}

func TestRegisterRefusesBadRequests(t *testing.T) {
	m, _ := newStarted(t, "")
	good := newFakePlugin(healthy("a")...)
	good.serve(t, m.dir, "good.sock")
	// A symlink to a plugin's socket is refused: the endpoint must be the
	// socket itself.
	if err := os.Symlink(filepath.Join(m.dir, "good.sock"), filepath.Join(m.dir, "link.sock")); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		req  *pluginapi.RegisterRequest
		want string
	}{
		"version":               {&pluginapi.RegisterRequest{Version: "v1alpha", Endpoint: "good.sock", ResourceName: res}, `requested API version "v1alpha" is not supported`},
		"no domain":             {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "good.sock", ResourceName: "dev"}, `the ResourceName "dev" is invalid`},
		"kubernetes.io":         {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "good.sock", ResourceName: "kubernetes.io/dev"}, "is invalid"},
		"requests. prefix":      {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "good.sock", ResourceName: "requests.example.com/dev"}, "is invalid"},
		"bad characters":        {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "good.sock", ResourceName: "example.com/a b"}, "is invalid"},
		"endpoint with a slash": {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "../good.sock", ResourceName: res}, "invalid endpoint"},
		"endpoint dot-dot":      {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "..", ResourceName: res}, "invalid endpoint"},
		"empty endpoint":        {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "", ResourceName: res}, "invalid endpoint"},
		"the kubelet's socket":  {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: SocketName, ResourceName: res}, "invalid endpoint"},
		"symlink":               {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "link.sock", ResourceName: res}, "a symlink is refused"},
		"nothing listening":     {&pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "none.sock", ResourceName: res}, "failed to get device plugin options"},
	} {
		t.Run(name, func(t *testing.T) {
			err := register(t, m, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if got := resourceCounts(m, res); got != (counts{-1, -1}) {
		t.Errorf("refused plugins registered the resource: %+v", got)
	}
	if calls := good.Calls(); len(calls) != 0 {
		t.Errorf("a refused registration reached the plugin: %v", calls)
	}
}

func TestGetDevicePluginOptionsFailureLeavesThePluginUnused(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("a")...)
	p.optsErr = errInjected
	p.serve(t, m.dir, "p.sock")
	err := register(t, m, &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: res})
	if err == nil || !strings.Contains(err.Error(), "failed to get device plugin options") || !strings.Contains(err.Error(), errInjected.Error()) {
		t.Fatalf("Register = %v, want the options' failure", err)
	}
	time.Sleep(100 * time.Millisecond)
	if calls := p.Calls(); len(calls) != 1 || calls[0] != "GetDevicePluginOptions" {
		t.Errorf("calls %v, want only GetDevicePluginOptions", calls)
	}
	if got := resourceCounts(m, res); got != (counts{-1, -1}) {
		t.Errorf("resource %+v, want absent", got)
	}
}

func TestHealthChangesMoveAllocatable(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("0", "1", "2", "3")...)
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{4, 4})
	select {
	case <-m.Changed():
	default:
		t.Error("no change signalled for the node status")
	}
	p.setHealth("3", pluginapi.Unhealthy)
	waitCounts(t, m, res, counts{4, 3})
	p.setHealth("1", pluginapi.Unhealthy)
	waitCounts(t, m, res, counts{4, 2})
	p.setHealth("1", pluginapi.Healthy)
	p.setHealth("3", pluginapi.Healthy)
	waitCounts(t, m, res, counts{4, 4})
}

func TestListAndWatchFailingAtOnceRegistersTheResourceEmpty(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("a")...)
	p.lawErr = errInjected
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{0, 0})
	// Never retried.
	time.Sleep(300 * time.Millisecond)
	if calls := p.Calls(); len(calls) != 2 {
		t.Errorf("calls %v, want GetDevicePluginOptions and one ListAndWatch", calls)
	}
}

func TestListAndWatchFailureKeepsCapacityThenDropsIt(t *testing.T) {
	m, clk := newStarted(t, "")
	p := newFakePlugin(healthy("0", "1")...)
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{2, 2})
	p.fail <- errInjected
	waitCounts(t, m, res, counts{2, 0})
	time.Sleep(300 * time.Millisecond)
	if calls := p.Calls(); len(calls) != 2 {
		t.Errorf("calls %v, want no retry of ListAndWatch", calls)
	}
	clk.Step(4 * time.Minute)
	if got := resourceCounts(m, res); got != (counts{2, 0}) {
		t.Errorf("within the grace period: %+v, want capacity kept", got)
	}
	clk.Step(2 * time.Minute)
	if got := resourceCounts(m, res); got != (counts{0, 0}) {
		t.Errorf("after the grace period: %+v, want 0/0", got)
	}
	// It stays at 0 (the Node keeps showing a device plugin's resource),
	// across a restart too.
	m.Stop()
	m2, _ := newStarted(t, m.dir)
	if got := resourceCounts(m2, res); got != (counts{0, 0}) {
		t.Errorf("after a restart: %+v, want 0/0", got)
	}
	// Registering again brings it back.
	startPlugin(t, m2, newFakePlugin(healthy("0")...), res, "p2.sock")
	waitCounts(t, m2, res, counts{1, 1})
}

func TestPluginStopMakesDevicesUnhealthy(t *testing.T) {
	m, _ := newStarted(t, "")
	p := newFakePlugin(healthy("0", "1")...)
	startPlugin(t, m, p, res, "p.sock")
	waitCounts(t, m, res, counts{2, 2})
	p.srv.Stop()
	waitCounts(t, m, res, counts{2, 0})
}

func TestReRegistrationReplacesTheEndpoint(t *testing.T) {
	m, _ := newStarted(t, "")
	old := newFakePlugin(healthy("0", "1")...)
	startPlugin(t, m, old, res, "old.sock")
	waitCounts(t, m, res, counts{2, 2})
	repl := newFakePlugin(healthy("0", "1", "2")...)
	startPlugin(t, m, repl, res, "new.sock")
	waitCounts(t, m, res, counts{3, 3})
	// The old plugin going away does not touch the new one's devices.
	old.srv.Stop()
	time.Sleep(200 * time.Millisecond)
	if got := resourceCounts(m, res); got != (counts{3, 3}) {
		t.Errorf("after the old plugin stopped: %+v, want 3/3", got)
	}
}

func TestStartRefusesASocketPathTooLong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100), DirName)
	err := New(Config{Dir: dir}).Start()
	if err == nil || !strings.Contains(err.Error(), "over a unix socket's 107") {
		t.Fatalf("Start = %v, want the path's length refused", err)
	}
}
