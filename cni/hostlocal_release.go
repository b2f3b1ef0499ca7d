package cni

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultCacheDir is where libcni (inside containerd) caches the result of
// every ADD: <DefaultCacheDir>/results/<network>-<container id>-<ifname>.
const DefaultCacheDir = "/var/lib/cni"

// Reservation is one IP host-local holds for a container.
type Reservation struct {
	// IP is the reserved address (the file's name).
	IP string
	// ID is the container ID, for containerd the sandbox ID.
	ID string
	// IfName is the interface inside the sandbox ("" in files written by
	// host-local before it recorded it).
	IfName string
	// Written is when host-local wrote the reservation.
	Written time.Time
}

// ListHostLocal lists c's host-local reservations sorted by IP. A missing
// directory means none.
func ListHostLocal(c Config) ([]Reservation, error) {
	dir := HostLocalDir(c)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list host-local reservations: %w", err)
	}
	var res []Reservation
	for _, e := range entries {
		if !e.Type().IsRegular() || net.ParseIP(e.Name()) == nil {
			continue
		}
		r, ok, err := readReservation(dir, e.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			res = append(res, r)
		}
	}
	sort.Slice(res, func(i, j int) bool { return ipLess(res[i].IP, res[j].IP) })
	return res, nil
}

// readReservation reads one reservation file; ok is false when it is gone.
func readReservation(dir, ip string) (Reservation, bool, error) {
	path := filepath.Join(dir, ip)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Reservation{}, false, nil // released while we listed
	}
	if err != nil {
		return Reservation{}, false, fmt.Errorf("read host-local reservation: %w", err)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, fmt.Errorf("read host-local reservation: %w", err)
	}
	// host-local writes "<id>\r\n<ifname>" (older versions just "<id>").
	id, ifname, _ := strings.Cut(string(b), "\n")
	return Reservation{IP: ip, ID: strings.TrimSpace(id), IfName: strings.TrimSpace(ifname), Written: fi.ModTime()}, true, nil
}

// ipLess orders IPs numerically (10.0.0.9 before 10.0.0.10).
func ipLess(a, b string) bool {
	ia, ib := net.ParseIP(a).To16(), net.ParseIP(b).To16()
	if ia == nil || ib == nil {
		return a < b
	}
	return string(ia) < string(ib)
}

// ReleaseHostLocal releases r the way host-local's DEL does: under the
// store's lock (flock on <dir>/lock, which host-local takes around every
// allocation and release), it removes the IP's file, but only if r.ID still
// holds it (host-local may have handed the IP to someone else meanwhile).
// It also removes the libcni result cache of r's attachment under cacheDir
// ("" is DefaultCacheDir), which containerd would otherwise keep forever.
// It reports whether it removed the reservation.
func ReleaseHostLocal(c Config, cacheDir string, r Reservation) (bool, error) {
	c = c.WithDefaults()
	dir := HostLocalDir(c)
	unlock, err := lockHostLocal(dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	cur, ok, err := readReservation(dir, r.IP)
	if err != nil || !ok || cur.ID != r.ID {
		return false, err
	}
	if err := os.Remove(filepath.Join(dir, r.IP)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("release host-local reservation %s: %w", r.IP, err)
	}
	if err := RemoveResultCache(c, cacheDir, r.ID); err != nil {
		return true, err
	}
	return true, nil
}

// RemoveResultCache removes libcni's cached ADD results of container id on
// c's network (one file per interface).
func RemoveResultCache(c Config, cacheDir, id string) error {
	c = c.WithDefaults()
	if cacheDir == "" {
		cacheDir = DefaultCacheDir
	}
	if id == "" || strings.ContainsAny(id, "/*?[") {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(cacheDir, "results", c.Name+"-"+id+"-*"))
	if err != nil {
		return fmt.Errorf("find CNI result cache: %w", err)
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove CNI result cache: %w", err))
		}
	}
	return errors.Join(errs...)
}
