// Package cni owns the node's pod network configuration: it renders the
// bridge + host-local + portmap conflist, checks it against the plugin
// binaries on the node, installs it into containerd's CNI conf dir and waits
// for the runtime to report the network ready.
//
// It does not run per-pod ADD/DEL: containerd's CRI plugin does that itself
// inside RunPodSandbox and StopPodSandbox, using the conflist installed here.
package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultName    = "minikubelet"
	DefaultPodCIDR = "10.88.0.0/16"
	DefaultBridge  = "mkl0"
	DefaultConfDir = "/etc/cni/net.d"
	DefaultBinDir  = "/opt/cni/bin"

	// DefaultHostLocalDataDir is where host-local keeps its reservations
	// when the IPAM config sets no dataDir.
	DefaultHostLocalDataDir = "/var/lib/cni/networks"

	// cniVersion is the spec version of the rendered conflist.
	cniVersion = "1.0.0"

	// installHint tells the user how to get the plugin binaries.
	installHint = "run hack/install-deps.sh"
)

// Config describes the node's pod network.
type Config struct {
	// Name is the network name, default "minikubelet"; it is also the
	// host-local IPAM store name (a directory under DataDir).
	Name string
	// PodCIDR is the IPv4 range pods get addresses from, default "10.88.0.0/16".
	PodCIDR string
	// Bridge is the host bridge device, default "mkl0".
	Bridge string
	// ConfDir is containerd's CNI conf dir, default "/etc/cni/net.d".
	ConfDir string
	// BinDirs are the plugin dirs, default ["/opt/cni/bin"].
	BinDirs []string
	// DataDir is host-local's dataDir; "" means the plugin default
	// /var/lib/cni/networks. Tests use a private one.
	DataDir string
	// CacheDir is where the runtime's libcni caches each ADD's result
	// (<CacheDir>/results); "" means libcni's default, DefaultCacheDir,
	// which containerd uses (it sets no other). Tests use a private one.
	CacheDir string
	// Masquerade sets the bridge's ipMasq: users want egress from pods,
	// test environments turn it off to leave the host's NAT alone.
	Masquerade bool
	// MTU of the bridge and veths; 0 means the plugin default.
	MTU int
	// CheckCache is a file of the agent's state where Check remembers the
	// plugins that answered VERSION (check_cache.go): a plugin file not
	// changed since is not run again. "" runs every plugin each time.
	CheckCache string
}

// WithDefaults returns c with every empty field set to its default.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.PodCIDR == "" {
		c.PodCIDR = DefaultPodCIDR
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.ConfDir == "" {
		c.ConfDir = DefaultConfDir
	}
	if len(c.BinDirs) == 0 {
		c.BinDirs = []string{DefaultBinDir}
	}
	return c
}

