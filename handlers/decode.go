package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-playground/validator/v10"
)

// decodeJSON reads the request body into dst strictly: the content type must
// be JSON, the body one JSON object with only known fields and nothing after
// it, within the body size limit. Then dst's `validate` tags are checked.
// Every failure is a *Problem naming what is wrong.
func decodeJSON(r *http.Request, dst any) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	raw, err := io.ReadAll(r.Body) // bounded by limitBody
	if err != nil {
		return decodeProblem(err)
	}
	if err := onlyOneMeaning(raw, dst); err != nil {
		return err
	}
	// encoding/json reads a null into a struct as nothing at all: a body
	// of null would pass for {} (a request whose fields are all optional,
	// such as a deletion's, would be carried out on it).
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return newProblem(http.StatusBadRequest, "malformed_json", "The body must be a JSON object, not null.")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeProblem(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return newProblem(http.StatusBadRequest, "malformed_json", "The body must hold exactly one JSON value; found more after it.")
	}
	if err := rejectNulls(raw); err != nil {
		return err
	}
	return validateStruct(dst)
}

// onlyOneMeaning refuses bodies encoding/json would read one way and a
// proxy or filter in front of shelf another: a member name given twice
// (encoding/json keeps the last), a name that matches a field only in
// another case (encoding/json matches case-insensitively), and text that
// is not UTF-8 or escapes a lone surrogate (encoding/json stores U+FFFD).
// jsontext (the JSON v2 prototype) rejects the first and last itself; the
// names of every object that dst reads into a struct (the top level, and
// nested ones such as a proof's passkey) must equal that struct's JSON
// names exactly, and one that does not is named by its path
// (passkey.challenge), as the validator names nested fields.
// Other syntax errors are left to the decoder, whose messages say them.
func onlyOneMeaning(raw []byte, dst any) error {
	// open holds, for each object or array the decoder is in, the type it
	// reads into (nil where names are not checked: a free object, a type
	// that reads its own JSON, or anything below one) and the last name
	// read in it. Kept as the tokens come, it costs a step a token: a
	// path read again for every name grew with the depth, and a body of
	// deep free objects (a credential) took seconds.
	type container struct {
		t     reflect.Type
		names map[string]bool // t's JSON names, when t is a struct
		name  string
	}
	var open []container
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var syntaxErr *jsontext.SyntacticError
		switch {
		case err == nil:
		case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syntaxErr):
			name := syntaxErr.JSONPointer.LastToken()
			return newProblem(http.StatusBadRequest, "duplicate_field", fmt.Sprintf("The field %q is given more than once.", name),
				ProblemField{Field: name, Code: "duplicate", Message: "is given more than once"})
		case strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "surrogate"):
			return newProblem(http.StatusBadRequest, "malformed_json", "The body is not valid UTF-8 text (or escapes a lone surrogate): "+err.Error()+".")
		default:
			return nil
		}
		switch tok.Kind() {
		case '{', '[':
			t := reflect.TypeOf(dst)
			if n := len(open); n > 0 {
				t = childType(open[n-1].t, open[n-1].name)
			}
			t = readsByNames(t)
			open = append(open, container{t: t, names: jsonNames(t)})
			continue
		case '}', ']':
			open = open[:len(open)-1]
			continue
		case '"':
		default:
			continue
		}
		if kind, n := dec.StackIndex(dec.StackDepth()); kind != '{' || n%2 == 0 { // a value, not a name
			continue
		}
		in := &open[len(open)-1]
		in.name = tok.String()
		if in.names == nil || in.names[in.name] {
			continue
		}
		name := strings.Join(slices.Collect(dec.StackPointer().Tokens()), ".")
		return newProblem(http.StatusBadRequest, "unknown_field", fmt.Sprintf("The field %q is not part of this request (names match exactly, case included).", name),
			ProblemField{Field: name, Code: "unknown", Message: "is not a field of this request"})
	}
}

// childType is the Go type a value inside a JSON object or array read
// into t decodes into (through pointers: a struct's field by its exact
// JSON name, the element of a slice, an array or a map), or nil where
// encoding/json would not reach by exact names.
func childType(t reflect.Type, name string) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return nil
	case t.Kind() == reflect.Struct:
		return fieldType(t, name)
	case t.Kind() == reflect.Slice, t.Kind() == reflect.Array, t.Kind() == reflect.Map:
		return t.Elem()
	}
	return nil
}

// readsByNames is t, unless t reads its JSON itself (requestTime: its
// own errors say what is wrong, not its fields'), which is nil.
func readsByNames(t reflect.Type) reflect.Type {
	if t == nil || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// fieldType is the type of struct t's field whose JSON name is name
// (through embedded structs), or nil.
func fieldType(t reflect.Type, name string) reflect.Type {
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "":
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft := fieldType(et, name); ft != nil {
					return ft
				}
			}
		case !f.IsExported():
		case tag == name, tag == "" && f.Name == name:
			return f.Type
		}
	}
	return nil
}

// jsonNames are the JSON member names of struct type t (through pointers
// and embedded structs), or nil for other types.
func jsonNames(t reflect.Type) map[string]bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			// encoding/json promotes the fields of an embedded struct,
			// of an unexported type too.
			maps.Copy(names, jsonNames(f.Type))
		case !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
}

// rejectNulls refuses explicit nulls: the contract has no nullable field,
// and a null must not pass for "absent" (send the field or leave it out).
func rejectNulls(raw []byte) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	var fields []ProblemField
	for k, v := range obj {
		if string(bytes.TrimSpace(v)) == "null" {
			fields = append(fields, ProblemField{Field: k, Code: "wrong_type", Message: "must not be null; leave the field out instead"})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Field < fields[j].Field })
	return newProblem(http.StatusBadRequest, "validation_failed", "A field is null.", fields...)
}

