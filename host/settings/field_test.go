package settings

import (
	"reflect"
	"strings"
	"testing"
)

// Every key a file sets at a path of its own, a count or a duration
// outside the sections by plugin name and the provider's choice, is read
// through its entry in the key table: a file that sets it alone changes
// Settings. A key added to the table without a place to go fails here.
func TestEveryFixedKeyIsReadThroughTheTable(t *testing.T) {
	tried := 0
	for _, k := range table {
		fixed := (k.Kind == KindCount || k.Kind == KindDuration) &&
			!strings.Contains(k.Path, "<name>") && !strings.HasPrefix(k.Path, "provider.")
		if !fixed {
			continue
		}
		tried++
		if k.field == nil {
			t.Errorf("%s has no field: a file's value for it would go nowhere", k.Path)
			continue
		}
		value := "4321"
		if k.Kind == KindDuration {
			value = `"4321s"`
		}
		var doc strings.Builder
		parts := strings.Split(k.Path, ".")
		for _, p := range parts[:len(parts)-1] {
			doc.WriteString(`{"` + p + `": `)
		}
		doc.WriteString(`{"` + parts[len(parts)-1] + `": ` + value + `}` + strings.Repeat("}", len(parts)-1))
		l, err := parse("s.json", []byte(doc.String()))
		if err != nil {
			t.Errorf("%s: %v", k.Path, err)
			continue
		}
		s := Default()
		s.apply(l)
		if reflect.DeepEqual(s, Default()) {
			t.Errorf("a file setting only %s changed nothing", k.Path)
		}
	}
	if tried < 15 {
		t.Fatalf("only %d keys tried", tried)
	}
}
