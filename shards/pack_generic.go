//go:build !amd64 || noasm || !gc

package shards

var packAVX2 = false

func packUint16(dst []byte, ids []int32) (int, uint) { return 0, 0 }
