package api

// Over 600 lines: the whole CRI log reader, whose parts (line parsing, joining partial
// lines, tail and since, follow across rotations) share one bounded window
// reader; split, its internals would be spread over files that only it uses.

// This file reads the CRI container log files the runtime writes, the way
// the kubelet serves `kubectl logs` (pkg/kubelet/kuberuntime/logs): parse
// each line, join partial lines, honour tail/since/timestamps, and with
// follow keep reading as the file grows and across the agent's rotations.
//
// Memory is bounded for any file size and line length (issue #16): the file
// is read through fixed-size windows and never held whole. A joined line is
// not buffered either: its parts are copied to the writer straight from the
// file when its last part is reached (a second pass over its byte range),
// and a tail is found by reading backwards from the end of the file in
// fixed-size chunks, as the kubelet's findTailLineStartIndex does. Only a
// line's header (timestamp, stream, tags: at most maxLogHeader bytes) is
// ever copied; content of any length is streamed.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"syscall"
	"time"
)

// CRI log streams and tags (kubelet-facts §6.5).
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	tagPartial   = "P"
	tagFull      = "F"
)

// timeFormatOut is the kubelet's format of a --timestamps prefix
// (kuberuntime/logs timeFormatOut, types.RFC3339NanoFixed): nanoseconds
// always nine digits, so the prefixes line up; the offset is the one the
// runtime wrote in the file, as the kubelet formats the parsed time.
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

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

// Sizes that bound the memory of one ReadLog call.
const (
	// logChunk is the size of every read of the log file (each of the two
	// file windows) and of the output buffer.
	logChunk = 32 << 10
	// maxLogHeader bounds the bytes of a line parsed as its header. A line
	// whose timestamp, stream and tags do not fit is skipped as unparsable
	// (the runtime's headers are about 45 bytes).
	maxLogHeader = 256
	// tailLookBack is how far before the start of a tail the reader still
	// looks for a stream's unfinished line, to drop its continuation when
	// following. A stream silent for longer is not looked for, so that a
	// tail of a one-stream log does not read the whole file.
	tailLookBack = 1 << 20
)

// LogOptions selects what ReadLog writes, like kubectl's logs flags.
type LogOptions struct {
	// Follow keeps reading as the file grows, across rotations, until ctx
	// ends or Done reports true.
	Follow bool
	// TailLines, when set, starts with the last N joined lines (0: none).
	TailLines *int64
	// Timestamps prefixes each line with its timestamp (timeFormatOut).
	Timestamps bool
	// Since, when not zero, skips lines older than it.
	Since time.Time
	// LimitBytes, when above 0, stops ReadLog (without an error) once it
	// has written that many bytes, the last line cut where the limit falls.
	LimitBytes int64
	// PollInterval is how often a follower checks the file (default 100ms).
	PollInterval time.Duration
	// Done, when set, is asked while following at the end of the file; true
	// means the writer is gone (the container exited): ReadLog reads what
	// is left and returns.
	Done func() bool
}

// errLogLimit ends a ReadLog that wrote LimitBytes.
var errLogLimit = errors.New("log byte limit reached")

// ReadLog writes the log file at path to w as plain content (with
// Timestamps, "<timestamp> <content>"), joining partial lines. It returns
// an error wrapping fs.ErrNotExist before writing anything when the file
// does not exist, and refuses anything but a regular file (a symlink in
// the path's last component included). With Follow it keeps writing new
// lines, flushing w after each read when w is an http.Flusher, and follows
// the file across the agent's rotation (rename to N.log.<timestamp>,
// runtime reopens N.log) and truncation; it returns nil when ctx ends.
//
// A tail counts joined lines from the end of the file; Since then drops the
// lines older than it (the kubelet's order: with the runtime's increasing
// timestamps it is the same as counting only the lines since). A stream's
// unfinished line that lies more than tailLookBack before the tail is not
// part of it.
func ReadLog(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	f, fi, err := openLog(path)
	if err != nil {
		return err
	}
	lr := &logReader{path: path, opts: opts, f: f, fi: fi}
	defer func() { lr.f.Close() }()
	lr.scan.r, lr.copy.r = f, f
	var lw io.Writer = w
	if opts.LimitBytes > 0 {
		lw = &limitWriter{w: w, left: opts.LimitBytes}
	}
	lr.out = bufio.NewWriterSize(lw, logChunk)
	if fl, ok := w.(http.Flusher); ok {
		lr.flush = fl.Flush
	}
	err = lr.run(ctx)
	if errors.Is(err, errLogLimit) {
		return nil
	}
	return err
}

