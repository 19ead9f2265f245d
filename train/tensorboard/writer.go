// Package tensorboard writes TensorBoard event files (events.out.tfevents.*), so that
// `tensorboard --logdir OUT` plots a run's scalars: loss, val loss, learning rate,
// gradient norm, throughput.
//
// The format is small and stable, so it is written here rather than with TensorFlow's
// or PyTorch's writers (neither exists for Go; a port of tensorboardX would bring a
// generated protobuf package for two messages): a file is a sequence of TFRecords,
//
//	uint64 length | uint32 masked CRC-32C of length | data | uint32 masked CRC-32C of data
//
// (little-endian; masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8), each data an Event
// protocol buffer (tensorflow/core/util/event.proto) encoded with protowire:
//
//	Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
//	          Summary summary = 5; SessionLog session_log = 7; }
//	Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
//	SessionLog { SessionStatus status = 1; }   (START = 1)
//
// The first event carries file_version "brain.Event:2"; the second a SessionLog START at
// the run's first step, which tells TensorBoard to drop the points a crashed run
// logged past its last checkpoint when a resumed run logs them again.
package tensorboard

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"gptkit/internal/durable"
)

// Event and Summary field numbers (event.proto, summary.proto).
const (
	eventWallTime    protowire.Number = 1
	eventStep        protowire.Number = 2
	eventFileVersion protowire.Number = 3
	eventSummary     protowire.Number = 5
	eventSessionLog  protowire.Number = 7
	summaryValue     protowire.Number = 1
	valueTag         protowire.Number = 1
	valueSimpleValue protowire.Number = 2
	sessionLogStatus protowire.Number = 1
	sessionLogStart                   = 1
)

// FileVersion is the first event's file_version.
const FileVersion = "brain.Event:2"

// Scalar is one named value of a step.
type Scalar struct {
	Tag   string
	Value float64
}

// syncDir fsyncs a directory, making a file's creation in it durable (durable.SyncDir;
// a variable: the tests see the calls).
var syncDir = durable.SyncDir

// Writer appends events to one event file.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	path string
	now  func() time.Time
}

// Create starts a new event file in dir (made if missing), named as TensorFlow names
// them, events.out.tfevents.<unix seconds>.<host>.<pid> (with .1, .2, ... for more in
// the same second), with the file_version event and a SessionLog START at firstStep.
// The file's name in dir is synced once, as it is made, so that a crash keeps the
// file (its events are made durable by Sync).
func Create(dir string, firstStep int64) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	base := filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%010d.%s.%d", time.Now().Unix(), host, os.Getpid()))
	path := base
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for n := 1; errors.Is(err, fs.ErrExist) && n < 1000; n++ { // a second file within the second
		path = fmt.Sprintf("%s.%d", base, n)
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	tw := &Writer{f: f, w: bufio.NewWriter(f), path: path, now: time.Now}
	first := protowire.AppendTag(nil, eventFileVersion, protowire.BytesType)
	first = protowire.AppendString(first, FileVersion)
	start := protowire.AppendTag(nil, sessionLogStatus, protowire.VarintType)
	start = protowire.AppendVarint(start, sessionLogStart)
	session := protowire.AppendTag(nil, eventSessionLog, protowire.BytesType)
	session = protowire.AppendBytes(session, start)
	if err := tw.record(0, first); err == nil {
		err = tw.record(firstStep, session)
	}
	if err == nil {
		err = tw.Flush()
	}
	if err == nil {
		if err = syncDir(dir); err != nil {
			err = fmt.Errorf("tensorboard: create %s: %w", path, err)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(path) // (made here: no other writer's)
		return nil, err
	}
	return tw, nil
}

// Path is the event file's path.
func (tw *Writer) Path() string { return tw.path }

// Scalars writes one event with the step's scalars (float32, as TensorBoard keeps
// them). Call Flush to make them visible.
func (tw *Writer) Scalars(step int64, values ...Scalar) error {
	var summary []byte
	for _, v := range values {
		var val []byte
		val = protowire.AppendTag(val, valueTag, protowire.BytesType)
		val = protowire.AppendString(val, v.Tag)
		val = protowire.AppendTag(val, valueSimpleValue, protowire.Fixed32Type)
		val = protowire.AppendFixed32(val, math.Float32bits(float32(v.Value)))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, val)
	}
	body := protowire.AppendTag(nil, eventSummary, protowire.BytesType)
	return tw.record(step, protowire.AppendBytes(body, summary))
}

// record writes one Event: wall_time, step, then the rest of its fields (body).
func (tw *Writer) record(step int64, body []byte) error {
	wall := float64(tw.now().UnixNano()) / 1e9
	ev := protowire.AppendTag(nil, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wall))
	if step != 0 {
		ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
		ev = protowire.AppendVarint(ev, uint64(step))
	}
	ev = append(ev, body...)
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(ev)))
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], maskedCRC(ev))
	for _, b := range [][]byte{hdr[:], ev, tail[:]} {
		if _, err := tw.w.Write(b); err != nil {
			return fmt.Errorf("tensorboard: write %s: %w", tw.path, err)
		}
	}
	return nil
}

// Flush writes what is buffered to the file.
func (tw *Writer) Flush() error {
	if err := tw.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard: write %s: %w", tw.path, err)
	}
	return nil
}

// Sync flushes and fsyncs the file.
func (tw *Writer) Sync() error {
	if err := tw.Flush(); err != nil {
		return err
	}
	return tw.f.Sync()
}

// Close flushes and closes the file.
func (tw *Writer) Close() error {
	if tw == nil {
		return nil
	}
	err := tw.Flush()
	if cerr := tw.f.Close(); err == nil {
		err = cerr
	}
	return err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC-32C of b.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}
