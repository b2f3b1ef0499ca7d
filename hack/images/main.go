// Command images builds the images that the minikubelet demo and end-to-end
// tests run, and pushes them to a local registry:
//
//	<registry>/minikubelet/pause:3.10       static Go pause (./pause), the sandbox image
//	<registry>/minikubelet/busybox:1.36     the host's static busybox with its applets
//	<registry>/minikubelet/testserver:v1    busybox + the HTTP test server (./testserver)
//	<registry>/library/nginx:latest, ...    stand-ins for the images of the Kubernetes
//	                                        documentation's examples (standins.go, ./standin)
//
// Builds are reproducible: file times, owners and config timestamps are
// fixed and the Go binaries are built with -trimpath, so the same sources,
// Go toolchain and busybox give the same digests. A push is skipped when the
// registry already holds the digest. Run from the repository:
//
//	go run ./hack/images --registry 127.0.0.1:5000
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// modulePath is this repository's Go module; binaries are built from it.
const modulePath = "github.com/minikubelet/minikubelet"

// defaultPath is PATH in every image's config.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// options are the command-line settings.
type options struct {
	registry string
	cacheDir string
	busybox  string
	arch     string
	// e2eList and e2eBin select the e2e suite's images instead (e2e.go).
	e2eList, e2eBin string
	// e2eAgnhostExtra is a directory tree layered on top of agnhost (e2e.go).
	e2eAgnhostExtra string
	// e2eEtcd is the etcd binary of the e2e etcd image; e2eKubeSrc the
	// k8s.io/kubernetes source the nautilus and kitten images take their
	// files from (e2e.go).
	e2eEtcd, e2eKubeSrc string
	// e2eBusybox is the busybox binary of the e2e busybox image (e2e.go).
	e2eBusybox string
	// system, systemIptables and the versions select the cluster add-on
	// images instead (system.go).
	system, systemIptables, kubeVersion, corednsVersion string
}

// imageSpec describes one image to build.
type imageSpec struct {
	// repo and tag name the image below the registry.
	repo, tag string
	// layers are applied in order; what names the layer in the history.
	layers []layerSpec
	// entrypoint and cmd go into the image config.
	entrypoint, cmd []string
	// workingDir ("/" when empty) and stopSignal go into the image config.
	workingDir, stopSignal string
	// user goes into the image config (empty: root).
	user string
}

// layerSpec is one layer's content and the description put in its history.
type layerSpec struct {
	what    string
	entries []entry
}

func main() {
	var o options
	flag.StringVar(&o.registry, "registry", envOr("REGISTRY", "127.0.0.1:5000"), "registry host:port to push to (env REGISTRY)")
	flag.StringVar(&o.cacheDir, "cache-dir", defaultCacheDir(), "where built Go binaries are kept between runs")
	flag.StringVar(&o.busybox, "busybox", "/bin/busybox", "static busybox binary to copy into the images")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "image and binary architecture (the busybox must match)")
	flag.StringVar(&o.e2eList, "e2e", "", "build only the e2e suite's images named in this file (e2e.test --list-images; see e2e.go)")
	flag.StringVar(&o.e2eBin, "e2e-bin", "", "directory with the agnhost and nnp binaries for --e2e")
	flag.StringVar(&o.e2eBusybox, "e2e-busybox", "", "with --e2e: the busybox binary of the busybox image instead of --busybox (see e2e.go)")
	flag.StringVar(&o.e2eEtcd, "e2e-etcd", "", "with --e2e: the etcd binary of the etcd image (see e2e.go)")
	flag.StringVar(&o.e2eKubeSrc, "e2e-kube-src", "", "with --e2e: the k8s.io/kubernetes module's source directory (the nautilus and kitten images' files; see e2e.go)")
	flag.StringVar(&o.e2eAgnhostExtra, "e2e-agnhost-extra", "", "with --e2e: a directory tree added as a layer on top of the agnhost image (see e2e.go)")
	flag.StringVar(&o.system, "system", "", "build only the cluster add-on images (kube-proxy, coredns) from the binaries in this directory (see system.go)")
	flag.StringVar(&o.systemIptables, "system-iptables", "", "with --system: the iptables tree layered into the kube-proxy image")
	flag.StringVar(&o.kubeVersion, "kube-version", "", "with --system: the kube-proxy image's tag")
	flag.StringVar(&o.corednsVersion, "coredns-version", "", "with --system: the coredns image's tag")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "[images] ERROR:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	pause, err := buildBinary(ctx, root, o.cacheDir, "pause", o.arch)
	if err != nil {
		return err
	}
	testserver, err := buildBinary(ctx, root, o.cacheDir, "testserver", o.arch)
	if err != nil {
		return err
	}
	standinBin, err := buildBinary(ctx, root, o.cacheDir, "standin", o.arch)
	if err != nil {
		return err
	}
	busybox, applets, err := readBusybox(ctx, o.busybox)
	if err != nil {
		return err
	}

	bb := layerSpec{what: "busybox with " + fmt.Sprint(len(applets)) + " applets", entries: busyboxEntries(busybox, applets)}
	if o.e2eList != "" {
		return runE2E(ctx, o, bb, pause, standinBin)
	}
	if o.system != "" {
		if err := runSystem(ctx, o, bb); err != nil {
			return err
		}
		fmt.Printf("[images] system: done in %v\n", time.Since(start).Round(time.Millisecond))
		return nil
	}
	specs := []imageSpec{
		{
			repo: "minikubelet/pause", tag: "3.10",
			layers:     []layerSpec{{what: "/pause", entries: binaryEntries("pause", pause)}},
			entrypoint: []string{"/pause"},
		},
		{
			repo: "minikubelet/busybox", tag: "1.36",
			layers: []layerSpec{bb},
			cmd:    []string{"sh"},
		},
		{
			repo: "minikubelet/testserver", tag: "v1",
			layers:     []layerSpec{bb, {what: "/testserver", entries: binaryEntries("testserver", testserver)}},
			entrypoint: []string{"/testserver"},
		},
	}
	standinImages, err := standinSpecs(bb, standinBin)
	if err != nil {
		return err
	}
	specs = append(specs, standinImages...)
	for _, s := range specs {
		img, err := buildImage(s, o.arch)
		if err != nil {
			return fmt.Errorf("build %s:%s: %w", s.repo, s.tag, err)
		}
		if err := push(ctx, o.registry+"/"+s.repo+":"+s.tag, img); err != nil {
			return err
		}
	}
	fmt.Printf("[images] done in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// buildImage assembles an OCI image from the spec with fixed timestamps.
func buildImage(s imageSpec, arch string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config: v1.Config{
			Entrypoint: s.entrypoint,
			Cmd:        s.cmd,
			Env:        []string{defaultPath},
			WorkingDir: cmp.Or(s.workingDir, "/"),
			StopSignal: s.stopSignal,
			User:       s.user,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	for _, ls := range s.layers {
		l, err := newLayer(ls.entries)
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   l,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "hack/images: " + ls.what},
		})
		if err != nil {
			return nil, fmt.Errorf("append layer %s: %w", ls.what, err)
		}
	}
	return img, nil
}

