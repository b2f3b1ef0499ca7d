package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minikubelet/minikubelet/agent/api"
)

const kubeconfigUsage = `Usage: minikubelet kubeconfig [--rotate] [--admin-kubeconfig PATH] [--root-dir DIR]

Print the admin kubeconfig of the TCP API (serve --api-address): the file
serve wrote, or, when it is gone, one built again from <root-dir>/pki. It
holds the admin client key: whoever has it is root on this node.

The admin certificate lives 30 days; a running serve renews it into the
admin kubeconfig. With --rotate, a new admin certificate is issued and
written to --admin-kubeconfig, and printed; the TCP API refuses the old
one (401) from its next request on, every copy of the old kubeconfig
included. The CA and the serving certificate stay.
`

// kubeconfigCommand is `minikubelet kubeconfig`.
func kubeconfigCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("kubeconfig", kubeconfigUsage, stderr)
	path := fs.String("admin-kubeconfig", api.DefaultAdminKubeconfig, "the admin kubeconfig serve writes")
	rootDir := fs.String("root-dir", "/var/lib/minikubelet", "serve's --root-dir (its pki directory holds the CA and the admin certificate)")
	rotate := fs.Bool("rotate", false, "issue a new admin certificate and make the TCP API refuse the old one")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError(fs, "kubeconfig takes no arguments, got %q", pos)
	}
	if *rotate {
		p, err := api.RotateAdmin(filepath.Join(*rootDir, "pki"), time.Now())
		if err != nil {
			return fmt.Errorf("rotate the admin certificate: %w", err)
		}
		if err := api.WriteKubeconfig(*path, p); err != nil {
			return fmt.Errorf("the old admin certificate is refused now, but writing the new kubeconfig failed (run `minikubelet kubeconfig --rotate` again): %w", err)
		}
		b, err := api.Kubeconfig(p)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	b, err := os.ReadFile(*path)
	if errors.Is(err, os.ErrNotExist) {
		p, perr := api.LoadPKI(filepath.Join(*rootDir, "pki"))
		if perr != nil {
			return fmt.Errorf("%s does not exist, and %w", *path, perr)
		}
		b, err = api.Kubeconfig(p)
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}
