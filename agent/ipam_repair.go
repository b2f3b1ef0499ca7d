package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/cni"
)

// ipamSettle is how old an unowned host-local reservation must be before
// RepairIPLeaks releases it. containerd's RunPodSandbox runs CNI ADD (which
// writes the reservation) before the sandbox is in its store and listed, so
// a reservation seconds old may belong to a RunPodSandbox still in flight:
// typically one of a daemon generation killed a moment ago, which containerd
// finishes or rolls back (CNI DEL) within about a second of the client
// going away. Young candidates are looked at again once this old.
const ipamSettle = 5 * time.Second

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
// than ipamSettle before its sandbox entered the runtime's store would lose
// its IP. Younger reservations are checked again once ipamSettle old (the
// start waits at most that long, only when there are young candidates).
func (a *Agent) RepairIPLeaks(ctx context.Context) ([]ReleasedIP, error) {
	var released []ReleasedIP
	for pass := 0; pass < 2; pass++ {
		leaked, err := a.leakedReservations(ctx)
		if err != nil {
			return released, err
		}
		wait := time.Duration(0)
		for _, r := range leaked {
			if age := a.clock.Since(r.Written); age < ipamSettle {
				wait = max(wait, ipamSettle-age)
				continue
			}
			ok, err := cni.ReleaseHostLocal(a.cfg.Network, "", r)
			if err != nil {
				return released, fmt.Errorf("release leaked IP %s of sandbox %s: %w", r.IP, shortID(r.ID), err)
			}
			if ok {
				released = append(released, ReleasedIP{IP: r.IP, SandboxID: r.ID})
				a.logger.Info("Released a leaked pod IP", "ip", r.IP, "sandboxID", r.ID, "network", a.cfg.Network.Name)
				a.metrics.ipsReleased.Inc()
			}
		}
		if wait == 0 || pass == 1 {
			if wait > 0 {
				a.logger.Info("Leaving young host-local reservations of unknown sandboxes for the next start", "network", a.cfg.Network.Name)
			}
			break
		}
		a.logger.Info("Waiting for host-local reservations of unknown sandboxes to settle", "wait", wait.Round(time.Millisecond))
		select {
		case <-a.clock.After(wait):
		case <-ctx.Done():
			return released, ctx.Err()
		}
	}
	return released, nil
}

// leakedReservations lists the reservations of the pod network whose
// container ID is not a sandbox of the runtime. The store is read before
// the runtime is listed, so a sandbox created in between is seen.
func (a *Agent) leakedReservations(ctx context.Context) ([]cni.Reservation, error) {
	res, err := cni.ListHostLocal(a.cfg.Network)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	sbs, err := a.runtime.ListPodSandbox(ctx, nil)
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
