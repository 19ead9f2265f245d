// Package tbtest reads TensorBoard event files for tests, independently of package
// tensorboard's writer: the TFRecord framing, the protobuf wire format and the field
// numbers of tensorflow/core/util/event.proto are decoded here from their
// descriptions, with neither the writer's code nor a protobuf library, so that a test
// of the writer is not the writer checking itself.
package tbtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
)

// Event is what Read decodes of an Event.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	SessionLog  int                // the SessionLog status (1 START), 0 when absent
	Scalars     map[string]float32 // the summary's simple values by tag
}

// field is one protobuf field as the wire format gives it.
type field struct {
	num  int
	wire int    // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
	u    uint64 // varint, fixed64 or fixed32 value
	b    []byte // bytes value
}

// decodeMessage splits a protobuf message into its fields.
func decodeMessage(b []byte) ([]field, error) {
	var out []field
	varint := func() (uint64, error) {
		var x uint64
		for shift := 0; shift < 64; shift += 7 {
			if len(b) == 0 {
				return 0, errors.New("truncated varint")
			}
			c := b[0]
			b = b[1:]
			x |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return x, nil
			}
		}
		return 0, errors.New("varint too long")
	}
	for len(b) > 0 {
		key, err := varint()
		if err != nil {
			return nil, err
		}
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			if f.u, err = varint(); err != nil {
				return nil, err
			}
		case 1:
			if len(b) < 8 {
				return nil, errors.New("truncated fixed64")
			}
			f.u, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("truncated fixed32")
			}
			f.u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			n, err := varint()
			if err != nil {
				return nil, err
			}
			if uint64(len(b)) < n {
				return nil, errors.New("truncated bytes")
			}
			f.b, b = b[:n], b[n:]
		default:
			return nil, fmt.Errorf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// Read reads an event file (TFRecords of Events), checking both CRCs of every record
// and refusing fields an Event of scalars does not have.
func Read(path string) ([]Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	masked := func(b []byte) uint32 {
		c := crc32.Checksum(b, table)
		return (c>>15 | c<<17) + 0xa282ead8
	}
	var events []Event
	for off := 0; off < len(data); {
		if len(data)-off < 12 {
			return nil, fmt.Errorf("%s: %d bytes at %d: a truncated record header", path, len(data)-off, off)
		}
		n := int(binary.LittleEndian.Uint64(data[off:]))
		if got, want := binary.LittleEndian.Uint32(data[off+8:]), masked(data[off:off+8]); got != want {
			return nil, fmt.Errorf("%s: record at %d: length CRC %x, want %x", path, off, got, want)
		}
		if len(data)-off-12 < n+4 {
			return nil, fmt.Errorf("%s: record at %d: %d bytes of data, want %d", path, off, len(data)-off-16, n)
		}
		body := data[off+12 : off+12+n]
		if got, want := binary.LittleEndian.Uint32(data[off+12+n:]), masked(body); got != want {
			return nil, fmt.Errorf("%s: record at %d: data CRC %x, want %x", path, off, got, want)
		}
		ev, err := decodeEvent(body)
		if err != nil {
			return nil, fmt.Errorf("%s: record at %d: %w", path, off, err)
		}
		events = append(events, ev)
		off += 12 + n + 4
	}
	return events, nil
}

// decodeEvent decodes an Event's wall_time (1), step (2), file_version (3), summary
// (5: repeated Value{tag 1, simple_value 2}) and session_log (7: {status 1}).
func decodeEvent(body []byte) (Event, error) {
	fields, err := decodeMessage(body)
	if err != nil {
		return Event{}, err
	}
	ev := Event{Scalars: map[string]float32{}}
	for _, f := range fields {
		switch {
		case f.num == 1 && f.wire == 1:
			ev.WallTime = math.Float64frombits(f.u)
		case f.num == 2 && f.wire == 0:
			ev.Step = int64(f.u)
		case f.num == 3 && f.wire == 2:
			ev.FileVersion = string(f.b)
		case f.num == 7 && f.wire == 2:
			sl, err := decodeMessage(f.b)
			if err != nil || len(sl) != 1 || sl[0].num != 1 || sl[0].wire != 0 {
				return ev, fmt.Errorf("session_log %v: %v", sl, err)
			}
			ev.SessionLog = int(sl[0].u)
		case f.num == 5 && f.wire == 2:
			values, err := decodeMessage(f.b)
			if err != nil {
				return ev, err
			}
			for _, v := range values {
				if v.num != 1 || v.wire != 2 {
					return ev, fmt.Errorf("summary field %d (wire %d)", v.num, v.wire)
				}
				vf, err := decodeMessage(v.b)
				if err != nil {
					return ev, err
				}
				var tag string
				var val float32
				for _, x := range vf {
					switch {
					case x.num == 1 && x.wire == 2:
						tag = string(x.b)
					case x.num == 2 && x.wire == 5:
						val = math.Float32frombits(uint32(x.u))
					default:
						return ev, fmt.Errorf("value field %d (wire %d)", x.num, x.wire)
					}
				}
				ev.Scalars[tag] = val
			}
		default:
			return ev, fmt.Errorf("event field %d (wire %d)", f.num, f.wire)
		}
	}
	return ev, nil
}
