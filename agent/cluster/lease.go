package cluster

// The node lease: a coordination.k8s.io/v1 Lease named after the node in
// kube-node-lease, held by the node and renewed every 10 s for 40 s. The
// node lifecycle controller reads it as the node's heartbeat; the status
// itself is sent only when it changes (or every 5 minutes).

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaseNamespace is where node leases live (v1.NamespaceNodeLease).
const leaseNamespace = v1.NamespaceNodeLease

// leaseLoop renews the lease every LeaseRenewPeriod; after a failure it
// retries sooner (0.2 s doubling to 7 s), so that one lost request does not
// cost a whole period of a 40 s lease.
func (n *NodeAgent) leaseLoop(ctx context.Context) {
	for {
		err := n.renewLease(ctx)
		if ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		wasFailing := n.state.Lease.ConsecutiveFailures > 0
		n.state.Lease.record(err, n.clock.Now())
		failures := n.state.Lease.ConsecutiveFailures
		n.mu.Unlock()
		next := n.cfg.LeaseRenewPeriod
		switch {
		case err != nil:
			next = retryDelay(failures)
			if failures%30 == 1 {
				n.logger.Warn("Cannot renew the node lease; pods keep running, retrying", "err", err, "failures", failures)
			}
		case wasFailing:
			n.logger.Info("Node lease renewed again", "afterFailures", failures)
		}
		if !n.wait(ctx, next) {
			return
		}
	}
}

// desiredLease is the node's Lease renewed at now, on top of base (nil for
// a new one).
func (n *NodeAgent) desiredLease(base *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Node.Name, Namespace: leaseNamespace}}
	if base != nil {
		l = base.DeepCopy()
	}
	holder := n.cfg.Node.Name
	secs := int32(n.cfg.LeaseDuration / time.Second) //nolint:gosec // 40 s by default
	renew := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &renew
	// Owned by the Node, so that deleting the Node deletes its lease (the
	// kubelet does the same).
	n.mu.Lock()
	uid := n.state.UID
	n.mu.Unlock()
	if uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: n.cfg.Node.Name, UID: uid,
		}}
	}
	return l
}

// renewLease writes the renewed lease: an update of the copy last seen
// (optimistic concurrency); on a conflict or without a copy, the current
// one is read first, and a missing one is created.
func (n *NodeAgent) renewLease(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	leases := n.client.Leases(leaseNamespace)
	if n.lease != nil {
		updated, err := leases.Update(rctx, n.desiredLease(n.lease, n.clock.Now()), metav1.UpdateOptions{})
		if err == nil {
			n.lease = updated
			return nil
		}
		n.lease = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("update lease %s/%s: %w", leaseNamespace, n.cfg.Node.Name, err)
		}
	}
	current, err := leases.Get(rctx, n.cfg.Node.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		created, err := leases.Create(rctx, n.desiredLease(nil, n.clock.Now()), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease %s/%s: %w", leaseNamespace, n.cfg.Node.Name, err)
		}
		n.lease = created
		return nil
	case err != nil:
		return fmt.Errorf("get lease %s/%s: %w", leaseNamespace, n.cfg.Node.Name, err)
	}
	updated, err := leases.Update(rctx, n.desiredLease(current, n.clock.Now()), metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update lease %s/%s: %w", leaseNamespace, n.cfg.Node.Name, err)
	}
	n.lease = updated
	return nil
}
