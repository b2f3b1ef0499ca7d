//go:build !linux

package source

// mountSecretTmpfs never mounts off Linux: the directory stays plain.
func mountSecretTmpfs(string, int64) (bool, error) { return false, nil }
