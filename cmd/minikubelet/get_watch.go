package main

// This file is `get pods --watch`: list, then follow the daemon's pod watch
// from the list's resource version, printing each change, as kubectl does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/api"
)

// watchPods lists the pods of ns ("" = all; name "" = every pod), prints
// them, then prints each change until ctx ends. A watch the daemon ends or
// expires (410: this client fell behind, or the daemon restarted) is
// followed by a new list and watch.
func watchPods(ctx context.Context, c *api.Client, ns, name, output string, stdout, stderr io.Writer) error {
	p := &watchPrinter{out: stdout, output: output, withNamespace: ns == ""}
	rv := ""
	for {
		if rv == "" {
			l, err := c.ListPods(ctx, ns)
			if err != nil {
				return watchEnd(ctx, err)
			}
			var pods []v1.Pod
			for _, pod := range l.Items {
				if name == "" || pod.Name == name {
					pods = append(pods, pod)
				}
			}
			if err := p.initial(pods); err != nil {
				return err
			}
			rv = l.ResourceVersion
		}
		w, err := c.WatchPods(ctx, ns, api.WatchOptions{Name: name, ResourceVersion: rv})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			rv = ""
			continue
		}
		if err != nil {
			return watchEnd(ctx, err)
		}
		rv, err = p.follow(ctx, w, rv)
		w.Stop()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// watchEnd maps an error to nil once ctx ended (interrupted: done).
func watchEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// follow prints w's events until it ends and returns the resource version
// to watch again from ("" after an Expired error: list again).
func (p *watchPrinter) follow(ctx context.Context, w watch.Interface, rv string) (string, error) {
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			switch ev.Type {
			case watch.Error:
				st, _ := ev.Object.(*metav1.Status)
				if st != nil && (st.Reason == metav1.StatusReasonExpired || st.Code == 410) {
					return "", nil
				}
				msg := "unknown error"
				if st != nil {
					msg = st.Message
				}
				return rv, fmt.Errorf("watch pods: %s", msg)
			case watch.Bookmark:
				if pod, ok := ev.Object.(*v1.Pod); ok {
					rv = pod.ResourceVersion
				}
			default:
				pod, ok := ev.Object.(*v1.Pod)
				if !ok {
					continue
				}
				rv = pod.ResourceVersion
				if err := p.change(pod); err != nil {
					return rv, err
				}
			}
		}
	}
}

// watchPrinter prints the pods of a watch: a table whose later rows keep
// the first header's column widths, or one object per change.
type watchPrinter struct {
	out           io.Writer
	output        string
	withNamespace bool
	// starts are the column offsets of the printed header (nil until one
	// is printed).
	starts []int
}

// initial prints the listed pods: the table with its header, or each
// object.
func (p *watchPrinter) initial(pods []v1.Pod) error {
	if p.output == "" || p.output == "wide" {
		if len(pods) == 0 {
			return nil
		}
		if p.starts != nil {
			// A new list after an expired watch: rows only.
			for i := range pods {
				if err := p.change(&pods[i]); err != nil {
					return err
				}
			}
			return nil
		}
		return p.table(pods)
	}
	for i := range pods {
		if err := p.change(&pods[i]); err != nil {
			return err
		}
	}
	return nil
}

// table prints pods with a header and records its column offsets.
func (p *watchPrinter) table(pods []v1.Pod) error {
	var buf bytes.Buffer
	if err := printPodTable(&buf, pods, p.output == "wide", p.withNamespace, time.Now()); err != nil {
		return err
	}
	head, _, _ := strings.Cut(buf.String(), "\n")
	p.starts = nil
	for i := range head {
		if head[i] != ' ' && (i == 0 || head[i-1] == ' ') {
			p.starts = append(p.starts, i)
		}
	}
	_, err := p.out.Write(buf.Bytes())
	return err
}

// change prints one pod's new state.
func (p *watchPrinter) change(pod *v1.Pod) error {
	switch p.output {
	case "name":
		_, err := fmt.Fprintf(p.out, "pod/%s\n", pod.Name)
		return err
	case "json", "yaml":
		out := *pod
		out.APIVersion, out.Kind = "v1", "Pod"
		var b []byte
		var err error
		if p.output == "json" {
			b, err = json.MarshalIndent(&out, "", "    ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(&out)
			b = append([]byte("---\n"), b...)
		}
		if err != nil {
			return fmt.Errorf("encode %s: %w", p.output, err)
		}
		_, err = p.out.Write(b)
		return err
	}
	if p.starts == nil {
		return p.table([]v1.Pod{*pod})
	}
	cells := podTableCells(pod, p.output == "wide", p.withNamespace, time.Now())
	var line strings.Builder
	for i, cell := range cells {
		line.WriteString(cell)
		if i == len(cells)-1 {
			break
		}
		// The header's column width, or the table's gap past a longer
		// cell.
		pad := 3
		if i+1 < len(p.starts) {
			pad = max(pad, p.starts[i+1]-p.starts[i]-len(cell))
		}
		line.WriteString(strings.Repeat(" ", pad))
	}
	line.WriteByte('\n')
	_, err := io.WriteString(p.out, line.String())
	return err
}
