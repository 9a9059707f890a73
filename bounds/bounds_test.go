package bounds

import (
	"reflect"
	"testing"
	"time"
)

// Every field left zero or negative takes its default, and every field
// set is kept: a new field missing from WithDefaults fails here.
func TestWithDefaults(t *testing.T) {
	def := DefaultDeadlines()
	if got := (Deadlines{}).WithDefaults(); got != def {
		t.Errorf("zero Deadlines.WithDefaults() = %+v, want %+v", got, def)
	}
	var set, negative Deadlines
	sv, nv := reflect.ValueOf(&set).Elem(), reflect.ValueOf(&negative).Elem()
	for i := range sv.NumField() {
		sv.Field(i).SetInt(int64(time.Duration(i+1) * time.Millisecond))
		nv.Field(i).SetInt(-1)
	}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults changed deadlines that were set: %+v, want %+v", got, set)
	}
	if got := negative.WithDefaults(); got != def {
		t.Errorf("negative Deadlines.WithDefaults() = %+v, want %+v", got, def)
	}
	for i := range reflect.ValueOf(def).NumField() {
		if reflect.ValueOf(def).Field(i).Int() <= 0 {
			t.Errorf("DefaultDeadlines().%s is not positive", reflect.TypeOf(def).Field(i).Name)
		}
	}

	if got := (Limits{}).WithDefaults(); got != DefaultLimits() {
		t.Errorf("zero Limits.WithDefaults() = %+v, want %+v", got, DefaultLimits())
	}
	if got := (Limits{ProviderResponseMiB: 4}).WithDefaults(); got.ProviderResponseMiB != 4 {
		t.Errorf("WithDefaults changed a limit that was set: %+v", got)
	}
}
