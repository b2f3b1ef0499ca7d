package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// readProcsRecursive reads cgroup.procs of dir and every descendant. A
// missing dir (or one that vanishes during the walk) has no processes.
func readProcsRecursive(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		got, err := readProcsFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return err
		}
		pids = append(pids, got...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// readProcsFile parses one cgroup.procs file (one pid a line).
func readProcsFile(file string) ([]int, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", file, err)
		}
		pids = append(pids, pid)
	}
	return pids, s.Err()
}

// childDirs lists the subdirectory names of dir; none if dir is missing.
func childDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// isDir reports whether p is an existing directory.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
