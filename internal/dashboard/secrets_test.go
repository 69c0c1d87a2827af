package dashboard

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/redact"
)

const (
	redisPassword = "hunter2-s3cret-pw"
	bearerValue   = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.c2ln"
)

// secretText is what a careless error message could carry.
func secretText() string {
	return "dial redis://default:" + redisPassword + "@10.0.0.5:6379 failed; Authorization: Bearer " + bearerValue +
		"; password=" + redisPassword + "; admin token " + testAdminToken
}

// fillStrings sets every string the value holds, in every nested struct
// and slice element, to s.
func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			fillStrings(v.Index(i), s)
		}
	}
}

// TestNoSecretInOutput feeds a secret-laden text into every string field
// a Snapshot has (and into an action's error) and reads everything the
// dashboard sends: none of the secrets comes out.
func TestNoSecretInOutput(t *testing.T) {
	snap := sampleSnapshot(time.Now())
	fillStrings(reflect.ValueOf(&snap).Elem(), secretText())
	src := newFakeSource(snap)
	acts := newFakeActions()
	acts.err = errors.New(secretText())
	d, err := New(Config{Source: src, Actions: acts, AdminToken: testAdminToken, Secrets: []string{redisPassword}})
	if err != nil {
		t.Fatal(err)
	}
	h := d.Handler()
	outputs := map[string]string{}
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/assets/favicon.svg", "/chart.svg", "/api/chart", "/api/info", "/api/snapshot"} {
		outputs["GET "+path] = do(h, "GET", path, "").Body.String()
	}
	outputs["GET /api/snapshot as admin"] = do(h, "GET", "/api/snapshot", testAdminToken).Body.String()
	for _, path := range []string{"/api/stepdown", "/api/queue/pause", "/api/deadletters/x/requeue"} {
		outputs["POST "+path] = do(h, "POST", path, testAdminToken).Body.String()
	}
	url, _, _ := served(t, d)
	s := openStream(t, boundedCtx(t), url)
	outputs["first event"] = s.next(t).data
	src.set(func(s *Snapshot) { s.Epoch++ })
	outputs["pushed event"] = s.next(t).data

	for name, out := range outputs {
		for _, secret := range []string{redisPassword, bearerValue, testAdminToken} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows %q:\n%s", name, secret, out)
			}
		}
	}
	// The redaction is aimed: what is not secret stays readable.
	var got Snapshot
	if err := json.Unmarshal([]byte(outputs["GET /api/snapshot as admin"]), &got); err != nil {
		t.Fatal(err)
	}
	if e := got.Replicas[0].LastError; !strings.Contains(e, "redis://default:"+redact.Mark+"@10.0.0.5:6379") || !strings.Contains(e, "Bearer "+redact.Mark) {
		t.Errorf("lastError redacted to %q", e)
	}
}

// TestSnapshotHasNoSecretFields: the types sent to browsers have no field
// that could hold a URL, a password, a lock value or the admin token; a
// "token" is only ever the fencing token, a number.
func TestSnapshotHasNoSecretFields(t *testing.T) {
	forbidden := []string{"url", "uri", "dsn", "addr", "password", "passwd", "secret", "credential", "value", "admin", "auth", "key"}
	// A schedule's Key is the ordering key of its ticks' jobs (what
	// Lockworker-Key names), never a credential; it still passes through
	// redaction like every string.
	// Nor is a parked key's Key: the parked keys' table names them so an
	// operator can act on them (their errors are the admin's).
	allowed := map[string]bool{"Snapshot.Schedules.Key": true, "Snapshot.Queue.Parked": true, "Snapshot.Queue.Parked.Key": true}
	seen := map[reflect.Type]bool{}
	var check func(reflect.Type, string)
	check = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ == reflect.TypeOf(time.Time{}) {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := strings.ToLower(f.Name + " " + f.Tag.Get("json"))
			for _, bad := range forbidden {
				if allowed[path+"."+f.Name] {
					break
				}
				if strings.Contains(name, bad) {
					t.Errorf("%s.%s (json %q) looks like it could hold a secret", path, f.Name, f.Tag.Get("json"))
				}
			}
			if strings.Contains(name, "token") && f.Type.Kind() != reflect.Int64 {
				t.Errorf("%s.%s is a %v token: only the fencing token (int64) may be sent", path, f.Name, f.Type)
			}
			check(f.Type, path+"."+f.Name)
		}
	}
	check(reflect.TypeOf(Snapshot{}), "Snapshot")
	if len(seen) < 6 {
		t.Errorf("walked only %d types; the walk is broken", len(seen))
	}
}
