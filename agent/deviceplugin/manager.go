package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"
)

const (
	// DirName is the plugin directory under the root dir: the kubelet's
	// /var/lib/kubelet/device-plugins with --root-dir /var/lib/kubelet.
	DirName = "device-plugins"
	// SocketName is the Registration server's socket in it.
	SocketName = "kubelet.sock"
	// stopGracePeriod is how long a stopped plugin's resource stays on the
	// node (capacity kept, allocatable 0) before it is dropped: the
	// kubelet's endpointStopGracePeriod.
	stopGracePeriod = 5 * time.Minute
	// dialTimeout bounds the dial and GetDevicePluginOptions of a
	// registration (the kubelet's 10 s dial).
	dialTimeout = 10 * time.Second
	// maxSocketPath is the longest path a unix socket address holds on
	// Linux (sun_path is 108 bytes with its terminating NUL).
	maxSocketPath = 107
)

// Config says where the manager works.
type Config struct {
	// Dir is the plugin directory (<root-dir>/device-plugins): the
	// Registration socket, the plugins' sockets and the checkpoint.
	Dir string
	// Logger is narrowed to the component; nil logs nothing.
	Logger *slog.Logger
	// Clock is the real clock when nil.
	Clock clock.PassiveClock
}

// Manager is the device plugins' manager: the Registration server, the
// plugins' endpoints, the node's device resources and the pods' devices.
type Manager struct {
	dir    string
	logger *slog.Logger
	clock  clock.PassiveClock
	// stop ends the endpoints' streams and the pods' watchers.
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	// mu guards everything below.
	mu sync.Mutex
	// resources are the registered resources by name.
	resources map[string]*resourceState
	// removed are the resources dropped after their plugin stopped: the
	// node reports them at 0, as the kubelet keeps a device plugin's
	// resource in the Node's capacity at 0 once it was registered (kept in
	// the checkpoint: the Node's status is rebuilt at each start).
	removed map[string]bool
	// pods are the pods' devices: pod UID → container → resource.
	pods map[types.UID]map[string]map[string]*allocation
	// podDone tells when a pod's teardown ended (the engine's PodDone);
	// nil: devices go back only when a finished pod is seen at admission.
	podDone func(types.UID) <-chan struct{}
	// watching are the pods whose podDone is awaited; restored are the
	// checkpoint's pods still to watch (from the first admission on,
	// once the engine's sources are wired).
	watching map[types.UID]bool
	restored []types.UID
	// server is the Registration server (nil before Start).
	server *grpc.Server
	// changed is signalled (never blocking) when a resource changes.
	changed chan struct{}
}

// resourceState is a registered resource: its plugin and devices.
type resourceState struct {
	// ep is the plugin serving it; nil after a restart until it registers
	// again.
	ep *endpoint
	// devices maps a device ID to its health (true: healthy).
	devices map[string]bool
	// stoppedAt is when the plugin's stream ended (zero while it runs).
	stoppedAt time.Time
}

// New builds a manager; nothing listens before Start.
func New(cfg Config) *Manager {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{
		dir:       cfg.Dir,
		logger:    logger.With("component", "deviceplugin"),
		clock:     clk,
		stop:      make(chan struct{}),
		resources: map[string]*resourceState{},
		removed:   map[string]bool{},
		pods:      map[types.UID]map[string]map[string]*allocation{},
		watching:  map[types.UID]bool{},
		changed:   make(chan struct{}, 1),
	}
}

// SocketPath is the Registration server's socket.
func (m *Manager) SocketPath() string { return filepath.Join(m.dir, SocketName) }

// SetPodDone makes a pod's devices go back once podDone(uid) is closed
// (nil: the pod is unknown); call before the first admission.
func (m *Manager) SetPodDone(podDone func(types.UID) <-chan struct{}) {
	m.mu.Lock()
	m.podDone = podDone
	m.mu.Unlock()
}

// Changed is signalled when a resource's capacity or allocatable may have
// changed (a buffer of one: a burst gives one signal).
func (m *Manager) Changed() <-chan struct{} { return m.changed }

