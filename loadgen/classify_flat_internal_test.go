package loadgen

import (
	"encoding/json"
	"reflect"
	"testing"
)

// flatSeeds are answers decodeFlat reads itself and answers it must leave to json.Unmarshal.
var flatSeeds = []string{
	`{"orderId":"019aeb1c-0000-7000-8000-000000000000","status":"PENDING","expiresAt":"2026-12-05T17:04:05.678Z"}` + "\n",
	`{"error":"SOLD_OUT","message":"item drop is sold out"}`, ` { "a" : "b" , "c":"" } `, `{}`, "\t{\r\n}\n",
	`{"a":"b","a":"c"}`, `{"a":1}`, `{"a":"\u00e9"}`, `{"a":"caf` + "\xc3\xa9" + `"}`, `{"a":"x\"y"}`,
	`{"a":{"b":"c"}}`, `{"a":"b",}`, `{"a":"b"}x`, `{"a":"b"`, `{"a" "b"}`, `{a:"b"}`, `[]`, `"a"`,
	`{"a":"b"}{}`, ``, ` `, `{"a":"tab` + "\t" + `"}`, `{"a":true}`, `{"a":null}`, `{,}`, `{"":""}`,
}

// TestDecodeFlatReadsPlainObjects: the answers of the bundled server are read without
// encoding/json, and everything else is left to it.
func TestDecodeFlatReadsPlainObjects(t *testing.T) {
	for i, body := range flatSeeds {
		_, ok := decodeFlat([]byte(body))
		if want := i < 5 || body == `{"a":"b","a":"c"}` || body == `{"":""}`; ok != want {
			t.Errorf("decodeFlat(%q) took it: %v, want %v", body, ok, want)
		}
	}
	doc, _ := decodeFlat([]byte(`{"a":"b","a":"c"}`))
	if doc["a"] != "c" {
		t.Errorf("a repeated key: %q, want the last value, as json.Unmarshal", doc["a"])
	}
}

// FuzzDecodeFlatAgrees: whatever decodeFlat decodes, json.Unmarshal decodes to the same document.
func FuzzDecodeFlatAgrees(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeFlat(body)
		if !ok {
			return
		}
		var want any
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("decodeFlat read %q, which json.Unmarshal refuses: %v", body, err)
		}
		if !reflect.DeepEqual(any(got), want) {
			t.Fatalf("%q: decodeFlat %#v, json.Unmarshal %#v", body, got, want)
		}
	})
}

// BenchmarkDecodeAnswer decodes a RESERVED answer of the bundled server both ways.
func BenchmarkDecodeAnswer(b *testing.B) {
	body := []byte(flatSeeds[0])
	b.Run("way=json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var doc any
			if err := json.Unmarshal(body, &doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("way=decodeFlat", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, ok := decodeFlat(body); !ok {
				b.Fatal("not read")
			}
		}
	})
}
