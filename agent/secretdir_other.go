//go:build !linux

package agent

// mountSecretTmpfs never mounts off Linux: the directory stays plain.
func mountSecretTmpfs(string, int64) (bool, error) { return false, nil }