func (m *Manager) notify() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Start prepares the plugin directory (root only), removes the sockets a
// previous run left (plugins watch for a new kubelet.sock and register
// again, as with the kubelet), reads the checkpoint and serves the
// Registration API until Stop.
func (m *Manager) Start() error {
	if n := len(m.SocketPath()); n > maxSocketPath {
		return fmt.Errorf("the registration socket %s is %d bytes long, over a unix socket's %d", m.SocketPath(), n, maxSocketPath)
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return fmt.Errorf("create the device plugin directory: %w", err)
	}
	fi, err := os.Lstat(m.dir)
	if err != nil {
		return fmt.Errorf("device plugin directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("device plugin directory %s is not a directory (a symlink?): remove it", m.dir)
	}
	// Only root may connect to kubelet.sock or plant a plugin socket.
	if err := os.Chmod(m.dir, 0o700); err != nil {
		return fmt.Errorf("device plugin directory: %w", err)
	}
	m.removeSockets()
	if err := m.loadCheckpoint(); err != nil {
		m.logger.Warn("Device checkpoint unreadable; starting without the pods' device assignments", "path", m.checkpointPath(), "err", err)
	}
	l, err := net.Listen("unix", m.SocketPath())
	if err != nil {
		return fmt.Errorf("listen for device plugins: %w", err)
	}
	if err := os.Chmod(m.SocketPath(), 0o600); err != nil {
		_ = l.Close()
		return fmt.Errorf("device plugin socket: %w", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, registration{m: m})
	m.mu.Lock()
	m.server = srv
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.logger.Error("Device plugin registration server stopped", "err", err)
		}
	}()
	m.logger.Info("Serving device plugin registration", "socket", m.SocketPath())
	return nil
}

// removeSockets removes every socket of the plugin directory (not
// following symlinks); other files stay.
func (m *Manager) removeSockets() {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		m.logger.Warn("Cannot list the device plugin directory", "err", err)
		return
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(m.dir, e.Name())); err != nil {
			m.logger.Warn("Cannot remove a stale device plugin socket", "path", e.Name(), "err", err)
		}
	}
}

// Stop stops the Registration server, closes the plugins' connections
// and waits for their streams to end. The checkpoint stays.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() { close(m.stop) })
	m.mu.Lock()
	srv := m.server
	var eps []*endpoint
	for _, rs := range m.resources {
		if rs.ep != nil {
			eps = append(eps, rs.ep)
		}
	}
	m.mu.Unlock()
	if srv != nil {
		srv.Stop()
		_ = os.Remove(m.SocketPath())
	}
	for _, ep := range eps {
		ep.close()
	}
	m.wg.Wait()
}

