package api

// This file serves the event watch (kubectl get events -w): the node keeps
// its events in each pod's worker (a bounded ring, no resource versions),
// so the watch polls them and sends what is new (ADDED) or counted again
// (MODIFIED, a repeated event's count and last time).
//
// Resource versions: a list answers eventsResourceVersion; a watch from it
// (what kubectl get -w sends) starts from the events present when the
// watch starts, so an event recorded between the list and the watch is not
// sent (the window is one request). A watch without a resource version (or
// "0") first sends every present event as ADDED, as the API server does.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// eventsResourceVersion is the resource version of every event list.
const eventsResourceVersion = "1"

// defaultEventPoll is how often a watch looks for new events.
const defaultEventPoll = 500 * time.Millisecond

// eventKey identifies an event across polls: the pod instance, where, why
// and when first.
func eventKey(e *v1.Event) string {
	return string(e.InvolvedObject.UID) + "\x00" + e.InvolvedObject.FieldPath + "\x00" + e.Reason + "\x00" + strconv.FormatInt(e.FirstTimestamp.UnixNano(), 10)
}

func (s *Server) watchEvents(w http.ResponseWriter, r *http.Request, ns, name string) error {
	timeout, err := queryInt(r, "timeoutSeconds")
	if err != nil {
		return err
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("watch: the response writer cannot flush")
	}
	rv := r.URL.Query().Get("resourceVersion")
	seen := map[string]int32{}
	if rv != "" && rv != "0" {
		evs, err := s.events(ns, name)
		if err != nil {
			return err
		}
		for i := range evs {
			seen[eventKey(&evs[i])] = evs[i].Count
		}
	}
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
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	enc := json.NewEncoder(w)
	table, asTable := wantTable(r)
	poll := s.opts.EventPollInterval
	if poll <= 0 {
		poll = defaultEventPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		// A pod deleted meanwhile (or while named) has no events: the
		// watch goes on, as one on the API server would.
		evs, _ := s.events(ns, name)
		wrote := false
		for i := range evs {
			e := evs[i] // a copy: its type meta is set below
			k := eventKey(&e)
			count, known := seen[k]
			if known && count == e.Count {
				continue
			}
			seen[k] = e.Count
			e.APIVersion, e.Kind = "v1", "Event"
			out := watchEvent{Type: watch.Added, Object: &e}
			if known {
				out.Type = watch.Modified
			}
			if asTable {
				table.now = time.Now()
				out.Object = eventTable([]v1.Event{e}, table)
			}
			_ = rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
			if err := enc.Encode(out); err != nil {
				return nil // the client left
			}
			wrote = true
		}
		if wrote {
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-expire:
			return nil
		case <-tick.C:
		}
	}
}
