package handlers

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// wholeNumber is an integer field read as JSON Schema reads one: any
// number whose value is whole, however it is written (2540, 2540.0,
// 2.54e3), since a client's JSON library may write an integer either way.
// encoding/json takes only the first into an int. A value too large for
// an int is kept as math.MaxInt with its sign, so that the field's range
// rule, not a type error, answers for it.
type wholeNumber int

// jsonNumberRE is the JSON number grammar (RFC 8259): sign, integer part,
// fraction, exponent.
var jsonNumberRE = regexp.MustCompile(`^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// maxShift bounds the exponents read as written: beyond it, the value is
// a whole number beyond an int, or a fraction.
const maxShift = 1 << 40

// UnmarshalJSON reads a JSON number that is a whole number; anything else
// (a fraction, a string, true ...) is a type error naming the field.
func (n *wholeNumber) UnmarshalJSON(b []byte) error {
	m := jsonNumberRE.FindSubmatch(b)
	if m == nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[int]()}
	}
	fraction := string(m[3])
	digits := strings.TrimLeft(string(m[2])+fraction, "0")
	if digits == "" { // 0, 0.0, -0e5
		*n = 0
		return nil
	}
	// The value is digits × 10^exp; with digits' trailing zeros moved into
	// exp, it is whole exactly when exp >= 0.
	trimmed := strings.TrimRight(digits, "0")
	exp, err := strconv.ParseInt(strings.TrimPrefix(string(m[4]), "+"), 10, 64)
	if len(m[4]) == 0 {
		exp, err = 0, nil
	}
	// An exponent beyond maxShift is far beyond any body's digits (the
	// body limit is far below it), so its sign alone decides; bounding it
	// keeps the sums below from overflowing int64 (1e9223372036854775807
	// would otherwise ask strings.Repeat for that many zeros).
	huge := err != nil || exp > maxShift || exp < -maxShift
	exp += int64(len(digits)-len(trimmed)) - int64(len(fraction))
	switch {
	case (huge && m[4][0] == '-') || (!huge && exp < 0):
		return &json.UnmarshalTypeError{Value: "number " + string(b), Type: reflect.TypeFor[int]()}
	case huge || int64(len(trimmed))+exp > 18:
		*n = math.MaxInt
	default:
		v, _ := strconv.ParseInt(trimmed+strings.Repeat("0", int(exp)), 10, 64) // at most 18 digits
		*n = wholeNumber(v)
	}
	if len(m[1]) > 0 {
		*n = -*n
	}
	return nil
}

// jsonValueKind names the kind of a JSON value the way encoding/json's
// type errors do.
func jsonValueKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	default:
		return "number " + string(b)
	}
}

// intPointer is the int a wholeNumber field holds, or nil when absent.
func (n *wholeNumber) intPointer() *int {
	if n == nil {
		return nil
	}
	v := int(*n)
	return &v
}
