package store

import (
	"bytes"
	"reflect"
	"testing"
)

func TestBinCodecRoundTripAndTruncation(t *testing.T) {
	v := VV{"b": 3, "a": 1 << 40, "": 7}
	b := AppendVV(nil, v)
	b = AppendBytes(b, "payload")
	b = append(b, 1)
	if !bytes.Equal(AppendVV(nil, VV{"": 7, "a": 1 << 40, "b": 3}), AppendVV(nil, v)) {
		t.Fatal("equal vectors encode differently")
	}
	d := NewBinDecoder(b)
	if got := d.VV(); !reflect.DeepEqual(got, v) || string(d.Bytes()) != "payload" || d.Byte() != 1 || d.Bad() || len(d.Rest()) != 0 {
		t.Fatalf("round trip: vv %v, bad %v, rest %d", got, d.Bad(), len(d.Rest()))
	}
	for n := 0; n < len(b)-1; n++ {
		d := NewBinDecoder(b[:n])
		d.VV()
		d.Bytes()
		d.Byte()
		if !d.Bad() {
			t.Fatalf("truncated to %d of %d bytes: not reported bad", n, len(b))
		}
	}
}

func TestBinDecoderFixed(t *testing.T) {
	d := NewBinDecoder([]byte{1, 2, 3, 4, 5})
	if got := d.Fixed(3); !bytes.Equal(got, []byte{1, 2, 3}) || d.Bad() {
		t.Fatalf("Fixed(3) = %v, bad %v", got, d.Bad())
	}
	if got := d.Fixed(3); got != nil || !d.Bad() || len(d.Rest()) != 0 {
		t.Fatalf("Fixed past the end = %v, bad %v, rest %v", got, d.Bad(), d.Rest())
	}
}
