package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

// ErrNetworkNotReady classifies a runtime that did not report its pod
// network ready in time (CRI Status condition NetworkReady false).
var ErrNetworkNotReady = errors.New("pod network not ready")

const (
	// versionTimeout bounds one plugin's answer to the VERSION command.
	versionTimeout = 10 * time.Second
	// readyPollInterval is how often WaitReady asks the runtime.
	readyPollInterval = 100 * time.Millisecond
	// loopbackPlugin is not in our conflist, but containerd runs it from the
	// same plugin dirs to bring up lo in every sandbox, so it must be present.
	loopbackPlugin = "loopback"
)

// Validate renders the conflist for c, parses it with libcni, and checks that
// every plugin binary containerd will run for it (the plugins, their IPAM
// plugin, and loopback) exists in BinDirs and answers VERSION with support
// for the conflist's cniVersion. All problems are reported together.
func Validate(ctx context.Context, c Config) error {
	c = c.WithDefaults()
	data, err := Render(c)
	if err != nil {
		return err
	}
	return validateBytes(ctx, c, data)
}

// validateBytes is Validate for an already rendered conflist.
func validateBytes(ctx context.Context, c Config, data []byte) error {
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return fmt.Errorf("parse rendered conflist: %w", err)
	}
	// The plugins answer VERSION side by side: each is a process start
	// (3–5 ms here), and one after another they were the longest step of
	// a foreground run's node setup, before its first sandbox. The errors
	// keep the plugins' order.
	// Those that answered before, unchanged since, are not run again
	// (check_cache.go).
	plugins := requiredPlugins(list)
	known := readCheckCache(c.CheckCache)
	checked := make([]error, len(plugins))
	keys, stamps := make([]string, len(plugins)), make([]string, len(plugins))
	var wg sync.WaitGroup
	for i, p := range plugins {
		wg.Go(func() { keys[i], stamps[i], checked[i] = checkPlugin(ctx, p, c.BinDirs, list.CNIVersion, known) })
	}
	wg.Wait()
	var errs []error
	answered := make(map[string]string, len(plugins))
	for i, err := range checked {
		if err != nil {
			errs = append(errs, err)
		} else if stamps[i] != "" {
			answered[keys[i]] = stamps[i]
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("check CNI plugins for network %q: %w", list.Name, errors.Join(errs...))
	}
	writeCheckCache(c.CheckCache, known, answered)
	return nil
}

// requiredPlugins lists, in order and without duplicates, the plugin
// binaries a conflist needs: each plugin's type, its IPAM type, and loopback.
func requiredPlugins(list *libcni.NetworkConfigList) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, p := range list.Plugins {
		add(p.Network.Type)
		add(p.Network.IPAM.Type)
	}
	add(loopbackPlugin)
	return names
}

// checkPlugin finds plugin in dirs and asks it which spec versions it
// supports, unless known records the same file's answer for want. It
// returns the plugin's cache key and stamp (check_cache.go). Errors name
// the plugin, the dirs searched and the fix.
func checkPlugin(ctx context.Context, plugin string, dirs []string, want string, known map[string]string) (key, stamp string, err error) {
	path, err := invoke.FindInPath(plugin, dirs)
	if err != nil {
		return "", "", fmt.Errorf("CNI plugin %q not found in %s: %s to build it there", plugin, strings.Join(dirs, ", "), installHint)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("CNI plugin %q: %w", plugin, err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", "", fmt.Errorf("CNI plugin %q at %s is not executable: chmod +x it or %s", plugin, path, installHint)
	}
	key, stamp = checkCacheKey(path, want), fileStamp(fi)
	if stamp != "" && known[key] == stamp {
		return key, stamp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	info, err := invoke.GetVersionInfo(ctx, path, nil)
	if err != nil {
		return "", "", fmt.Errorf("CNI plugin %q at %s did not answer VERSION (searched %s; %s to reinstall): %w",
			plugin, path, strings.Join(dirs, ", "), installHint, err)
	}
	if supported := info.SupportedVersions(); !slices.Contains(supported, want) {
		return "", "", fmt.Errorf("CNI plugin %q at %s supports spec versions [%s], not %s that the conflist uses (searched %s): %s to install newer plugins",
			plugin, path, strings.Join(supported, " "), want, strings.Join(dirs, ", "), installHint)
	}
	return key, stamp, nil
}

// WaitReady polls ready (at once, then every 100 ms) until it reports ok or
// ctx is done. ready is supplied by the caller; the agent wraps the CRI Status
// call and its NetworkReady condition. An error from ready is remembered and
// polling goes on, since the runtime may still be starting.
//
// When ctx ends first, the error wraps ErrNetworkNotReady and ctx's error, and
// its text names the conf dir, the plugin dirs, the runtime's last reason and
// message, and what to do.
func WaitReady(ctx context.Context, c Config, ready func(context.Context) (ok bool, reason, message string, err error)) error {
	c = c.WithDefaults()
	start := time.Now()
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()

	var last string // the runtime's last answer, for the error text
	for {
		ok, reason, message, err := ready(ctx)
		switch {
		case err != nil:
			last = "last check failed: " + err.Error()
		case ok:
			return nil
		default:
			last = fmt.Sprintf("runtime reports NetworkReady=false, reason %q, message %q", reason, message)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %s: %s; the runtime loads the first CNI config in %s and runs plugins from %s: check that %s exists and that containerd's CRI config uses these dirs, or %s: %w",
				ErrNetworkNotReady, time.Since(start).Round(time.Millisecond), last,
				c.ConfDir, strings.Join(c.BinDirs, ", "), ConfPath(c), installHint, ctx.Err())
		case <-ticker.C:
		}
	}
}
