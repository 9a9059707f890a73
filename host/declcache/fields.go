package declcache

import (
	"fmt"
	"reflect"
	"slices"
)

// Fields is one line, "Name value", for each field of cfg (a struct) that
// is data, for Start.Grants: whatever a transport's configuration holds
// goes into the key, so a field added to it later changes the key without
// anyone remembering to copy it here. Fields that are hooks or shared
// state rather than what the plugin is given (funcs, interfaces such as a
// writer, pointers, channels) are left out, and so is each field skip
// names; the caller says beside the call why each may not change the
// declaration. A name in skip that cfg does not have panics: a field
// renamed would otherwise quietly join the key.
func Fields(cfg any, skip ...string) []string {
	v := reflect.ValueOf(cfg)
	t := v.Type()
	for _, name := range skip {
		if _, ok := t.FieldByName(name); !ok {
			panic(fmt.Sprintf("declcache.Fields: %s has no field %s", t, name))
		}
	}
	var lines []string
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Func, reflect.Interface, reflect.Pointer, reflect.Chan, reflect.UnsafePointer:
			continue
		}
		if slices.Contains(skip, f.Name) {
			continue
		}
		// %+v writes a map's keys sorted, so equal configurations give
		// equal lines.
		lines = append(lines, fmt.Sprintf("%s %+v", f.Name, v.Field(i).Interface()))
	}
	return lines
}