// requireJSON refuses bodies that do not say they are JSON (415), and
// those that say two things: with two Content-Type headers, which one
// counts would depend on who reads it (a filter in front may take the
// last), as with two Authorization headers.
func requireJSON(r *http.Request) error {
	if len(r.Header.Values("Content-Type")) > 1 {
		p := newProblem(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"The request has more than one Content-Type header; send one Content-Type: application/json.")
		p.header = http.Header{"Accept": {"application/json"}}
		return p
	}
	ct := r.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ct)
	if charset, ok := params["charset"]; ok && err == nil && !strings.EqualFold(charset, "utf-8") {
		p := newProblem(http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("JSON bodies must be UTF-8, not %q.", charset))
		p.header = http.Header{"Accept": {"application/json; charset=utf-8"}}
		return p
	}
	if ct == "" || err != nil || (mediaType != "application/json" && !strings.HasSuffix(mediaType, "+json")) {
		p := newProblem(http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("Content-Type must be application/json, not %q.", ct))
		p.header = http.Header{"Accept": {"application/json"}}
		return p
	}
	return nil
}

// decodeProblem explains a json.Decoder error.
func decodeProblem(err error) *Problem {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		maxErr    *http.MaxBytesError
	)
	switch {
	case errors.As(err, &maxErr):
		return newProblem(http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Sprintf("The body is larger than %d bytes.", maxErr.Limit))
	case errors.Is(err, io.EOF):
		return newProblem(http.StatusBadRequest, "malformed_json", "The body is empty; a JSON object is required.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newProblem(http.StatusBadRequest, "malformed_json", "The body ends in the middle of a JSON value.")
	case errors.As(err, &syntaxErr):
		return newProblem(http.StatusBadRequest, "malformed_json",
			fmt.Sprintf("The body is not valid JSON at byte %d: %s.", syntaxErr.Offset, syntaxErr.Error()))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return newProblem(http.StatusBadRequest, "malformed_json", "The body must be a JSON object.")
		}
		if typeErr.Type == requestTimeType {
			return newProblem(http.StatusBadRequest, "validation_failed", "A time is not an RFC 3339 time.",
				ProblemField{Field: typeErr.Field, Code: "format",
					Message: "must be an RFC 3339 time, such as 2026-12-01T00:00:00Z; got " + typeErr.Value})
		}
		return newProblem(http.StatusBadRequest, "validation_failed", "A field has the wrong type.",
			ProblemField{Field: typeErr.Field, Code: "wrong_type",
				Message: fmt.Sprintf("must be %s, not %s", jsonKind(typeErr.Type), typeErr.Value)})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return newProblem(http.StatusBadRequest, "unknown_field", fmt.Sprintf("The field %q is not part of this request.", field),
			ProblemField{Field: field, Code: "unknown", Message: "is not a field of this request"})
	default:
		return newProblem(http.StatusBadRequest, "malformed_json", "The body could not be read as JSON.")
	}
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return "an object"
	}
}

var (
	validateOnce sync.Once
	validate     *validator.Validate
)

// theValidator is the one validator instance; its errors use JSON names.
func theValidator() *validator.Validate {
	validateOnce.Do(func() {
		validate = validator.New(validator.WithRequiredStructEnabled())
		validate.RegisterTagNameFunc(func(f reflect.StructField) string {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				return ""
			}
			return name
		})
		_ = validate.RegisterValidation("length", lengthWithin) // a fixed, valid tag: never fails
	})
	return validate
}

// lengthWithin is the `length=min-max` rule: min to max characters. One
// tag, so that a value too short and one too long get the same code.
func lengthWithin(fl validator.FieldLevel) bool {
	lo, hi, _ := strings.Cut(fl.Param(), "-")
	minN, err1 := strconv.Atoi(lo)
	maxN, err2 := strconv.Atoi(hi)
	n := utf8.RuneCountInString(fl.Field().String())
	return err1 == nil && err2 == nil && n >= minN && n <= maxN
}

// validateStruct checks v's `validate` tags and reports every failing field.
func validateStruct(v any) error {
	err := theValidator().Struct(v)
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	fields := make([]ProblemField, len(verrs))
	for i, fe := range verrs {
		fields[i] = ProblemField{Field: fieldPath(fe), Code: fe.Tag(), Message: fieldMessage(fe)}
	}
	return newProblem(http.StatusBadRequest, "validation_failed", "Some fields are not valid.", fields...)
}

// fieldPath is the JSON path of the field without the top struct's name.
func fieldPath(fe validator.FieldError) string {
	ns := fe.Namespace()
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return fe.Field()
}

// fieldMessage says in words what a validation tag wants.
func fieldMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "min":
		return "must be at least " + fe.Param() + unit(fe)
	case "max":
		return "must be at most " + fe.Param() + unit(fe)
	case "length":
		return "must be " + fe.Param() + " characters long"
	case "email":
		return "must be an email address"
	case "oneof":
		return "must be one of: " + fe.Param()
	default:
		return "fails the " + fe.Tag() + " rule"
	}
}

// unit is what a min or max counts for the field's kind.
func unit(fe validator.FieldError) string {
	switch fe.Kind() {
	case reflect.String:
		return " characters long"
	case reflect.Slice, reflect.Array, reflect.Map:
		return " items long"
	default:
		return ""
	}
}