// The conflist schema, as far as we render it. Struct field order fixes the
// JSON key order, which keeps Render deterministic.
type (
	confList struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	bridgeConf struct {
		Type        string   `json:"type"`
		Bridge      string   `json:"bridge"`
		IsGateway   bool     `json:"isGateway"`
		IPMasq      bool     `json:"ipMasq"`
		HairpinMode bool     `json:"hairpinMode"`
		MTU         int      `json:"mtu,omitempty"`
		IPAM        ipamConf `json:"ipam"`
	}
	ipamConf struct {
		Type    string          `json:"type"`
		Ranges  [][]ipamRange   `json:"ranges"`
		Routes  []ipamRouteConf `json:"routes"`
		DataDir string          `json:"dataDir,omitempty"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRouteConf struct {
		Dst string `json:"dst"`
	}
	portmapConf struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
		SNAT         bool            `json:"snat"`
	}
)

// networkNameRE is the CNI spec's rule for network names; the name also
// becomes part of a file name here, so it must not contain a separator.
var networkNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// Render returns the conflist for c (after WithDefaults): a bridge with
// host-local IPAM over PodCIDR, then portmap for hostPorts. The output is
// deterministic, so Install can compare it byte for byte with the file on disk.
func Render(c Config) ([]byte, error) {
	c = c.WithDefaults()
	if err := validateConfig(c); err != nil {
		return nil, err
	}
	list := confList{
		CNIVersion: cniVersion,
		Name:       c.Name,
		Plugins: []any{
			bridgeConf{
				Type:        "bridge",
				Bridge:      c.Bridge,
				IsGateway:   true,
				IPMasq:      c.Masquerade,
				HairpinMode: true, // a pod can reach itself through its own Service/hostPort
				MTU:         c.MTU,
				IPAM: ipamConf{
					Type:    "host-local",
					Ranges:  [][]ipamRange{{{Subnet: c.PodCIDR}}},
					Routes:  []ipamRouteConf{{Dst: "0.0.0.0/0"}},
					DataDir: c.DataDir,
				},
			},
			portmapConf{
				Type:         "portmap",
				Capabilities: map[string]bool{"portMappings": true},
				SNAT:         true,
			},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render conflist: %w", err)
	}
	return append(b, '\n'), nil
}

// validateConfig checks the fields Render puts into the conflist, with
// messages that name the flag a user would change.
func validateConfig(c Config) error {
	if !networkNameRE.MatchString(c.Name) {
		return fmt.Errorf("invalid network name %q: use letters, digits, '_', '.' and '-', starting with a letter or digit", c.Name)
	}
	if err := validatePodCIDR(c.PodCIDR); err != nil {
		return err
	}
	// IFNAMSIZ is 16 including the terminating NUL.
	if len(c.Bridge) > 15 || strings.ContainsAny(c.Bridge, "/ \t\n:") {
		return fmt.Errorf("invalid bridge name %q: at most 15 characters, no '/', ':' or spaces", c.Bridge)
	}
	if c.MTU < 0 || c.MTU > 65535 {
		return fmt.Errorf("invalid MTU %d: use 0 for the default or a value up to 65535", c.MTU)
	}
	return nil
}

// validatePodCIDR accepts an IPv4 network address with a prefix of at most
// /30, which host-local needs to have at least one address to hand out after
// the network, gateway and broadcast addresses.
func validatePodCIDR(cidr string) error {
	ip, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return fmt.Errorf("invalid --pod-cidr %q: not a CIDR such as %s", cidr, DefaultPodCIDR)
	}
	if ip.To4() == nil {
		return fmt.Errorf("invalid --pod-cidr %q: only IPv4 is supported", cidr)
	}
	ones, _ := ipnet.Mask.Size()
	if ones > 30 {
		return fmt.Errorf("invalid --pod-cidr %q: prefix /%d is too small for pods, use /30 or shorter", cidr, ones)
	}
	if !ip.Equal(ipnet.IP) {
		return fmt.Errorf("invalid --pod-cidr %q: host bits set, did you mean %s?", cidr, ipnet)
	}
	return nil
}

// ConfPath is the file Install writes: <ConfDir>/10-<Name>.conflist.
//
// containerd's CRI plugin loads the conf dir's files (.conf, .conflist,
// .json) in lexical order and uses only the first one (max_conf_num = 1 by
// default), so the "10-" prefix decides which network pods join when other
// CNI configs are present. Install reports any file that sorts first.
func ConfPath(c Config) string {
	c = c.WithDefaults()
	return filepath.Join(c.ConfDir, "10-"+c.Name+".conflist")
}

// confExtensions are the file extensions containerd (through libcni's
// ConfFiles) considers CNI configs. Install's temp file must not end in one.
var confExtensions = []string{".conf", ".conflist", ".json"}

// Install renders and validates the conflist, then writes it to ConfPath if
// the file's content differs (Check, then Checked.Install).
func Install(ctx context.Context, c Config) (changed bool, notices []string, err error) {
	cl, err := Check(ctx, c)
	if err != nil {
		return false, nil, err
	}
	return cl.Install()
}

// Checked is a rendered conflist whose plugins answered (Check), ready to
// be installed.
type Checked struct {
	c    Config
	data []byte
}

// Check renders the conflist for c and checks its plugins (Validate),
// without writing anything: a caller may check while it is still unsure
// that it will install (a foreground run validating its manifest).
func Check(ctx context.Context, c Config) (Checked, error) {
	c = c.WithDefaults()
	data, err := Render(c)
	if err != nil {
		return Checked{}, err
	}
	if err := validateBytes(ctx, c, data); err != nil {
		return Checked{}, err
	}
	return Checked{c: c, data: data}, nil
}

// Install writes the checked conflist to ConfPath if the file's content
// differs. The write is atomic (temp file in ConfDir, fsync, rename, fsync
// of the dir) so containerd, which watches the dir with fsnotify, never
// loads a half-written file. It creates ConfDir (0755) if needed. It
// returns whether it changed the file, and notices for the user, such as
// another CNI config that sorts before ours.
func (cl Checked) Install() (changed bool, notices []string, err error) {
	c, data := cl.c, cl.data
	if data == nil {
		return false, nil, errors.New("install CNI conflist: not checked (cni.Check)")
	}
	if err := os.MkdirAll(c.ConfDir, 0o755); err != nil {
		return false, nil, fmt.Errorf("create CNI conf dir: %w", err)
	}
	path := ConfPath(c)
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, data):
		// Already current: leave the file (and containerd) alone.
	case err == nil || errors.Is(err, os.ErrNotExist):
		if err := writeFileAtomic(path, data, 0o644); err != nil {
			return false, nil, err
		}
		changed = true
	default:
		return false, nil, fmt.Errorf("read existing conflist: %w", err)
	}
	notices, err = shadowingConfigs(c.ConfDir, filepath.Base(path))
	if err != nil {
		return changed, nil, err
	}
	return changed, notices, nil
}

// shadowingConfigs returns a notice for every CNI config in dir that sorts
// before ours, because containerd would use it instead.
func shadowingConfigs(dir, ours string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list CNI conf dir: %w", err)
	}
	var notices []string
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if name >= ours {
			break
		}
		if e.IsDir() || !slices.Contains(confExtensions, filepath.Ext(name)) {
			continue
		}
		notices = append(notices, fmt.Sprintf(
			"another CNI config %s in %s sorts first; containerd will use it, not ours (%s): remove or rename it",
			name, dir, ours))
	}
	return notices, nil
}

// writeFileAtomic replaces path with data: temp file in the same dir, fsync,
// rename, fsync of the dir. The temp name is hidden and ends in ".tmp" so a
// conf dir watcher never treats it as a config.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (retErr error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write conflist: %w", err)
	}
	// Persist the rename itself.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync CNI conf dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync CNI conf dir: %w", err)
	}
	return nil
}

// Uninstall removes our conflist. A missing file is not an error.
func Uninstall(c Config) error {
	if err := os.Remove(ConfPath(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove conflist: %w", err)
	}
	return nil
}
