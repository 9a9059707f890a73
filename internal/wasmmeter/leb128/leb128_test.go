package leb128

import (
	"bytes"
	"testing"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct {
		v    uint32
		want []byte
	}{{0, []byte{0}}, {127, []byte{0x7F}}, {128, []byte{0x80, 1}}, {624485, []byte{0xE5, 0x8E, 0x26}}, {1<<32 - 1, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}}} {
		if got := AppendUint32(nil, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("AppendUint32(%d) = %x, want %x", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    int32
		want []byte
	}{{0, []byte{0}}, {63, []byte{0x3F}}, {64, []byte{0xC0, 0}}, {-1, []byte{0x7F}}, {-64, []byte{0x40}}, {-65, []byte{0xBF, 0x7F}}, {-123456, []byte{0xC0, 0xBB, 0x78}}} {
		if got := AppendInt32(nil, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("AppendInt32(%d) = %x, want %x", c.v, got, c.want)
		}
	}
}