// openLog opens a container log for reading without following a symlink
// in its last component and without blocking on a FIFO, and checks that it
// is a regular file: the runtime writes these files, but the directory is
// the pod's, so the reader does not trust what it finds there.
func openLog(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open container log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat container log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("open container log %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	return f, fi, nil
}

// run is ReadLog after the file is open.
func (lr *logReader) run(ctx context.Context) error {
	// Pass 1: what the file holds now, joined, cut to the tail.
	if err := lr.initial(); err != nil {
		return err
	}
	if err := lr.flushOut(); err != nil {
		return err
	}
	if !lr.opts.Follow {
		return nil
	}
	// Pass 2: stream what comes next.
	poll := lr.opts.PollInterval
	if poll <= 0 {
		poll = defaultLogPoll
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		if err := lr.readAvailable(false); err != nil {
			return err
		}
		switched, err := lr.checkRotation()
		if err != nil {
			return err
		}
		if switched {
			continue
		}
		if lr.opts.Done != nil && lr.opts.Done() {
			// The writer is gone: whatever it wrote is in the file by now.
			return lr.readAvailable(false)
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// limitWriter passes on at most left bytes, then fails with errLogLimit.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLogLimit
	}
	cut := false
	if int64(len(p)) > l.left {
		p, cut = p[:l.left], true
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && cut {
		err = errLogLimit
	}
	return n, err
}

// window reads a file through one fixed buffer at any offset: a read that
// falls inside what the buffer holds costs no system call.
type window struct {
	r io.ReaderAt
	// buf holds the file's bytes [base, base+n); allocated on first use.
	buf  []byte
	base int64
	n    int
}

// at returns the bytes from off on (at least one, never past limit), or
// io.EOF when off is at limit or at the end of the file.
func (w *window) at(off, limit int64) ([]byte, error) {
	if off >= limit {
		return nil, io.EOF
	}
	if off < w.base || off >= w.base+int64(w.n) {
		if w.buf == nil {
			w.buf = make([]byte, logChunk)
		}
		n, err := w.r.ReadAt(w.buf, off)
		w.base, w.n = off, n
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("read container log: %w", err)
		}
	}
	b := w.buf[off-w.base : w.n]
	if rem := limit - off; int64(len(b)) > rem {
		b = b[:rem]
	}
	return b, nil
}

// lastNewline returns the offset of the last '\n' before before, or -1.
// It reads backwards in chunks of the window's size.
func (w *window) lastNewline(before int64) (int64, error) {
	for before > 0 {
		start := max(0, before-logChunk)
		if start < w.base || before > w.base+int64(w.n) {
			if w.buf == nil {
				w.buf = make([]byte, logChunk)
			}
			n, err := w.r.ReadAt(w.buf[:before-start], start)
			w.base, w.n = start, n
			if n < int(before-start) {
				if err == nil || errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF // the file shrank under us
				}
				w.n = 0
				return 0, fmt.Errorf("read container log: %w", err)
			}
		}
		b := w.buf[start-w.base : before-w.base]
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		before = start
	}
	return -1, nil
}

// reset forgets what the window holds (the file changed under it).
func (w *window) reset(r io.ReaderAt) { w.r, w.base, w.n = r, 0, 0 }

// logHead is the start of one raw line of the file.
type logHead struct {
	// CRILogLine is the parsed header; its Content is not used.
	CRILogLine
	// ok is false for a line that does not parse (it is skipped).
	ok bool
	// content is the offset of the line's content in the file.
	content int64
	// end is the offset just past the line: past its newline, or the
	// limit the line was read to when nl is false.
	end int64
	// nl reports whether a newline ends the line.
	nl bool
}

// readHead reads the line at off, no further than limit, through w: it
// parses its first maxLogHeader bytes and finds its end. The bytes after
// the header are scanned, not kept.
func (lr *logReader) readHead(w *window, off, limit int64) (logHead, error) {
	h, nl, err := lr.headBytes(w, off, limit)
	if err != nil {
		return logHead{}, err
	}
	// A line that ends within the header bytes (newline or limit) is whole.
	lh := lr.parseHead(off, h, nl || len(h) < maxLogHeader)
	if nl {
		lh.end, lh.nl = off+int64(len(h))+1, true
		return lh, nil
	}
	lh.end, lh.nl, err = copyLine(w, off+int64(len(h)), limit, nil)
	return lh, err
}

// headBytes copies up to maxLogHeader bytes of the line at off into lr.hdr
// and returns them, with nl true when the line's newline is among them
// (the newline is not returned). At the end of the data it returns what
// there is.
func (lr *logReader) headBytes(w *window, off, limit int64) ([]byte, bool, error) {
	h := lr.hdr[:0]
	for len(h) < maxLogHeader {
		b, err := w.at(off+int64(len(h)), limit)
		if errors.Is(err, io.EOF) {
			return h, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		b = b[:min(len(b), maxLogHeader-len(h))]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return append(h, b[:i]...), true, nil
		}
		h = append(h, b...)
	}
	return h, false, nil
}

// parseHead parses the header bytes h of the line at off. complete says
// that h is the whole line; otherwise a header that runs to the end of h
// is cut and the line is unparsable.
func (lr *logReader) parseHead(off int64, h []byte, complete bool) logHead {
	l, err := ParseCRILogLine(h)
	if err != nil {
		return logHead{}
	}
	lh := logHead{CRILogLine: l, ok: true}
	switch {
	case l.Content != nil:
		lh.content = off + int64(len(h)-len(l.Content))
	case complete:
		lh.content = off + int64(len(h)) // no content field
	default:
		return logHead{} // the tags run past maxLogHeader
	}
	lh.Content = nil
	return lh
}

// copyLine scans from off to the next newline (or limit), handing the
// bytes before it to write when write is not nil. It returns the offset
// just past the newline (or limit) and whether it found one.
func copyLine(w *window, off, limit int64, write func([]byte) error) (int64, bool, error) {
	for {
		b, err := w.at(off, limit)
		if errors.Is(err, io.EOF) {
			return off, false, nil
		}
		if err != nil {
			return off, false, err
		}
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			b = b[:i]
		}
		if write != nil && len(b) > 0 {
			if err := write(b); err != nil {
				return off, false, err
			}
		}
		off += int64(len(b))
		if i >= 0 {
			return off + 1, true, nil
		}
	}
}

