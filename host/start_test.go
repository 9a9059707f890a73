package host

import (
	"reflect"
	"slices"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/declcache"
	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Every field of wasm.Config that is data and not named in wasmNotKeyed
// changes a wasm plugin's declaration key: set to anything but its zero
// value, it gives other grant lines.
func TestEveryWasmConfigFieldIsKeyed(t *testing.T) {
	base := declcache.Fields(wasm.Config{}, wasmNotKeyed...)
	typ := reflect.TypeFor[wasm.Config]()
	keyed := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		var c wasm.Config
		v := reflect.ValueOf(&c).Elem().Field(i)
		if !nonZero(v) {
			continue // a func, writer or pointer: not data
		}
		got := declcache.Fields(c, wasmNotKeyed...)
		if slices.Contains(wasmNotKeyed, f.Name) {
			if !slices.Equal(got, base) {
				t.Errorf("%s is not keyed, yet it changed the key", f.Name)
			}
			continue
		}
		keyed++
		if slices.Equal(got, base) {
			t.Errorf("wasm.Config.%s changed, and the declaration key did not", f.Name)
		}
	}
	if keyed < 5 {
		t.Fatalf("only %d fields were tried", keyed)
	}
}

// nonZero sets v, a field of a data kind, to some value other than its
// zero value, and reports whether it could.
func nonZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		nonZero(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		nonZero(k)
		nonZero(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() && nonZero(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}
