package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// unreadable turns caarlos0/env's errors, which name Go fields and quote
// strconv ("strconv.ParseInt: parsing \"abc\": invalid syntax"), into one
// *Error per variable, in words: PORT: "abc" is not a port number. vars
// are the values read; a secret's value is never repeated.
func unreadable(err error, vars map[string]string) problems {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return nil
	}
	var p problems
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			return nil // not a value that cannot be read: Load reports it as it is
		}
		f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name)
		if !ok {
			return nil
		}
		name := varName(f)
		p = append(p, &Error{Var: name, Msg: unreadMsg(f, vars[name], pe.Err)})
	}
	return p
}

// unreadMsg says why value cannot be field f's.
func unreadMsg(f reflect.StructField, value string, err error) string {
	if _, ok := reflect.New(f.Type).Interface().(encoding.TextUnmarshaler); ok {
		return err.Error() // our own types say it in words
	}
	what := f.Tag.Get("what")
	switch k := f.Type.Kind(); {
	case what != "":
	case f.Type == reflect.TypeFor[time.Duration]():
		what = "a duration such as 5s or 500ms"
	case k >= reflect.Int && k <= reflect.Uint64:
		what = "a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		what = "a number"
	case k == reflect.Bool:
		what = "true or false"
	default:
		what = "valid"
	}
	if f.Tag.Get("secret") != "" {
		return "is not " + what
	}
	return fmt.Sprintf("%q is not %s", value, what)
}

// defaultsFor sets each setting that could not be read to its default,
// so that the others are checked against a value that makes sense.
func (c *Config) defaultsFor(unread problems) {
	var d Config
	_ = env.ParseWithOptions(&d, env.Options{Environment: map[string]string{}})
	cv, dv := reflect.ValueOf(c).Elem(), reflect.ValueOf(d)
	rt := reflect.TypeFor[Config]()
	for i := range rt.NumField() {
		if unread.names(varName(rt.Field(i))) {
			cv.Field(i).Set(dv.Field(i))
		}
	}
}

// names reports whether one of p's errors is about variable name.
func (p problems) names(name string) bool {
	return slices.ContainsFunc(p, func(e error) bool {
		var ce *Error
		return errors.As(e, &ce) && ce.Var == name
	})
}

// without is p less its errors about the variables that unread names:
// what their defaults broke is no news.
func without(p, unread problems) problems {
	return slices.DeleteFunc(p, func(e error) bool {
		var ce *Error
		return errors.As(e, &ce) && unread.names(ce.Var)
	})
}

// sort orders p as the variables are declared (the README's table).
func (p problems) sort() {
	order := map[string]int{}
	rt := reflect.TypeFor[Config]()
	for i := range rt.NumField() {
		order[varName(rt.Field(i))] = i
	}
	slices.SortStableFunc(p, func(a, b error) int {
		var ea, eb *Error
		errors.As(a, &ea)
		errors.As(b, &eb)
		if ea == nil || eb == nil {
			return 0
		}
		return order[ea.Var] - order[eb.Var]
	})
}

// varName is the variable a Config field is read from.
func varName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
	return name
}
