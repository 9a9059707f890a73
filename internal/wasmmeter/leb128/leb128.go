// Package leb128 encodes the variable-length numbers of the WebAssembly
// binary format, for the meter and for the modules its tests build.
package leb128

// AppendUint32 appends v as an unsigned LEB128 number, in the fewest bytes.
func AppendUint32(w []byte, v uint32) []byte {
	for v >= 0x80 {
		w = append(w, byte(v)|0x80)
		v >>= 7
	}
	return append(w, byte(v))
}

// AppendInt32 appends v as a signed LEB128 number, in the fewest bytes.
func AppendInt32(w []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(w, c)
		}
		w = append(w, c|0x80)
	}
}
