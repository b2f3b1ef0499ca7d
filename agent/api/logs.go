package api

// This file reads the CRI container log files the runtime writes, the way
// the kubelet serves `kubectl logs` (pkg/kubelet/kuberuntime/logs): parse
// each line, join partial lines, honour tail/since/timestamps, and with
// follow keep reading as the file grows and across the agent's rotations.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// CRI log streams and tags (kubelet-facts §6.5).
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	tagPartial   = "P"
	tagFull      = "F"
)

// defaultLogPoll is how often a follower looks for new data, a rotation or
// a truncation when it has reached the end of the file.
const defaultLogPoll = 100 * time.Millisecond

// CRILogLine is one parsed line of a CRI log file.
type CRILogLine struct {
	// Timestamp is when the runtime received the bytes.
	Timestamp time.Time
	// Stream is "stdout" or "stderr".
	Stream string
	// Partial is true for a P line: the content continues in the next
	// line of the same stream, and carries no newline of its own.
	Partial bool
	// Content is the bytes after the tag, without the line's newline.
	Content []byte
}

// ParseCRILogLine parses one line of the CRI log format
//
//	<RFC3339Nano timestamp> <stdout|stderr> <P|F>[:more tags] <content>
//
// A trailing "\n" is ignored. A missing content field (the line ends right
// after the tag) is an empty content. Content aliases line.
func ParseCRILogLine(line []byte) (CRILogLine, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var l CRILogLine
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return l, fmt.Errorf("parse CRI log line: no timestamp delimiter in %q", clip(line))
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return l, fmt.Errorf("parse CRI log line: timestamp: %w", err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return l, fmt.Errorf("parse CRI log line: no stream delimiter in %q", clip(line))
	}
	switch s := string(stream); s {
	case StreamStdout, StreamStderr:
		l.Stream = s
	default:
		return l, fmt.Errorf("parse CRI log line: unknown stream %q", clip(stream))
	}
	tags, content, _ := bytes.Cut(rest, []byte(" "))
	first, _, _ := bytes.Cut(tags, []byte(":"))
	switch string(first) {
	case tagPartial:
		l.Partial = true
	case tagFull:
	default:
		return l, fmt.Errorf("parse CRI log line: unknown tag %q", clip(tags))
	}
	l.Timestamp = t
	l.Content = content
	return l, nil
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// LogOptions selects what ReadLog writes, like kubectl's logs flags.
type LogOptions struct {
	// Follow keeps reading as the file grows, across rotations, until ctx
	// ends or Done reports true.
	Follow bool
	// TailLines, when set, starts with the last N joined lines (0: none).
	TailLines *int64
	// Timestamps prefixes each line with its RFC3339Nano timestamp.
	Timestamps bool
	// Since, when not zero, skips lines older than it.
	Since time.Time
	// PollInterval is how often a follower checks the file (default 100ms).
	PollInterval time.Duration
	// Done, when set, is asked while following at the end of the file; true
	// means the writer is gone (the container exited): ReadLog reads what
	// is left and returns.
	Done func() bool
}

// ReadLog writes the log file at path to w as plain content (with
// Timestamps, "<timestamp> <content>"), joining partial lines. It returns
// an error wrapping fs.ErrNotExist before writing anything when the file
// does not exist. With Follow it keeps writing new lines, flushing w after
// each one when w is an http.Flusher, and follows the file across the
// agent's rotation (rename to N.log.<timestamp>, runtime reopens N.log) and
// truncation; it returns nil when ctx ends.
func ReadLog(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	lr := &logReader{path: path, opts: opts, w: w, open: map[string]bool{}, skip: map[string]bool{}}
	if err := lr.reset(f); err != nil {
		f.Close()
		return err
	}
	defer func() { lr.f.Close() }()
	if fl, ok := w.(http.Flusher); ok {
		lr.flush = fl.Flush
	}

	// Pass 1: what the file holds now, joined, cut to the tail.
	if err := lr.initial(); err != nil {
		return err
	}
	if !opts.Follow {
		return nil
	}
	// Pass 2: stream what comes next.
	poll := opts.PollInterval
	if poll <= 0 {
		poll = defaultLogPoll
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		if err := lr.readAvailable(lr.stream); err != nil {
			return err
		}
		switched, err := lr.checkRotation()
		if err != nil {
			return err
		}
		if switched {
			continue
		}
		if opts.Done != nil && opts.Done() {
			// The writer is gone: whatever it wrote is in the file by now.
			return lr.readAvailable(lr.stream)
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// logRecord is one joined log line of the initial pass.
type logRecord struct {
	ts      time.Time
	stream  string
	content []byte
	// complete is false for a partial line the file ends with.
	complete bool
}

// logReader is the state of one ReadLog call. It is used by one goroutine.
type logReader struct {
	path  string
	opts  LogOptions
	w     io.Writer
	flush func()

	// f is the open log file, fi its identity (to detect a rotation), br
	// reads it and off counts the bytes consumed from it.
	f   *os.File
	fi  os.FileInfo
	br  *bufio.Reader
	off int64
	// carry is a line the runtime has not finished writing (no newline yet).
	carry []byte
	// open marks streams whose current line was started on w (a partial
	// line was written) so its continuation gets no timestamp prefix.
	open map[string]bool
	// skip marks streams whose current line was cut off by the tail: its
	// continuation is dropped up to and including its full line.
	skip map[string]bool
}

// reset makes f the file being read, from its start.
func (lr *logReader) reset(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat container log: %w", err)
	}
	lr.f, lr.fi, lr.br, lr.off, lr.carry = f, fi, bufio.NewReaderSize(f, 64<<10), 0, nil
	return nil
}

// nextLine returns the next complete line of the file, or io.EOF. At the
// end of a file that ends without a newline, the unfinished line is kept in
// carry for the next call unless final is set.
func (lr *logReader) nextLine(final bool) ([]byte, error) {
	b, err := lr.br.ReadBytes('\n')
	lr.off += int64(len(b))
	if err == nil {
		if len(lr.carry) > 0 {
			b = append(lr.carry, b...)
			lr.carry = nil
		}
		return b, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read container log: %w", err)
	}
	lr.carry = append(lr.carry, b...)
	if final && len(lr.carry) > 0 {
		b, lr.carry = lr.carry, nil
		return b, nil
	}
	return nil, io.EOF
}

// initial reads the file to its end, then writes the last TailLines joined
// lines (all without TailLines). A partial line at the end counts as a line
// and is left open for the follower to continue.
func (lr *logReader) initial() error {
	var ring []logRecord
	limit := int64(-1)
	if lr.opts.TailLines != nil {
		limit = max(*lr.opts.TailLines, 0)
	}
	push := func(r logRecord) {
		if limit == 0 {
			return
		}
		if limit > 0 && int64(len(ring)) == limit {
			copy(ring, ring[1:])
			ring = ring[:len(ring)-1]
		}
		ring = append(ring, r)
	}
	pending := map[string]*logRecord{}
	var order []string // streams with a pending partial, oldest first
	for {
		line, err := lr.nextLine(!lr.opts.Follow)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		l, err := ParseCRILogLine(line)
		if err != nil {
			continue // the kubelet skips what it cannot parse, too
		}
		p := pending[l.Stream]
		if p == nil {
			p = &logRecord{ts: l.Timestamp, stream: l.Stream}
			pending[l.Stream] = p
			order = append(order, l.Stream)
		}
		p.content = append(p.content, l.Content...)
		if l.Partial {
			continue
		}
		p.complete = true
		delete(pending, l.Stream)
		order = removeString(order, l.Stream)
		if !lr.opts.Since.IsZero() && p.ts.Before(lr.opts.Since) {
			continue
		}
		push(*p)
	}
	for _, s := range order {
		p := pending[s]
		if !lr.opts.Since.IsZero() && p.ts.Before(lr.opts.Since) {
			lr.skip[s] = true
			continue
		}
		push(*p)
	}
	// Streams whose open partial line fell out of the tail: drop the rest
	// of that line when it arrives.
	kept := map[string]bool{}
	for _, r := range ring {
		if !r.complete {
			kept[r.stream] = true
		}
	}
	for _, s := range order {
		if !kept[s] {
			lr.skip[s] = true
		}
	}
	for _, r := range ring {
		if err := lr.write(r.ts, r.stream, r.content, !r.complete); err != nil {
			return err
		}
	}
	if lr.flush != nil {
		lr.flush()
	}
	return nil
}

// stream writes one parsed line as it arrives (the follow pass).
func (lr *logReader) stream(l CRILogLine) error {
	if lr.skip[l.Stream] {
		if !l.Partial {
			delete(lr.skip, l.Stream)
		}
		return nil
	}
	if !lr.open[l.Stream] && !lr.opts.Since.IsZero() && l.Timestamp.Before(lr.opts.Since) {
		if l.Partial {
			lr.skip[l.Stream] = true
		}
		return nil
	}
	if err := lr.write(l.Timestamp, l.Stream, l.Content, l.Partial); err != nil {
		return err
	}
	if lr.flush != nil {
		lr.flush()
	}
	return nil
}

// write writes content to w, with the timestamp prefix when it starts a
// line and a newline unless partial.
func (lr *logReader) write(ts time.Time, stream string, content []byte, partial bool) error {
	var b []byte
	if lr.opts.Timestamps && !lr.open[stream] {
		b = append(b, ts.UTC().Format(time.RFC3339Nano)...)
		b = append(b, ' ')
	}
	b = append(b, content...)
	if partial {
		lr.open[stream] = true
	} else {
		b = append(b, '\n')
		delete(lr.open, stream)
	}
	if _, err := lr.w.Write(b); err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	return nil
}

// readAvailable hands every complete line now in the file to emit.
func (lr *logReader) readAvailable(emit func(CRILogLine) error) error {
	for {
		line, err := lr.nextLine(false)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		l, err := ParseCRILogLine(line)
		if err != nil {
			continue
		}
		if err := emit(l); err != nil {
			return err
		}
	}
}

// checkRotation looks at the path after the follower reached the end of
// the file. When the path names a new file (the agent renamed the old one
// and the runtime reopened the path), it drains the old file and switches
// to the new one from its start; when the file shrank (truncation), it
// starts over. It reports whether it switched.
func (lr *logReader) checkRotation() (bool, error) {
	fi, err := os.Stat(lr.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // renamed; the runtime has not reopened it yet
	}
	if err != nil {
		return false, fmt.Errorf("stat container log: %w", err)
	}
	if os.SameFile(fi, lr.fi) {
		if fi.Size() >= lr.off {
			return false, nil
		}
		// Truncated in place: read it again from the start.
		if _, err := lr.f.Seek(0, io.SeekStart); err != nil {
			return false, fmt.Errorf("seek container log: %w", err)
		}
		lr.br.Reset(lr.f)
		lr.off, lr.carry = 0, nil
		return true, nil
	}
	// Rotated: finish the old file (including an unterminated last line),
	// then take the new one.
	if err := lr.readAvailable(lr.stream); err != nil {
		return false, err
	}
	if len(lr.carry) > 0 {
		if l, err := ParseCRILogLine(lr.carry); err == nil {
			if err := lr.stream(l); err != nil {
				return false, err
			}
		}
	}
	f, err := os.Open(lr.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open rotated container log: %w", err)
	}
	lr.f.Close()
	if err := lr.reset(f); err != nil {
		return false, err
	}
	return true, nil
}

// removeString returns s without its first v.
func removeString(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
