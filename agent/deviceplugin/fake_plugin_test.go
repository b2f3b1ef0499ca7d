package deviceplugin

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakePlugin is an in-process device plugin served on a unix socket.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer

	opts    *pluginapi.DevicePluginOptions
	optsErr error
	// lawErr makes ListAndWatch fail at once.
	lawErr error
	// respond builds Allocate's answer for the devices.
	respond   func(ids []string) *pluginapi.ContainerAllocateResponse
	preferred []string

	mu        sync.Mutex
	calls     []string
	devices   []*pluginapi.Device
	allocated [][]string
	preStarts [][]string

	updates chan struct{}
	fail    chan error
	srv     *grpc.Server
	name    string
}

func newFakePlugin(devices ...*pluginapi.Device) *fakePlugin {
	return &fakePlugin{devices: devices, opts: &pluginapi.DevicePluginOptions{}, updates: make(chan struct{}, 10), fail: make(chan error, 1)}
}

func healthy(ids ...string) []*pluginapi.Device {
	var out []*pluginapi.Device
	for _, id := range ids {
		out = append(out, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
	}
	return out
}

func (p *fakePlugin) record(call string) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
}

func (p *fakePlugin) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	p.record("GetDevicePluginOptions")
	return p.opts, p.optsErr
}

func (p *fakePlugin) send(stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	p.mu.Lock()
	resp := &pluginapi.ListAndWatchResponse{}
	for _, d := range p.devices {
		resp.Devices = append(resp.Devices, &pluginapi.Device{ID: d.ID, Health: d.Health})
	}
	p.mu.Unlock()
	return stream.Send(resp)
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	p.record("ListAndWatch")
	if p.lawErr != nil {
		return p.lawErr
	}
	if err := p.send(stream); err != nil {
		return err
	}
	for {
		select {
		case <-p.updates:
			if err := p.send(stream); err != nil {
				return err
			}
		case err := <-p.fail:
			return err
		case <-stream.Context().Done():
			return nil
		}
	}
}

// setHealth changes a device's health and sends the new list.
func (p *fakePlugin) setHealth(id, health string) {
	p.mu.Lock()
	for _, d := range p.devices {
		if d.ID == id {
			d.Health = health
		}
	}
	p.mu.Unlock()
	p.updates <- struct{}{}
}

func (p *fakePlugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	p.record("GetPreferredAllocation")
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: p.preferred}}}, nil
}

func (p *fakePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.record("Allocate")
	out := &pluginapi.AllocateResponse{}
	for _, r := range req.ContainerRequests {
		p.mu.Lock()
		p.allocated = append(p.allocated, r.DevicesIds)
		p.mu.Unlock()
		resp := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"DEVICES": joinIDs(r.DevicesIds)}}
		if p.respond != nil {
			resp = p.respond(r.DevicesIds)
		}
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}

func (p *fakePlugin) PreStartContainer(_ context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.record("PreStartContainer")
	p.mu.Lock()
	p.preStarts = append(p.preStarts, req.DevicesIds)
	p.mu.Unlock()
	return &pluginapi.PreStartContainerResponse{}, nil
}

func joinIDs(ids []string) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += id
	}
	return s
}

// serve starts the plugin on dir/name.
func (p *fakePlugin) serve(t *testing.T, dir, name string) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	p.name = name
	p.srv = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	t.Cleanup(p.srv.Stop)
}

// register asks the manager's Registration server to take the plugin.
func register(t *testing.T, m *Manager, req *pluginapi.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+m.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req)
	return err
}

// newStarted starts a manager on a fresh directory (or dir) with a fake
// clock.
func newStarted(t *testing.T, dir string) (*Manager, *clocktesting.FakeClock) {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), DirName)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := New(Config{Dir: dir, Clock: clk})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m, clk
}

// startPlugin serves p in m's directory and registers it for resource.
func startPlugin(t *testing.T, m *Manager, p *fakePlugin, resource, name string) {
	t.Helper()
	p.serve(t, m.dir, name)
	if err := register(t, m, &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: name, ResourceName: resource}); err != nil {
		t.Fatalf("register: %v", err)
	}
}

type counts struct{ capacity, allocatable int64 }

// resourceCounts is the resource's capacity and allocatable; -1 when the
// node would not show it.
func resourceCounts(m *Manager, name string) counts {
	c, a := m.Resources()
	out := counts{-1, -1}
	if q, ok := c[v1.ResourceName(name)]; ok {
		out.capacity = q.Value()
	}
	if q, ok := a[v1.ResourceName(name)]; ok {
		out.allocatable = q.Value()
	}
	return out
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitCounts(t *testing.T, m *Manager, name string, want counts) {
	t.Helper()
	eventually(t, "capacity/allocatable "+name, func() bool { return resourceCounts(m, name) == want })
}

var errInjected = errors.New("injected failure")