// logReader is the state of one ReadLog call. It is used by one goroutine.
type logReader struct {
	path  string
	opts  LogOptions
	out   *bufio.Writer
	flush func()

	// f is the open log file, fi its identity (to detect a rotation), and
	// off the offset of the first byte the follower has not consumed.
	f   *os.File
	fi  os.FileInfo
	off int64
	// scan reads lines in order; copy re-reads a joined line's parts.
	scan, copy window
	// hdr holds the header of the line being parsed.
	hdr [maxLogHeader]byte
	// cur is the line the follower is in the middle of (its header parsed,
	// part of its content written), or nil between lines.
	cur *followLine
	// open marks streams whose current line was started on the output (a
	// partial line was written) so its continuation gets no timestamp.
	open [2]bool
	// skip marks streams whose current line was cut off by the tail or by
	// Since: its continuation is dropped up to and including its full line.
	skip [2]bool
}

// streamIndex maps a parsed stream to an index of the per-stream arrays.
func streamIndex(s string) int {
	if s == StreamStderr {
		return 1
	}
	return 0
}

// flushOut hands what is buffered to the writer and flushes it.
func (lr *logReader) flushOut() error {
	if err := lr.out.Flush(); err != nil {
		if errors.Is(err, errLogLimit) {
			return err
		}
		return fmt.Errorf("write log: %w", err)
	}
	if lr.flush != nil {
		lr.flush()
	}
	return nil
}

// write writes b to the output.
func (lr *logReader) write(b []byte) error {
	if _, err := lr.out.Write(b); err != nil {
		if errors.Is(err, errLogLimit) {
			return err
		}
		return fmt.Errorf("write log: %w", err)
	}
	return nil
}

