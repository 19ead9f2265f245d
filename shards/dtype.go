package shards

import (
	"fmt"
	"math"
)

// DType is the element type of a shard's tokens, numbered by the MMIDIDX dtype codes that
// GPT-NeoX and Megatron write into the .idx header.
//
// Only integer codes are supported. Codes 6 and 7 are floating-point types whose meaning
// differs upstream (GPT-NeoX: 6 float64 via np.float, 7 float64; Megatron-core: 6 float64,
// 7 float32); token ids are never stored as floats, so both are rejected.
type DType uint8

// The integer dtype codes. Writers produce only Uint16 and Int32, as GPT-NeoX's
// preprocess_data.py does; readers accept all of them.
const (
	Uint8  DType = 1
	Int8   DType = 2
	Int16  DType = 3
	Int32  DType = 4
	Int64  DType = 5
	Uint16 DType = 8
)

// DTypeForVocab is the dtype GPT-NeoX picks for a tokenizer with vocabSize ids: uint16
// below 65500, int32 otherwise (megatron/data/indexed_dataset.py __best_fitting_dtype).
func DTypeForVocab(vocabSize int) DType {
	if vocabSize < 65500 {
		return Uint16
	}
	return Int32
}

// Size is the number of bytes of one token, or 0 for an unknown code.
func (d DType) Size() int {
	switch d {
	case Uint8, Int8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32:
		return 4
	case Int64:
		return 8
	}
	return 0
}

// MaxID is the largest token id the dtype holds (ids are never negative).
func (d DType) MaxID() int64 {
	switch d {
	case Uint8:
		return math.MaxUint8
	case Int8:
		return math.MaxInt8
	case Int16:
		return math.MaxInt16
	case Uint16:
		return math.MaxUint16
	case Int32:
		return math.MaxInt32
	case Int64:
		return math.MaxInt64
	}
	return -1
}

// Valid reports whether d is a supported (integer) dtype code.
func (d DType) Valid() bool { return d.Size() != 0 }

// String is the numpy name of the dtype ("uint16", "int32"), as manifests spell it.
func (d DType) String() string {
	switch d {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Uint16:
		return "uint16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType returns the dtype named name ("uint16", "int32", ...).
func ParseDType(name string) (DType, error) {
	for _, d := range []DType{Uint8, Int8, Int16, Int32, Int64, Uint16} {
		if d.String() == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown dtype %q (want uint16 or int32)", ErrBadDType, name)
}

// MarshalText spells the dtype by name, for JSON manifests.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("%w: code %d", ErrBadDType, uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses a dtype name.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// signed reports whether d holds negative values (which are never token ids).
func (d DType) signed() bool { return d == Int8 || d == Int16 || d == Int32 || d == Int64 }

// writable reports whether Writer can produce d (the two types preprocess_data.py writes).
func (d DType) writable() bool { return d == Uint16 || d == Int32 }
