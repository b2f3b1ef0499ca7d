package ipamrepair

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cni"
)

// Sandboxes is what the repair needs of the runtime: its sandboxes, of
// any state. cri.Runtime satisfies it.
type Sandboxes interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// Config is what the repair works on, as the engine holds it.
type Config struct {
	// Runtime lists the sandboxes that own reservations.
	Runtime Sandboxes
	// Network is the pod network (defaults applied) whose host-local
	// store is reconciled.
	Network cni.Config
	// Clock judges a reservation's age and paces the watch of young ones.
	Clock clock.Clock
	// Logger logs each release and the watch.
	Logger *slog.Logger
	// Released, if set, is called once per released reservation (the
	// engine's minikubelet_ipam_leaked_ips_released_total).
	Released func()
}

// ipamSettle is how old an unowned host-local reservation must be before
// RepairIPLeaks releases it. containerd's RunPodSandbox runs CNI ADD (which
// writes the reservation) before the sandbox is in its store and listed, so
// a reservation seconds old may belong to a RunPodSandbox still in flight:
// typically one of a daemon generation killed a moment ago, which containerd
// finishes or rolls back (CNI DEL) within about a second of the client
// going away. Younger candidates are watched until they resolve or age.
const ipamSettle = 5 * time.Second

// IPRepair says how RepairIPLeaks treats a reservation of a sandbox the
// runtime does not know, which may be a leak or a RunPodSandbox in flight.
type IPRepair struct {
	// MinAge: younger reservations are not released.
	MinAge time.Duration
	// Watch: wait (at most 2×MinAge) for young reservations to resolve
	// instead of leaving them for the next start.
	Watch bool
}

// DaemonIPRepair is the daemon's repair: it owns the node, so the only
// sandboxes in flight are those of its own previous generation, which
// containerd finishes or rolls back within about a second of that process
// dying; young reservations are watched until they resolve.
var DaemonIPRepair = IPRepair{MinAge: ipamSettle, Watch: true}

// ForegroundIPRepair is a foreground `run`'s repair: it shares the runtime
// with other clients (other runs, a daemon), whose RunPodSandbox may sit for
// seconds between CNI ADD and its sandbox being listed on a loaded machine
// (containerd 1.6 lists a sandbox only once its pause task started). Only
// reservations older than any sandbox creation takes are released; younger
// ones are left to a later start.
var ForegroundIPRepair = IPRepair{MinAge: 2 * time.Minute}

// ReleasedIP is a host-local reservation RepairIPLeaks released.
type ReleasedIP struct {
	IP        string
	SandboxID string
}

// ReleasedIPs formats released IPs for a log or progress line:
// "10.88.0.5 (sandbox abc123def456), …".
func ReleasedIPs(ips []ReleasedIP) string {
	parts := make([]string, len(ips))
	for i, r := range ips {
		parts[i] = fmt.Sprintf("%s (sandbox %s)", r.IP, shortID(r.SandboxID))
	}
	return strings.Join(parts, ", ")
}

// RepairIPLeaks releases the host-local reservations of the node's pod
// network that belong to no sandbox the runtime knows: IPs a crash of
// containerd (or a CNI DEL that failed) left behind, which would otherwise
// stay taken forever. Call it at start, before the agent creates any
// sandbox.
//
// CNI GC (spec 1.1, libcni GCNetworkList) would be the standard way, but the
// plugins pinned here (v1.9.1) implement GC as a no-op in bridge, portmap
// and host-local alike, and containerd 1.6's libcni cannot load a 1.1.0
// conflist; so the store is reconciled directly, the way host-local's DEL
// releases: under its lock, only files still owned by the dead sandbox.
//
// A sandbox of any state counts as live: containerd releases a NOTREADY
// sandbox's IP itself at StopPodSandbox or RemovePodSandbox (CNI DEL), and
// its network namespace may still hold the address until then. Only
// sandboxes the runtime no longer knows at all are leaked.
//
// The race accepted: a RunPodSandbox of another CRI client (not this agent,
// which has created nothing yet) whose CNI ADD wrote its reservation more
// than how.MinAge before its sandbox entered the runtime's store would lose
// its IP (see DaemonIPRepair and ForegroundIPRepair). Younger reservations are watched until they resolve or reach that
// age (the start waits only when there are young candidates, about a second
// after a crash of the previous process, ipamSettle for a true fresh leak).
func RepairIPLeaks(ctx context.Context, c Config, how IPRepair) ([]ReleasedIP, error) {
	var released []ReleasedIP
	// Young candidates are watched until they resolve (their sandbox
	// appears, or containerd's rollback releases them) or age; new ones
	// could keep coming from another client, so the watch is bounded.
	giveUp := c.Clock.Now().Add(2 * how.MinAge)
	waited := false
	for {
		leaked, err := leakedReservations(ctx, c)
		if err != nil {
			return released, err
		}
		young := 0
		for _, r := range leaked {
			if c.Clock.Since(r.Written) < how.MinAge {
				young++
				continue
			}
			ok, err := cni.ReleaseHostLocal(c.Network, c.Network.CacheDir, r)
			if err != nil {
				return released, fmt.Errorf("release leaked IP %s of sandbox %s: %w", r.IP, shortID(r.ID), err)
			}
			if ok {
				released = append(released, ReleasedIP{IP: r.IP, SandboxID: r.ID})
				c.Logger.Info("Released a leaked pod IP", "ip", r.IP, "sandboxID", r.ID, "network", c.Network.Name)
				if c.Released != nil {
					c.Released()
				}
			}
		}
		if young == 0 {
			return released, nil
		}
		if !how.Watch || !c.Clock.Now().Before(giveUp) {
			c.Logger.Info("Leaving young host-local reservations of unknown sandboxes for the next start", "count", young, "network", c.Network.Name)
			return released, nil
		}
		if !waited {
			c.Logger.Info("Waiting for host-local reservations of unknown sandboxes to settle", "count", young, "network", c.Network.Name)
			waited = true
		}
		select {
		case <-c.Clock.After(ipamPoll):
		case <-ctx.Done():
			return released, ctx.Err()
		}
	}
}

// ipamPoll is how often young candidates are looked at again.
const ipamPoll = 200 * time.Millisecond

// leakedReservations lists the reservations of the pod network whose
// container ID is not a sandbox of the runtime. The store is read before
// the runtime is listed, so a sandbox created in between is seen.
func leakedReservations(ctx context.Context, c Config) ([]cni.Reservation, error) {
	res, err := cni.ListHostLocal(c.Network)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	sbs, err := c.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	known := make(map[string]bool, len(sbs))
	for _, sb := range sbs {
		known[sb.Id] = true
	}
	var leaked []cni.Reservation
	for _, r := range res {
		if r.ID == "" || known[r.ID] {
			continue
		}
		leaked = append(leaked, r)
	}
	return leaked, nil
}

// shortID is the first 13 characters of a runtime ID, as crictl prints
// (the engine's, copied: a leaf of its own).
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