// startLine writes the timestamp prefix of a line of stream s unless a
// partial line of s is open on the output.
func (lr *logReader) startLine(s int, ts time.Time) error {
	if !lr.opts.Timestamps || lr.open[s] {
		return nil
	}
	var b [64]byte
	return lr.write(append(ts.AppendFormat(b[:0], timeFormatOut), ' '))
}

// endLine ends a written line of stream s: a newline unless partial.
func (lr *logReader) endLine(s int, partial bool) error {
	lr.open[s] = partial
	if partial {
		return nil
	}
	return lr.write([]byte{'\n'})
}

// before reports whether ts is older than Since.
func (lr *logReader) before(ts time.Time) bool {
	return !lr.opts.Since.IsZero() && ts.Before(lr.opts.Since)
}

// tailPlan says which joined lines of the initial pass are written.
type tailPlan struct {
	// start is where the first written line begins (the end: none).
	start int64
	// minFull: a complete joined line is written when its last (F) part
	// starts at or after minFull.
	minFull int64
	// pending[s]: stream s's unfinished line at the end is written.
	pending [2]bool
	// unfinished[s]: the planner found that stream s ends with an
	// unfinished line (written or not).
	unfinished [2]bool
}

// initial writes the joined lines of the file up to its end (with Follow,
// up to its last newline: the follower takes the rest), cut to the tail. A
// partial line at the end counts as a line and is left open for the
// follower to continue.
//
// It scans from the plan's start and tracks, per stream, where the current
// joined line began; when the line's F part arrives (or the end, for an
// unfinished one) and the plan keeps it, copyJoined writes its parts from
// the file.
func (lr *logReader) initial() error {
	end := lr.fi.Size()
	if lr.opts.Follow {
		nl, err := lr.scan.lastNewline(end)
		if err != nil {
			return err
		}
		end = nl + 1
	}
	plan := tailPlan{pending: [2]bool{true, true}}
	if lr.opts.TailLines != nil {
		var err error
		if plan, err = lr.planTail(max(*lr.opts.TailLines, 0), end); err != nil {
			return err
		}
	}
	// first[s] is where stream s's current joined line began (-1: none),
	// firstTS[s] its timestamp.
	first := [2]int64{-1, -1}
	var firstTS [2]time.Time
	for off := plan.start; off < end; {
		lh, err := lr.readHead(&lr.scan, off, end)
		if err != nil {
			return err
		}
		if lh.end <= off {
			break // the file shrank
		}
		line := off
		off = lh.end
		if !lh.ok {
			continue // the kubelet skips what it cannot parse, too
		}
		s := streamIndex(lh.Stream)
		if first[s] < 0 {
			first[s], firstTS[s] = line, lh.Timestamp
		}
		if lh.Partial {
			continue
		}
		if line >= plan.minFull && !lr.before(firstTS[s]) {
			if err := lr.copyJoined(s, first[s], lh.end, firstTS[s], false); err != nil {
				return err
			}
		}
		first[s] = -1
	}
	// Unfinished lines, oldest first.
	order := []int{0, 1}
	if first[1] >= 0 && (first[0] < 0 || first[1] < first[0]) {
		order = []int{1, 0}
	}
	for _, s := range order {
		if first[s] < 0 {
			// An unfinished line wholly before the tail's start.
			lr.skip[s] = plan.unfinished[s]
			continue
		}
		if !plan.pending[s] || lr.before(firstTS[s]) {
			lr.skip[s] = true
			continue
		}
		if err := lr.copyJoined(s, first[s], end, firstTS[s], true); err != nil {
			return err
		}
	}
	lr.off = end
	return nil
}

// copyJoined writes the joined line of stream s whose parts are the lines
// of s in [from, to), each part's content in turn, with the timestamp
// prefix and (unless partial) the newline.
func (lr *logReader) copyJoined(s int, from, to int64, ts time.Time, partial bool) error {
	if err := lr.startLine(s, ts); err != nil {
		return err
	}
	for off := from; off < to; {
		h, nl, err := lr.headBytes(&lr.copy, off, to)
		if err != nil {
			return err
		}
		lh := lr.parseHead(off, h, nl || len(h) < maxLogHeader)
		mine := lh.ok && streamIndex(lh.Stream) == s
		if mine {
			if err := lr.write(h[lh.content-off:]); err != nil {
				return err
			}
		}
		if nl {
			off += int64(len(h)) + 1
			continue
		}
		var write func([]byte) error
		if mine {
			write = lr.write
		}
		next, _, err := copyLine(&lr.copy, off+int64(len(h)), to, write)
		if err != nil {
			return err
		}
		if next <= off {
			break
		}
		off = next
	}
	return lr.endLine(s, partial)
}

