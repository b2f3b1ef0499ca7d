package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const deleteUsage = `Usage: minikubelet delete pod NAME... [-n NS] [--grace-period N] [--wait]
       minikubelet delete -f FILE [--grace-period N] [--wait]

Delete pods submitted through the API (run, or a previous POST). Static pods
from the manifest directory cannot be deleted here: remove their file.
With -f, delete every pod the manifest FILE names ("-" reads stdin), then its
ConfigMaps and Secrets (those submitted through the API).
`

// deletePollInterval is how often --wait asks whether the pod is gone.
const deletePollInterval = 500 * time.Millisecond

func deleteCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("delete", deleteUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	var file string
	var grace int64
	var wait bool
	var timeout time.Duration
	fs.StringVar(&file, "filename", "", "delete the pods, ConfigMaps and Secrets named in this manifest")
	fs.StringVar(&file, "f", "", "shorthand for --filename")
	fs.Int64Var(&grace, "grace-period", -1, "seconds the containers get to stop (-1: the pod's own terminationGracePeriodSeconds)")
	fs.BoolVar(&wait, "wait", false, "wait until the pods are gone")
	fs.DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (0: no limit)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}

	type target struct{ ns, name string }
	var (
		targets []target
		// configs are the ConfigMaps and Secrets -f names, deleted after
		// the pods.
		configs []manifestRef
	)
	switch {
	case file != "" && len(pos) > 0:
		return usageError(fs, "give either -f FILE or pod names, not both")
	case file != "":
		refs, err := readManifestRefs(file, cf.namespace)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		for _, r := range refs {
			if r.kind != "Pod" {
				configs = append(configs, r)
				continue
			}
			targets = append(targets, target{r.namespace, r.name})
		}
	default:
		names, err := podNames(fs, pos)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return usageError(fs, "delete needs pod names or -f FILE")
		}
		for _, n := range names {
			targets = append(targets, target{cf.namespace, n})
		}
	}
	var gp *int64
	if grace >= 0 {
		gp = &grace
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	c := cf.client()
	var errs []error
	var deleted []target
	for _, t := range targets {
		if _, err := c.DeletePod(ctx, t.ns, t.name, gp); err != nil {
			errs = append(errs, err)
			continue
		}
		if !wait {
			fmt.Fprintf(stdout, "pod %q deleted\n", t.name)
		}
		deleted = append(deleted, t)
	}
	if wait {
		for _, t := range deleted {
			if err := waitPodGone(ctx, c.GetPod, t.ns, t.name); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(stdout, "pod %q deleted\n", t.name)
		}
	}
	// The pods are stopped (or stopping) first: they use these.
	for _, r := range configs {
		del := c.DeleteConfigMap
		if r.kind == "Secret" {
			del = c.DeleteSecret
		}
		if err := del(ctx, r.namespace, r.name); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "%s %q deleted\n", strings.ToLower(r.kind), r.name)
	}
	return errors.Join(errs...)
}

// waitPodGone polls get until it answers NotFound.
func waitPodGone[T any](ctx context.Context, get func(context.Context, string, string) (T, error), ns, name string) error {
	t := time.NewTicker(deletePollInterval)
	defer t.Stop()
	for {
		_, err := get(ctx, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("wait for pod %q to go: %w", name, ctx.Err())
		case err != nil:
			return fmt.Errorf("wait for pod %q to go: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for pod %q to go: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// manifestRef names one object of a manifest.
type manifestRef struct {
	// kind is "Pod", "ConfigMap" or "Secret".
	kind, namespace, name string
}

// manifestObject is the little of a manifest document delete needs.
type manifestObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	// Items holds the objects of a v1 List.
	Items []manifestObject `json:"items"`
}

// readManifestRefs returns the pods, ConfigMaps and Secrets a manifest file
// names, in file order (its YAML or JSON documents, and the items of v1
// Lists); a namespace missing from a document is defaultNS. Only names are
// read: a manifest the daemon would refuse can still name what to delete.
func readManifestRefs(file, defaultNS string) ([]manifestRef, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var refs []manifestRef
	for doc := 1; ; doc++ {
		var obj manifestObject
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		objs := []manifestObject{obj}
		if obj.Kind == "List" {
			objs = obj.Items
		}
		for _, o := range objs {
			if o.Kind == "" && o.Metadata.Name == "" {
				continue // an empty document
			}
			switch o.Kind {
			case "Pod", "ConfigMap", "Secret":
			default:
				return nil, fmt.Errorf("%s: document %d: %s %q is not a Pod, ConfigMap or Secret: minikubelet runs only pods", file, doc, o.Kind, o.Metadata.Name)
			}
			if o.Metadata.Name == "" {
				return nil, fmt.Errorf("%s: document %d: a %s without metadata.name", file, doc, strings.ToLower(o.Kind))
			}
			ns := o.Metadata.Namespace
			if ns == "" {
				ns = defaultNS
			}
			refs = append(refs, manifestRef{o.Kind, ns, o.Metadata.Name})
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("%s names no pod, ConfigMap or Secret", file)
	}
	return refs, nil
}