// Resources are the device plugins' resources for the Node's status:
// capacity counts every device, allocatable the healthy ones. A resource
// whose plugin stopped more than 5 minutes ago is dropped and reported at
// 0 from then on.
func (m *Manager) Resources() (capacity, allocatable v1.ResourceList) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity, allocatable = v1.ResourceList{}, v1.ResourceList{}
	now := m.clock.Now()
	dropped := false
	for name, rs := range m.resources {
		if !rs.stoppedAt.IsZero() && now.Sub(rs.stoppedAt) > stopGracePeriod {
			delete(m.resources, name)
			m.removed[name] = true
			dropped = true
			m.logger.Info("Device plugin resource dropped: its plugin stopped and did not register again", "resource", name, "after", stopGracePeriod)
			continue
		}
		healthy := 0
		for _, ok := range rs.devices {
			if ok {
				healthy++
			}
		}
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(int64(len(rs.devices)), resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(int64(healthy), resource.DecimalSI)
	}
	for name := range m.removed {
		capacity[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
		allocatable[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	if dropped {
		m.saveLocked()
	}
	return capacity, allocatable
}

// registration is the Registration gRPC service.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	m *Manager
}

// Register checks a plugin's request, dials it, asks its options and
// starts its ListAndWatch stream; the answer says why a plugin is refused.
func (r registration) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if err := r.m.register(ctx, req); err != nil {
		r.m.logger.Warn("Device plugin registration refused", "resource", req.GetResourceName(), "endpoint", req.GetEndpoint(), "err", err)
		return nil, err
	}
	return &pluginapi.Empty{}, nil
}

func (m *Manager) register(ctx context.Context, req *pluginapi.RegisterRequest) error {
	if !slices.Contains(pluginapi.SupportedVersions[:], req.GetVersion()) {
		return fmt.Errorf("requested API version %q is not supported by kubelet. Supported version is %q", req.GetVersion(), pluginapi.SupportedVersions)
	}
	if !isExtendedResourceName(req.GetResourceName()) {
		return fmt.Errorf("the ResourceName %q is invalid", req.GetResourceName())
	}
	if err := checkEndpoint(req.GetEndpoint()); err != nil {
		return err
	}
	ep, err := dial(filepath.Join(m.dir, req.GetEndpoint()), req.GetResourceName())
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, dialTimeout)
	opts, err := ep.client.GetDevicePluginOptions(octx, &pluginapi.Empty{})
	cancel()
	if err != nil {
		ep.close()
		return fmt.Errorf("failed to get device plugin options: %v", err)
	}
	ep.opts = opts
	m.mu.Lock()
	select {
	case <-m.stop:
		m.mu.Unlock()
		ep.close()
		return errors.New("the node agent is stopping; register again once it is back")
	default:
	}
	rs := m.resources[ep.resource]
	var old *endpoint
	if rs == nil {
		rs = &resourceState{devices: map[string]bool{}}
		m.resources[ep.resource] = rs
	} else {
		old = rs.ep
	}
	rs.ep, rs.stoppedAt = ep, time.Time{}
	delete(m.removed, ep.resource)
	m.saveLocked()
	m.wg.Add(1)
	m.mu.Unlock()
	if old != nil {
		// Its stream ends; endpointStopped sees it is not current.
		old.close()
	}
	m.logger.Info("Device plugin registered", "resource", ep.resource, "endpoint", req.GetEndpoint(),
		"preStartRequired", opts.GetPreStartRequired(), "preferredAllocation", opts.GetGetPreferredAllocationAvailable())
	go m.listAndWatch(ep)
	m.notify()
	return nil
}

// listAndWatch keeps the plugin's device list until its stream ends.
func (m *Manager) listAndWatch(ep *endpoint) {
	defer m.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stream, err := ep.client.ListAndWatch(ctx, &pluginapi.Empty{})
	for err == nil {
		var resp *pluginapi.ListAndWatchResponse
		if resp, err = stream.Recv(); err == nil {
			m.devicesUpdated(ep, resp.GetDevices())
		}
	}
	m.endpointStopped(ep, err)
}

// devicesUpdated takes a plugin's device list.
func (m *Manager) devicesUpdated(ep *endpoint, devices []*pluginapi.Device) {
	m.mu.Lock()
	rs := m.resources[ep.resource]
	if rs == nil || rs.ep != ep {
		m.mu.Unlock()
		return
	}
	rs.devices = make(map[string]bool, len(devices))
	healthy := 0
	for _, d := range devices {
		rs.devices[d.GetID()] = d.GetHealth() == pluginapi.Healthy
		if d.GetHealth() == pluginapi.Healthy {
			healthy++
		}
	}
	m.mu.Unlock()
	m.logger.Info("Device plugin sent its devices", "resource", ep.resource, "devices", len(devices), "healthy", healthy)
	m.notify()
}

// endpointStopped marks every device of the resource unhealthy when ep is
// still its plugin; the kubelet does not dial it again.
func (m *Manager) endpointStopped(ep *endpoint, err error) {
	ep.close()
	m.mu.Lock()
	rs := m.resources[ep.resource]
	current := rs != nil && rs.ep == ep
	if current {
		rs.stoppedAt = m.clock.Now()
		for id := range rs.devices {
			rs.devices[id] = false
		}
	}
	m.mu.Unlock()
	select {
	case <-m.stop:
		return
	default:
	}
	if current {
		m.logger.Warn("Device plugin's ListAndWatch ended; its devices are unhealthy until it registers again", "resource", ep.resource, "err", err, "droppedAfter", stopGracePeriod)
		m.notify()
	}
}