// planTail finds which joined lines of [0, end) are the last n: the
// unfinished lines at the end come last (latest started last), before
// them the complete ones in the order of their F parts. It reads the file
// backwards from end, line by line, parsing only each line's header, and
// stops once it has found the first part of each of the last n lines (and
// has seen both streams, or looked tailLookBack further for the one it has
// not seen).
func (lr *logReader) planTail(n, end int64) (tailPlan, error) {
	const none = math.MaxInt64
	// Per stream: the joined line whose parts are being walked, its place
	// among the complete lines counted from the end (1: the last; 0: the
	// unfinished line at the end) and the earliest part found so far.
	var (
		seen  [2]bool
		idx   [2]int64
		first [2]int64
	)
	var count int64 // complete lines found
	// With p unfinished lines taken (p = 0..2): fullAt[p] is where the F part
	// of the (n-p)th last complete line starts, minStart[p] the earliest
	// first part of the last n-p complete lines.
	fullAt := [3]int64{none, none, none}
	minStart := [3]int64{none, none, none}
	unfinishedAt := [2]int64{-1, -1}
	resolve := func(s int) {
		if idx[s] == 0 {
			unfinishedAt[s] = first[s]
			return
		}
		for p := range minStart {
			if idx[s] <= n-int64(p) {
				minStart[p] = min(minStart[p], first[s])
			}
		}
	}
	counted := func(s int) {
		count++
		idx[s] = count
		for p := range fullAt {
			if count == n-int64(p) {
				fullAt[p] = first[s]
			}
		}
	}
	// needed reports whether stream s's open line is one of the last n.
	needed := func(s int) bool {
		return seen[s] && (idx[s] == 0 && n > 0 || idx[s] > 0 && idx[s] <= n)
	}
	var plan tailPlan
	stop, hasNL := end, false
	if end > 0 {
		b, err := lr.scan.at(end-1, end)
		if err != nil {
			return plan, err
		}
		hasNL = b[0] == '\n'
	}
	lookFrom := int64(-1)
	for stop > 0 {
		lineEnd := stop
		if hasNL {
			lineEnd--
		}
		nl, err := lr.scan.lastNewline(lineEnd)
		if err != nil {
			return plan, err
		}
		ls := nl + 1
		stop, hasNL = ls, true
		h, _, err := lr.headBytes(&lr.scan, ls, lineEnd)
		if err != nil {
			return plan, err
		}
		if lh := lr.parseHead(ls, h, int64(len(h)) == lineEnd-ls); lh.ok {
			s := streamIndex(lh.Stream)
			switch {
			case !seen[s]:
				seen[s], first[s] = true, ls
				if lh.Partial {
					idx[s], plan.unfinished[s] = 0, true
				} else {
					counted(s)
				}
			case lh.Partial:
				first[s] = ls
			default: // an F part: the end of the previous line of s
				resolve(s)
				first[s] = ls
				counted(s)
			}
		}
		if count >= n && !needed(0) && !needed(1) {
			if seen[0] && seen[1] {
				break
			}
			if lookFrom < 0 {
				lookFrom = ls
			} else if lookFrom-ls > tailLookBack {
				break
			}
		}
	}
	if stop == 0 {
		for s := range seen {
			if seen[s] {
				resolve(s)
			}
		}
	}

	// Take the unfinished lines first, latest started first.
	start := int64(none)
	var takeOrder []int
	for s := range unfinishedAt {
		if unfinishedAt[s] >= 0 {
			takeOrder = append(takeOrder, s)
		}
	}
	slices.SortFunc(takeOrder, func(a, b int) int { return int(unfinishedAt[b] - unfinishedAt[a]) })
	p := 0
	for _, s := range takeOrder {
		if int64(p) < n {
			plan.pending[s] = true
			start = min(start, unfinishedAt[s])
			p++
		}
	}
	switch k := n - int64(p); {
	case k <= 0:
		plan.minFull = none
	case count >= k:
		plan.minFull = fullAt[p]
		start = min(start, minStart[p])
	default: // fewer complete lines than asked for: all of them
		plan.minFull = 0
		start = min(start, minStart[p])
	}
	plan.start = min(start, end)
	return plan, nil
}

