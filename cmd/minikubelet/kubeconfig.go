package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/minikubelet/minikubelet/agent/api"
)

const kubeconfigUsage = `Usage: minikubelet kubeconfig [--admin-kubeconfig PATH] [--root-dir DIR]

Print the admin kubeconfig of the TCP API (serve --api-address): the file
serve wrote, or, when it is gone, one built again from <root-dir>/pki. It
holds the admin client key: whoever has it is root on this node.
`

// kubeconfigCommand is `minikubelet kubeconfig`.
func kubeconfigCommand(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("kubeconfig", kubeconfigUsage, stderr)
	path := fs.String("admin-kubeconfig", api.DefaultAdminKubeconfig, "the admin kubeconfig serve writes")
	rootDir := fs.String("root-dir", "/var/lib/minikubelet", "serve's --root-dir (its pki directory holds the CA and the admin certificate)")
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
