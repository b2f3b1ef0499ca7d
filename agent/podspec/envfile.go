package podspec

// Env files (env[].valueFrom.fileKeyRef, the kubelet's EnvFiles): a
// variable takes its value from a key of a file that an earlier container
// wrote into an emptyDir volume of the pod. The engine reads the file's
// bytes (beneath the volume, bounded: the pod wrote it); this file finds
// the key in them, as the kubelet's pkg/kubelet/util/env ParseEnv does.

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MaxEnvFileBytes bounds the env file the engine reads. The kubelet reads
// any size; minikubelet refuses a larger file instead of reading it: the
// pod controls the file, and no process can be started with more
// environment than this anyway (the API validation's 1 MiB bound on
// command, args and env together).
const MaxEnvFileBytes = 1 << 20

// EnvFileRel is the path of the file ref names relative to its volume's
// directory: the API allows a leading "/", which the kubelet's
// securejoin.SecureJoin takes relative to the volume too.
func EnvFileRel(ref *v1.FileKeySelector) string {
	return strings.TrimLeft(path.Clean("/"+ref.Path), "/")
}

// fileKeyValue resolves a fileKeyRef as the kubelet's
// makeEnvironmentVariables: the volume must be an emptyDir of the pod; a
// file that cannot be read or parsed fails the container's start whether
// or not the reference is optional; a key that is missing or has an empty
// value skips the variable when optional, else fails the start. ok is
// false when the variable is skipped.
func fileKeyValue(pod *v1.Pod, in EnvInputs, ref *v1.FileKeySelector) (string, bool, error) {
	if !hasEmptyDir(pod, ref.VolumeName) || in.EnvFile == nil {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	data, hostPath, err := in.EnvFile(ref.VolumeName, EnvFileRel(ref))
	if err == nil {
		var v string
		v, err = ParseEnvFile(data, ref.Key)
		if err == nil && v != "" {
			return v, true, nil
		}
	}
	if err != nil {
		// The kubelet's message is "couldn't parse env file" (the reason
		// goes to its log only); the reason follows here, for the
		// container's status.
		return "", false, fmt.Errorf("couldn't parse env file: %w", err)
	}
	// The kubelet takes an empty value for a missing key.
	if isTrue(ref.Optional) {
		return "", false, nil
	}
	return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, hostPath)
}

// hasEmptyDir reports whether the pod has an emptyDir volume called name
// (validation refuses any other reference; a pod the API changed is
// checked again here).
func hasEmptyDir(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return pod.Spec.Volumes[i].EmptyDir != nil
		}
	}
	return false
}

// ParseEnvFile returns the value of key in an env file, "" when the file
// does not assign it: the kubelet's strict subset of POSIX shell syntax
// (pkg/kubelet/util/env ParseEnv), rule for rule.
//   - Lines are read as bufio.Scanner reads them: a line of more than
//     64 KiB is an error, a final "\r" is dropped.
//   - Leading blanks (space, tab) are ignored; blank lines and lines
//     starting with '#' are skipped.
//   - A line is NAME='value': no blank before '='; the value in single
//     quotes, kept literally (no escapes, no expansion), and may span
//     lines; after the closing quote only blanks and a '#' comment.
//   - A blank right after '=' assigns the empty string (as the shell's
//     NAME= 'x' does) and the rest of the line is not checked.
//   - The first assignment of key wins; the lines after it are not read,
//     so an error there goes unnoticed, as on the kubelet.
func ParseEnvFile(data []byte, key string) (string, error) {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	lineNum := 0
	for scanner.Scan() {
		lineNum++
		line := strings.TrimLeft(scanner.Text(), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, valuePart, ok := strings.Cut(line, "=")
		if !ok {
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", lineNum)
		}
		trimmedName := strings.TrimRight(name, " \t")
		if trimmedName == "" {
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", lineNum)
		}
		if trimmedName != name {
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", lineNum)
		}
		if strings.TrimLeft(valuePart, " \t") != valuePart {
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(valuePart, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", lineNum)
		}
		var value strings.Builder
		rest := valuePart[1:]
		startLine := lineNum
		for {
			before, after, closed := strings.Cut(rest, "'")
			if closed {
				value.WriteString(before)
				after = strings.TrimLeft(after, " \t")
				if after != "" && !strings.HasPrefix(after, "#") {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", lineNum)
				}
				if name == key {
					return value.String(), nil
				}
				break
			}
			value.WriteString(rest)
			value.WriteByte('\n')
			if !scanner.Scan() {
				if err := scanner.Err(); err != nil {
					return "", fmt.Errorf("error reading environment variable file: %w", err)
				}
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", startLine)
			}
			lineNum++
			rest = scanner.Text()
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file: %w", err)
	}
	return "", nil
}
