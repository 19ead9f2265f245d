package prep

import "unsafe"

// Records: what ReadDocs needs from one JSONL line, found in one pass of the fast
// scanner (scanObject), and decoded only when needed, so that a record that is
// filtered out or skipped costs the scan and nothing more.

// The Pile's metadata: each record's meta.pile_set_name names its subset.
const (
	metaKey = "meta"
	setKey  = "pile_set_name"
)

// record is one JSONL line as ReadDocs sees it.
type record struct {
	key       string
	text      []byte // the raw JSON value of member key; nil if there is none
	textFlags uint8  // scanString's flags, when text is a string
	set       []byte // the raw JSON value of meta.pile_set_name; nil if there is none
	setFlags  uint8
}

// scanRecord finds the text (member key) of the JSON object line and, if withSet,
// its meta.pile_set_name. The error, for a line that is not a valid JSON object, is
// TextField's. The values found are what encoding/json finds: the last of repeated
// members counts, names match once their escapes are decoded, and meta must be an
// object.
func scanRecord(line []byte, key string, withSet bool) (record, error) {
	rec := record{key: key}
	names := [2]string{key, metaKey}
	var spans [2]span
	n := 1
	if withSet {
		n = 2
	}
	var meta []byte
	if scanObject(line, names[:n], spans[:n]) {
		rec.text, rec.textFlags = spans[0].value(line), spans[0].flags
		if withSet {
			meta = spans[1].value(line)
		}
	} else {
		members, err := slowMembers(line)
		if err != nil {
			return record{}, err
		}
		if raw, ok := members[key]; ok {
			rec.text = trimSpace(raw)
			rec.textFlags = stringFlags(rec.text)
		}
		if raw, ok := members[metaKey]; ok && withSet {
			meta = trimSpace(raw)
		}
	}
	if meta != nil {
		rec.set, rec.setFlags = member(meta, setKey)
	}
	return rec, nil
}

// decode decodes the text, which must be there: a string, or a list of strings
// joined with ListSeparator. badUTF8 says whether it held invalid UTF-8 (now U+FFFD).
// The error is a *TypeError when the value is not text. A string goes into arena
// when there is one.
func (r *record) decode(arena *textArena) (text string, badUTF8 bool, err error) {
	if arena != nil && r.text[0] == '"' {
		return arena.decode(r.text[1:len(r.text)-1], r.textFlags), r.textFlags&strBadUTF8 != 0, nil
	}
	text, badUTF8, ok := decodeText(r.text, r.textFlags)
	if !ok {
		return "", false, notText(r.text, r.key)
	}
	return text, badUTF8, nil
}

// emptyString reports whether the text is the empty string "", which it can tell
// without decoding (a non-empty JSON string never decodes to "").
func (r *record) emptyString() (isString, empty bool) {
	if r.text[0] != '"' {
		return false, false
	}
	return true, len(r.text) == 2
}

// setIs reports whether the record has a set name (a string meta.pile_set_name)
// and whether it is want, decoding it only if it holds escapes.
func (r *record) setIs(want string) (named, equal bool) {
	if len(r.set) == 0 || r.set[0] != '"' {
		return false, false
	}
	return true, keyEqual(r.set[1:len(r.set)-1], r.setFlags, want)
}

// member returns the raw JSON value of the last member name of obj, a valid JSON
// value, and its scanString flags if it is a string; nil if obj is not an object or
// has no such member.
func member(obj []byte, name string) (raw []byte, flags uint8) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, 0
	}
	var spans [1]span
	if scanObject(obj, []string{name}, spans[:]) {
		return spans[0].value(obj), spans[0].flags
	}
	members, err := slowMembers(obj) // nested too deep for the fast path
	if err != nil {
		return nil, 0 // cannot happen: obj is a valid object
	}
	if raw, ok := members[name]; ok {
		raw = trimSpace(raw)
		return raw, stringFlags(raw)
	}
	return nil, 0
}

// StringMember returns the string at path in the JSON object line: path[0] names a
// member of the object, path[1] a member of that member's value, and so on; the last
// must hold a string. StringMember(line, "meta", "pile_set_name") is a Pile record's
// subset. ok is false, with a nil error, when a member is missing, a value on the way
// is not an object, or the last is not a string (or path is empty). Errors, for a
// line that is not a valid JSON object, are TextField's.
//
// The result is what encoding/json gives decoding the line into a map[string]any:
// the last of repeated members counts, escapes are decoded and invalid UTF-8 becomes
// U+FFFD. Like TextField, it validates the line in one fast pass and decodes only the
// string it returns.
func StringMember(line []byte, path ...string) (s string, ok bool, err error) {
	var raw []byte
	var flags uint8
	var spans [1]span
	switch {
	case len(path) == 0:
		if _, err := scanRecord(line, "", false); err != nil {
			return "", false, err
		}
	case scanObject(line, path[:1], spans[:]):
		raw, flags = spans[0].value(line), spans[0].flags
	default:
		members, err := slowMembers(line)
		if err != nil {
			return "", false, err
		}
		if m, ok := members[path[0]]; ok {
			raw = trimSpace(m)
			flags = stringFlags(raw)
		}
	}
	for _, name := range path[min(1, len(path)):] {
		if raw == nil {
			break
		}
		raw, flags = member(raw, name)
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	return decodeString(raw[1:len(raw)-1], flags), true, nil
}

// textArena holds decoded texts back to back in arrays of textArenaSize (or one of its
// own for a longer text): one allocation for a batch of documents instead of one each,
// which `tokenize run` paid for in the allocator, clearing, page faults and
// collection. A text handed on is never written again: the next go after it, or into
// a new array; an array lives as long as a text in it. With a pool, the arrays come
// from it and those of each batch are recorded (batch) for the pool to take back.
type textArena struct {
	buf  []byte
	pool *TextPool // nil: new arrays
	used [][]byte  // the pool's arrays decoded into since the last batch
}

const textArenaSize = 256 << 10 // see jsonlReadSize

// decode decodes the contents raw of a valid JSON string flagged by scanString with
// flags into the arena.
func (a *textArena) decode(raw []byte, flags uint8) string {
	need := len(raw) + 32 // appendEscaped's room
	if flags&strBadUTF8 != 0 {
		need += 2 * len(raw) // U+FFFD is 3 bytes
	}
	if cap(a.buf)-len(a.buf) < need {
		if a.pool != nil && need <= textArenaSize {
			a.buf = a.pool.get()
			a.used = append(a.used, a.buf)
		} else {
			a.buf = make([]byte, 0, max(textArenaSize, need))
		}
	}
	start := len(a.buf)
	a.buf = appendString(a.buf, raw, flags)
	if len(a.buf) == start {
		return ""
	}
	return unsafe.String(&a.buf[start], len(a.buf)-start)
}

// batch returns the pool's arrays the texts since the last call went into, and starts
// the next texts in an array of their own.
func (a *textArena) batch() [][]byte {
	used := a.used
	a.used, a.buf = nil, nil
	return used
}
