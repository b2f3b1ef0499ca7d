package cni

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// HostLocalDir is the directory where host-local keeps c's reservations:
// <DataDir or /var/lib/cni/networks>/<Name>.
func HostLocalDir(c Config) string {
	c = c.WithDefaults()
	dataDir := c.DataDir
	if dataDir == "" {
		dataDir = DefaultHostLocalDataDir
	}
	return filepath.Join(dataDir, c.Name)
}

// HostLocalReservations lists the IPs host-local holds for c's network,
// mapping IP to the container (sandbox) ID that holds it. host-local keeps
// one file per IP, named after the IP, whose first line is the container ID
// (the second is the interface name); other files there (the lock,
// last_reserved_ip.N) are skipped. A missing directory means no reservations.
// Tests use it to prove teardown released the IP, and IP-leak repair to find
// reservations whose sandbox is gone.
func HostLocalReservations(c Config) (map[string]string, error) {
	dir := HostLocalDir(c)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list host-local reservations: %w", err)
	}
	res := make(map[string]string, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() || net.ParseIP(e.Name()) == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // released while we listed
		}
		if err != nil {
			return nil, fmt.Errorf("read host-local reservation: %w", err)
		}
		id, _, _ := strings.Cut(string(b), "\n")
		res[e.Name()] = strings.TrimSpace(id)
	}
	return res, nil
}