// followLine is a line the follower has parsed the header of.
type followLine struct {
	// s is the line's stream index; partial is true for a P line.
	s       int
	partial bool
	// valid is false for an unparsable line, dropped without effect.
	valid bool
	// emit: its content goes to the output; otherwise it is dropped.
	emit bool
	// endsSkip: the line is the F part of a line the tail or Since cut.
	endsSkip bool
}

// begin decides what happens to the line the follower reached and writes
// its timestamp prefix when it is written.
func (lr *logReader) begin(lh logHead) (*followLine, error) {
	if !lh.ok {
		return &followLine{}, nil
	}
	s := streamIndex(lh.Stream)
	c := &followLine{s: s, partial: lh.Partial, valid: true}
	switch {
	case lr.skip[s]:
		c.endsSkip = !lh.Partial
	case !lr.open[s] && lr.before(lh.Timestamp):
		if lh.Partial {
			lr.skip[s] = true
		}
	default:
		c.emit = true
		if err := lr.startLine(s, lh.Timestamp); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// finish ends the follower's current line.
func (lr *logReader) finish() error {
	c := lr.cur
	lr.cur = nil
	if c == nil || !c.valid {
		return nil
	}
	if c.endsSkip {
		lr.skip[c.s] = false
	}
	if c.emit {
		return lr.endLine(c.s, c.partial)
	}
	return nil
}

// writeCur writes content of the current line when it is written.
func (lr *logReader) writeCur(b []byte) error {
	if lr.cur != nil && lr.cur.emit {
		return lr.write(b)
	}
	return nil
}

// readAvailable writes every line now in the file from lr.off on, and
// flushes. A line whose header is complete is streamed as it grows; an
// unfinished line shorter than a header waits for more, unless final (the
// file will not grow: it was rotated), where it counts as a line.
func (lr *logReader) readAvailable(final bool) error {
	const limit = math.MaxInt64
	for {
		if lr.cur == nil {
			h, nl, err := lr.headBytes(&lr.scan, lr.off, limit)
			if err != nil {
				return err
			}
			if len(h) == 0 && !nl {
				break // nothing new
			}
			short := !nl && len(h) < maxLogHeader
			if short && !final {
				break // wait for the rest of the header
			}
			lh := lr.parseHead(lr.off, h, nl || short)
			if lr.cur, err = lr.begin(lh); err != nil {
				return err
			}
			if lh.ok {
				if err := lr.writeCur(h[lh.content-lr.off:]); err != nil {
					return err
				}
			}
			lr.off += int64(len(h))
			if nl || short {
				if nl {
					lr.off++
				}
				if err := lr.finish(); err != nil {
					return err
				}
				continue
			}
		}
		next, nl, err := copyLine(&lr.scan, lr.off, limit, lr.writeCur)
		lr.off = next
		if err != nil {
			return err
		}
		if !nl && !final {
			break // the line goes on: its content so far is written
		}
		if err := lr.finish(); err != nil {
			return err
		}
		if !nl {
			break
		}
	}
	return lr.flushOut()
}

// checkRotation looks at the path after the follower reached the end of
// the file. When the path names a new file (the agent renamed the old one
// and the runtime reopened the path), it drains the old file and switches
// to the new one from its start; when the file shrank (truncation), it
// starts over. It reports whether it switched.
func (lr *logReader) checkRotation() (bool, error) {
	fi, err := os.Lstat(lr.path)
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
		if err := lr.finish(); err != nil {
			return false, err
		}
		lr.off = 0
		lr.scan.reset(lr.f)
		return true, nil
	}
	// Rotated: finish the old file (including an unterminated last line),
	// then take the new one.
	if err := lr.readAvailable(true); err != nil {
		return false, err
	}
	f, nfi, err := openLog(lr.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open rotated container log: %w", err)
	}
	lr.f.Close()
	lr.f, lr.fi, lr.off, lr.cur = f, nfi, 0, nil
	lr.scan.reset(f)
	lr.copy.reset(f)
	return true, nil
}
