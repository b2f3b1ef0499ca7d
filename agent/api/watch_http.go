package api

// This file serves the pod watch: GET …/pods?watch=true streams
// newline-delimited metav1.WatchEvent JSON objects, as the API server does.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// podSelection reads the namespace, fieldSelector (metadata.name and
// metadata.namespace, the fields supported) and labelSelector of a list or
// watch request.
func podSelection(r *http.Request) (PodWatchOptions, error) {
	q := r.URL.Query()
	o := PodWatchOptions{Namespace: r.PathValue("ns"), ResourceVersion: q.Get("resourceVersion")}
	if v := q.Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: %v", v, err))
		}
		var rest fields.Selector
		for _, req := range sel.Requirements() {
			known := podFields(&v1.Pod{})
			if _, ok := known[req.Field]; !ok {
				return o, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: field label not supported: %s", v, req.Field))
			}
			isEq := req.Operator == "=" || req.Operator == "=="
			switch {
			case req.Field == "metadata.name" && isEq:
				o.Name = req.Value
			case req.Field == "metadata.namespace" && isEq:
				if o.Namespace != "" && o.Namespace != req.Value {
					return o, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: metadata.namespace differs from the request's namespace %q", v, o.Namespace))
				}
				o.Namespace = req.Value
			default:
				var one fields.Selector
				if isEq {
					one = fields.OneTermEqualSelector(req.Field, req.Value)
				} else {
					one = fields.OneTermNotEqualSelector(req.Field, req.Value)
				}
				if rest == nil {
					rest = one
				} else {
					rest = fields.AndSelectors(rest, one)
				}
			}
		}
		o.Fields = rest
	}
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", v, err))
		}
		o.Labels = sel
	}
	return o, nil
}

// watchWriteTimeout bounds a write of watch events to a client.
const watchWriteTimeout = time.Minute

// watchEvent is metav1.WatchEvent's wire form with a typed object.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchPods streams the pod events of the watch sel selects until the
// client leaves, timeoutSeconds passes, the server stops, or the backend
// closes the watch (a watcher too slow gets an ERROR event first).
func (s *Server) watchPods(w http.ResponseWriter, r *http.Request, sel PodWatchOptions) error {
	q := r.URL.Query()
	timeout, err := queryInt(r, "timeoutSeconds")
	if err != nil {
		return err
	}
	initialEvents, err := queryBool(r, "sendInitialEvents")
	if err != nil {
		return err
	}
	bookmarks, err := queryBool(r, "allowWatchBookmarks")
	if err != nil {
		return err
	}
	if initialEvents {
		// Watch-list: the API server wants resourceVersionMatch
		// NotOlderThan; everything this hub holds is the present.
		if m := q.Get("resourceVersionMatch"); m != "" && m != string(metav1.ResourceVersionMatchNotOlderThan) {
			return apierrors.NewBadRequest(fmt.Sprintf("sendInitialEvents needs resourceVersionMatch NotOlderThan, not %q", m))
		}
		sel.ResourceVersion = ""
		sel.InitialEventsEnd = bookmarks
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("watch: the response writer cannot flush")
	}
	pw, err := s.backend.WatchPods(sel)
	if err != nil {
		return err
	}
	defer pw.Stop()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel)
	defer stop()
	var expire <-chan time.Time
	if timeout != nil {
		t := time.NewTimer(time.Duration(*timeout) * time.Second)
		defer t.Stop()
		expire = t.C
	}

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	// A client that stops reading would hold this goroutine in a write
	// forever (its watch is dropped once it falls behind, the write stays
	// blocked): each write gets a deadline.
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // for the stream's last chunk
	enc := json.NewEncoder(w)
	events := pw.Events()
	table, asTable := wantTable(r)
	write := func(ev PodEvent) error {
		out := watchEvent{Type: ev.Type, Object: ev.Pod}
		switch {
		case ev.Type == watch.Error:
			out.Object = ev.Status
		case asTable && ev.Type != watch.Bookmark:
			// Each event's object is a Table of one row, as the API
			// server sends for kubectl get -w.
			table.now = time.Now()
			out.Object = podTable([]*v1.Pod{ev.Pod}, table)
		}
		return enc.Encode(out) // one line each
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-expire:
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			_ = rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout)) // not every writer supports it
			if err := write(ev); err != nil {
				return nil // the client left
			}
			// Write what else is queued, then flush once.
			for more := true; more; {
				select {
				case ev, ok := <-events:
					if !ok {
						fl.Flush()
						return nil
					}
					if err := write(ev); err != nil {
						return nil
					}
				default:
					more = false
				}
			}
			fl.Flush()
		}
	}
}
