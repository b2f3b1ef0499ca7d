package cluster

// Deletion of cluster pods, as the kubelet does it: the API server only
// marks a pod deleted (deletionTimestamp, deletionGracePeriodSeconds); the
// node tears it down with that grace period and then removes the object
// with grace 0, its UID as precondition (the kubelet's status manager,
// once the pod's worker has finished).

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Retry back-off of a failed delete.
const (
	deleteRetryBase = 500 * time.Millisecond
	deleteRetryMax  = 30 * time.Second
)

// podDeleter removes the objects of the pods being deleted once the agent
// has finished with them. It belongs to PodSource.Run's goroutine (observe,
// start and stop are called from there only); each deletion then waits
// and retries in a goroutine of its own, so the source never blocks.
type podDeleter struct {
	client API
	// podDone is the agent's PodDone: nil means the agent has no such pod;
	// otherwise a channel closed once its teardown completed.
	podDone func(types.UID) <-chan struct{}
	// flush sends the pod's final status first (nil: nothing to send).
	flush    func(context.Context, types.UID)
	logger   *slog.Logger
	nodeName string
	// retryBase and retryMax bound the back-off between failed deletes.
	retryBase, retryMax time.Duration

	ctx  context.Context
	wg   sync.WaitGroup
	pods map[types.UID]*deletion
}

// deletion is one pod marked deleted on the API server.
type deletion struct {
	namespace, name string
	uid             types.UID
	// gen is the source's generation in which the mark was first seen.
	gen uint64
	// cancel stops the deletion's goroutine; nil until it started.
	cancel context.CancelFunc
}

func newPodDeleter(ctx context.Context, s *PodSource) *podDeleter {
	return &podDeleter{
		client: s.client, podDone: s.podDone, flush: s.flush, logger: s.logger, nodeName: s.nodeName,
		retryBase: s.deleteRetryBase, retryMax: s.deleteRetryMax,
		ctx: ctx, pods: map[types.UID]*deletion{},
	}
}

// observe notes the marked pods of the informer's set of generation gen,
// and forgets (stopping their goroutine) those whose object is gone.
func (d *podDeleter) observe(pods []*v1.Pod, gen uint64) {
	present := make(map[types.UID]bool, len(d.pods))
	for _, p := range pods {
		// Mirror pods are MirrorPods' business.
		if p.DeletionTimestamp == nil || p.Spec.NodeName != d.nodeName || isMirrorPod(p) {
			continue
		}
		present[p.UID] = true
		if _, ok := d.pods[p.UID]; !ok {
			d.pods[p.UID] = &deletion{namespace: p.Namespace, name: p.Name, uid: p.UID, gen: gen}
		}
	}
	for uid, del := range d.pods {
		if !present[uid] {
			if del.cancel != nil {
				del.cancel()
			}
			delete(d.pods, uid)
		}
	}
}

// start starts the deletions the consumer knows of: those marked in a
// generation up to delivered, the newest the consumer has received. Before
// that, the agent may not have seen the pod yet (a set handing it over
// unmarked could still be on its way), and "no such pod" would not mean
// "finished". The agent is asked once applied, the Applied channel of the
// newest set sent, is closed: the daemon applies sets in the order it
// receives them, so every set up to the marked one has been applied then,
// and a pod first seen marked has its worker.
func (d *podDeleter) start(delivered uint64, applied <-chan struct{}) {
	if d.podDone == nil {
		return
	}
	for _, del := range d.pods {
		if del.cancel != nil || del.gen > delivered {
			continue
		}
		ctx, cancel := context.WithCancel(d.ctx)
		del.cancel = cancel
		d.wg.Add(1)
		go func(del deletion) {
			defer d.wg.Done()
			select {
			case <-applied:
			case <-ctx.Done():
				return
			}
			d.finish(ctx, del, d.podDone(del.uid))
		}(*del)
	}
}

// stop stops every deletion and waits for their goroutines.
func (d *podDeleter) stop() {
	for _, del := range d.pods {
		if del.cancel != nil {
			del.cancel()
		}
	}
	d.wg.Wait()
}

// finish waits until done is closed (the agent finished the pod; nil:
// the agent has no such pod), then deletes its object with grace 0 and its UID as precondition, retrying with back-off
// until it is gone or ctx ends. An object deleted already (NotFound), or
// replaced by a pod of the same name (Conflict on the UID), is done.
func (d *podDeleter) finish(ctx context.Context, del deletion, done <-chan struct{}) {
	log := d.logger.With("pod", del.namespace+"/"+del.name, "podUID", string(del.uid))
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
	if d.flush != nil {
		d.flush(ctx, del.uid)
	}
	delay := d.retryBase
	for attempt := 1; ; attempt++ {
		deleted, err := deleteExact(ctx, d.client, del.namespace, del.name, del.uid)
		switch {
		case err == nil && deleted:
			log.Info("Pod deleted from the API server: its teardown finished")
			return
		case err == nil:
			log.Debug("Pod object already gone or replaced")
			return
		case ctx.Err() != nil:
			return
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("Cannot delete the finished pod from the API server; retrying", "err", err, "attempts", attempt, "retryIn", delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, d.retryMax)
	}
}

// deleteExact deletes the pod object namespace/name if it is still the one
// with uid (a UID precondition: a pod created again under that name is not
// the node's to delete), with grace 0: the node's final delete, once
// nothing of the pod runs. deleted is false when the object was already
// gone or replaced, which is no error.
func deleteExact(ctx context.Context, client API, namespace, name string, uid types.UID) (deleted bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	grace := int64(0)
	err = client.Pods(namespace).Delete(rctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
}
