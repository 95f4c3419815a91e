package main

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// TestPyJSON: what orjson.loads reads and json.dumps writes, on values
// where Go's and Python's JSON part ways.
func TestPyJSON(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{`{"a":1,"b":[true,null,"x"],"a":2}`, `{"a": 2, "b": [true, null, "x"]}`}, // a repeated key keeps its place, takes its last value
		{`-0`, `0`},
		{`18446744073709551615`, `18446744073709551615`},
		{`18446744073709551616`, `1.8446744073709552e+19`}, // beyond 64 bits: a float
		{`-9223372036854775809`, `-9.223372036854776e+18`},
		{`[1.0, 1e15, 1e16, 0.0001, 0.00001, -0.0, 123.456, 1.5e300, 5e-324]`, `[1.0, 1000000000000000.0, 1e+16, 0.0001, 1e-05, -0.0, 123.456, 1.5e+300, 5e-324]`},
		{`"\ud83c\udf70 \u00e9 \u0000 / <>&\u2028"`, `"\ud83c\udf70 \u00e9 \u0000 / <>&\u2028"`},
		{"\"\x7f\"", `"\u007f"`},
	} {
		v, err := pyLoads(c.in)
		if err != nil {
			t.Errorf("pyLoads(%s): %v", c.in, err)
			continue
		}
		if got := pyDumps(v); got != c.out {
			t.Errorf("pyDumps(pyLoads(%s)):\n got %s\nwant %s", c.in, got, c.out)
		}
	}
	for _, in := range []string{``, `{`, `[1,]`, `NaN`, `1e400`, `-1e400`, `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `{"a" 1}`, `1 2`, "\"\x01\""} {
		if v, err := pyLoads(in); err == nil {
			t.Errorf("pyLoads(%q): got %v, want an error, as orjson refuses it", in, v)
		}
	}
}

// FuzzPyJSON: pyLoads refuses what Go's JSON refuses, and what it reads
// json.dumps writes as JSON that reads back to the same text.
func FuzzPyJSON(f *testing.F) {
	for _, s := range []string{`{"type":"vote","key":"canned,0","vote":1}`, `[1.5,-0,1e16,"\u00e9"]`, `{"a":{"a":[]},"a":null}`, `"\ud83c\udf70"`, `123456789012345678901234567890`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := pyLoads(s)
		if err != nil {
			return
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("pyLoads(%q) read what Go's JSON refuses", s)
		}
		out := pyDumps(v)
		if !json.Valid([]byte(out)) {
			t.Fatalf("pyDumps(pyLoads(%q)) = %q, not JSON", s, out)
		}
		again, err := pyLoads(out)
		if err != nil || pyDumps(again) != out {
			t.Fatalf("pyDumps(pyLoads(%q)) = %q does not read back to itself", s, out)
		}
	})
}

// TestPyFloatRepr: repr(float) for the shortest digits of every
// magnitude, each reading back to the same float.
func TestPyFloatRepr(t *testing.T) {
	for _, f := range []float64{0, 1, 0.1, 1.0 / 3, 2.5e-5, 9999999999999998.0, 1e16, 1e22, math.MaxFloat64, math.SmallestNonzeroFloat64, -1234.5} {
		s := pyFloatRepr(f)
		if back, err := strconv.ParseFloat(s, 64); err != nil || back != f {
			t.Errorf("pyFloatRepr(%v) = %q, reads back as %v, %v", f, s, back, err)
		}
	}
	for f, want := range map[float64]string{0.1: "0.1", 1.0 / 3: "0.3333333333333333", 9999999999999998.0: "9999999999999998.0", 1e22: "1e+22", math.MaxFloat64: "1.7976931348623157e+308", 2.5e-5: "2.5e-05"} {
		if got := pyFloatRepr(f); got != want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", f, got, want)
		}
	}
}

// FuzzWidgetOf: whatever a message says, its widget is JSON that names
// the widget it asked for, and what asks for none gets none.
func FuzzWidgetOf(f *testing.F) {
	for _, s := range []string{"/poll Q\n- a\n* b", "/todo T\nx: y", "/poll", "/pollx", "/poll\u00a0Q\u2028A", "/todo\r\n\r\n:", "hi"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		kind, widget := widgetOf(content)
		if (kind == "") != (widget == "") {
			t.Fatalf("widgetOf(%q) = %q, %q", content, kind, widget)
		}
		if kind == "" {
			return
		}
		if got := widgetTypeOf([]storedSubmessage{{MsgType: "widget", Content: widget}}); got != kind {
			t.Fatalf("widgetOf(%q) = %q, whose widget_type reads %q", content, widget, got)
		}
	})
}
