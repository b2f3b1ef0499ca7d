package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// shutdownGrace is how long Serve lets requests in flight finish.
const shutdownGrace = 5 * time.Second

// ListenUnix listens on the unix socket at path for the API: it creates the
// parent directory (0755), replaces a stale socket left by a daemon that
// died (but refuses, with "another minikubelet serves on <path>", when
// something answers on it), and makes the socket 0600 so that only its
// owner (root, the daemon's user) can connect.
//
// The socket is bound under a temporary name, chmodded, then renamed into
// place, so that it is never reachable at path with a looser mode.
// Closing the listener removes path if it is still this listener's socket
// file (same device and inode as placed): a daemon that started after
// this one and put its own socket there keeps it.
func ListenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create API socket directory: %w", err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The file will be renamed: remove it ourselves on Close.
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("chmod API socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("place API socket: %w", err)
	}
	// rename keeps the inode: this is the file Close may remove.
	placed, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("check API socket: %w", err)
	}
	return &unixListener{UnixListener: l, path: path, placed: placed}, nil
}

// removeStaleSocket removes a socket at path that nobody answers on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check API socket: %w", err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket: remove it or choose another --socket", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("another minikubelet serves on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale API socket: %w", err)
	}
	return nil
}

// unixListener removes its socket file on Close.
type unixListener struct {
	*net.UnixListener
	path string
	// placed is the socket file as ListenUnix placed it at path.
	placed os.FileInfo
}

// Close stops listening and removes the socket file, if it is still ours:
// the file at path is the one placed (device and inode), not one another
// daemon bound there since (issue #29: an old daemon exiting removed the
// new one's socket, leaving it without an API). Between the check and the
// removal another process could still replace the file; the root dir's
// lock keeps a second daemon of the same node from starting at all.
func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.placed) {
		os.Remove(l.path)
	}
	return err
}

// Serve serves the API on l until ctx ends, then shuts down gracefully:
// followed log streams end, requests in flight get a few seconds to
// finish. It returns nil after a shutdown caused by ctx.
//
// The socket is for root only: a request is refused only when it comes
// from a web page (an Origin header) or has a body that is not JSON or
// YAML (see boundary.go).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.serve(ctx, l, rejectBrowsers(s.handler))
}

// serve serves h on l until ctx ends.
func (s *Server) serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// A kept-alive connection with no request is closed after two
		// minutes (as the kubelet server's): a caller cannot hold
		// connections open for ever. Watches and streams are requests.
		IdleTimeout: 2 * time.Minute,
		// TLS handshake failures (no or a foreign certificate) and the
		// like: worth seeing, not worth a warning each.
		ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelInfo),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve API on %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	s.stopStream()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve API on %s: %w", l.Addr(), err)
	}
	return nil
}