// push uploads img to ref unless the registry already has that digest.
func push(ctx context.Context, ref string, img v1.Image) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("parse reference %q: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digest of %s: %w", ref, err)
	}
	desc, err := remote.Head(r, remote.WithContext(ctx))
	var terr *transport.Error
	switch {
	case err == nil && desc.Digest == digest:
		fmt.Printf("[images] %s %s: already in registry\n", ref, digest)
		return nil
	case err != nil && !(errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound):
		return fmt.Errorf("check %s in registry: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	fmt.Printf("[images] %s %s: pushed\n", ref, digest)
	return nil
}

// buildBinary builds ./hack/images/<name> as a static binary into cacheDir
// and returns its content. It skips `go build` when a key over the package's
// sources, go.mod, go.sum, the Go version and arch matches the last build.
func buildBinary(ctx context.Context, root, cacheDir, name, arch string) ([]byte, error) {
	pkgDir := filepath.Join(root, "hack", "images", name)
	key, err := sourceKey(ctx, root, pkgDir, arch)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(cacheDir, arch, name)
	keyFile := out + ".key"
	if old, err := os.ReadFile(keyFile); err == nil && string(old) == key {
		if b, err := os.ReadFile(out); err == nil {
			fmt.Printf("[images] %s binary: unchanged (%s)\n", name, out)
			return b, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("create cache dir: %w", err)
	}
	tmp := out + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid=", "-o", tmp, modulePath+"/hack/images/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w", name, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("install %s binary: %w", name, err)
	}
	if err := os.WriteFile(keyFile, []byte(key), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", keyFile, err)
	}
	fmt.Printf("[images] %s binary: built (%s)\n", name, out)
	return os.ReadFile(out)
}

// sourceKey hashes everything that decides a binary's bytes.
func sourceKey(ctx context.Context, root, pkgDir, arch string) (string, error) {
	goVersion, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", strings.TrimSpace(string(goVersion)), arch)
	files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		return "", fmt.Errorf("list %s: %w", pkgDir, err)
	}
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	sort.Strings(files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash sources: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readBusybox returns the busybox binary and its applet names.
func readBusybox(ctx context.Context, p string) ([]byte, []string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("read busybox (install busybox-static): %w", err)
	}
	out, err := exec.CommandContext(ctx, p, "--list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s --list: %w", p, err)
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return nil, nil, fmt.Errorf("%s --list printed no applets", p)
	}
	return b, applets, nil
}

// moduleRoot finds the directory of this module's go.mod from the working
// directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run inside the %s repository: no go.mod found", modulePath)
		}
		dir = parent
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "minikubelet", "images")
	}
	return filepath.Join(os.TempDir(), "minikubelet-images")
}
