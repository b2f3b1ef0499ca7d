package cni

import "path/filepath"

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
	list, err := ListHostLocal(c)
	if err != nil {
		return nil, err
	}
	res := make(map[string]string, len(list))
	for _, r := range list {
		res[r.IP] = r.ID
	}
	return res, nil
}
