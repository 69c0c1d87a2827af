package schedule

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, w When) Times {
	t.Helper()
	ts, err := w.Parse()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestNext(t *testing.T) {
	for _, tt := range []struct {
		when       When
		after, got string
	}{
		{When{Every: time.Minute}, "2026-03-01T10:00:30Z", "2026-03-01T10:01:00Z"},
		{When{Every: time.Minute}, "2026-03-01T10:01:00Z", "2026-03-01T10:02:00Z"}, // strictly after
		{When{Every: time.Hour}, "2026-03-01T10:59:59.999Z", "2026-03-01T11:00:00Z"},
		{When{Every: 1500 * time.Millisecond}, "1970-01-01T00:00:01Z", "1970-01-01T00:00:01.5Z"},
		{When{Cron: "0 2 * * *"}, "2026-03-01T10:00:00Z", "2026-03-02T02:00:00Z"},
		// 02:00 in Paris is 01:00 UTC in winter, 00:00 UTC in summer.
		{When{Cron: "0 2 * * *", TZ: "Europe/Paris"}, "2026-01-10T12:00:00Z", "2026-01-11T01:00:00Z"},
		{When{Cron: "0 2 * * *", TZ: "Europe/Paris"}, "2026-07-10T12:00:00Z", "2026-07-11T00:00:00Z"},
		{When{Cron: "@hourly"}, "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z"},
		{When{Cron: "*/15 * * * *"}, "2026-03-01T10:00:00.5Z", "2026-03-01T10:15:00Z"},
	} {
		got := mustParse(t, tt.when).Next(at(tt.after))
		if !got.Equal(at(tt.got)) {
			t.Errorf("%v: Next(%s) = %s, want %s", tt.when, tt.after, got.Format(time.RFC3339Nano), tt.got)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, w := range []When{
		{},
		{Every: time.Minute, Cron: "* * * * *"},
		{Every: 999 * time.Millisecond},
		{Every: -time.Minute},
		{Every: MaxEvery + time.Hour},
		{Every: time.Second + time.Microsecond},
		{Every: time.Minute, TZ: "UTC"},
		{Cron: "61 * * * *"},
		{Cron: "* * * *"},
		{Cron: "@every 1m"},
		{Cron: "CRON_TZ=Europe/Paris 0 2 * * *"},
		{Cron: "0 2 * * *", TZ: "Mars/Olympus"},
		{Cron: "0 2 * * *", TZ: "Local"},
		{Cron: "0 0 30 2 *"}, // February 30th: never
	} {
		if _, err := w.Parse(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Parse = %v, want an ErrInvalid", w, err)
		}
	}
}

func TestPlan(t *testing.T) {
	minute := When{Every: time.Minute}
	daily := When{Cron: "0 2 * * *", TZ: "Europe/Paris"}
	for _, tt := range []struct {
		name      string
		when      When
		next, now string
		c         CatchUp
		ticks     []string
		then      string
	}{
		{"not due", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:00:59Z", CatchUpOnce, nil, "2026-03-01T10:01:00Z"},
		{"on time", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:01:00.010Z", CatchUpOnce,
			[]string{"2026-03-01T10:01:00Z"}, "2026-03-01T10:02:00Z"},
		{"late within its period: no tick missed", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:01:59Z", CatchUpSkip,
			[]string{"2026-03-01T10:01:00Z"}, "2026-03-01T10:02:00Z"},
		{"missed, caught up once", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:05:10Z", CatchUpOnce,
			[]string{"2026-03-01T10:04:00Z", "2026-03-01T10:05:00Z"}, "2026-03-01T10:06:00Z"},
		{"missed, skipped", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:05:10Z", CatchUpSkip,
			[]string{"2026-03-01T10:05:00Z"}, "2026-03-01T10:06:00Z"},
		{"one missed", minute, "2026-03-01T10:01:00Z", "2026-03-01T10:02:00Z", CatchUpOnce,
			[]string{"2026-03-01T10:01:00Z", "2026-03-01T10:02:00Z"}, "2026-03-01T10:03:00Z"},
		{"cron, a year away", daily, "2025-01-11T01:00:00Z", "2026-01-10T12:00:00Z", CatchUpOnce,
			[]string{"2026-01-09T01:00:00Z", "2026-01-10T01:00:00Z"}, "2026-01-11T01:00:00Z"},
		{"cron, late the same day", daily, "2026-07-11T00:00:00Z", "2026-07-11T09:00:00Z", CatchUpOnce,
			[]string{"2026-07-11T00:00:00Z"}, "2026-07-12T00:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.when).Plan(at(tt.next), at(tt.now), tt.c)
			var got []string
			for _, x := range p.Ticks {
				got = append(got, x.UTC().Format(time.RFC3339Nano))
			}
			if !slices.Equal(got, tt.ticks) || !p.Next.Equal(at(tt.then)) {
				t.Errorf("Plan = %v then %s, want %v then %s", got, p.Next.Format(time.RFC3339), tt.ticks, tt.then)
			}
		})
	}
}

// TestPlanNeverEarly: over many random gaps, Plan's ticks are ticks of
// the schedule, not before next, not after now, in order, at most two,
// and the new next is after now.
func TestPlanNeverEarly(t *testing.T) {
	for _, w := range []When{{Every: 7 * time.Second}, {Cron: "*/5 9-17 * * 1-5", TZ: "America/New_York"}} {
		ts := mustParse(t, w)
		start := at("2026-03-06T20:00:00Z")
		next := ts.Next(start)
		for i := range 300 {
			now := next.Add(time.Duration(i*i) * 37 * time.Second)
			p := ts.Plan(next, now, CatchUpOnce)
			if len(p.Ticks) == 0 || len(p.Ticks) > 2 || !p.Next.After(now) {
				t.Fatalf("%v: Plan(%s, %s) = %+v", w, next, now, p)
			}
			for j, x := range p.Ticks {
				if x.Before(next) || x.After(now) || j > 0 && !x.After(p.Ticks[j-1]) {
					t.Fatalf("%v: Plan(%s, %s) ticks %v", w, next, now, p.Ticks)
				}
				if !ts.Next(x.Add(-time.Millisecond)).Equal(x) {
					t.Fatalf("%v: %s is no tick", w, x)
				}
			}
			next = p.Next
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"nightly-report", "a", "billing.v2:eu_1"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, no := range []string{"", "a b", "a/b", "é", string(make([]byte, MaxName+1))} {
		if err := CheckName(no); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalid", no, err)
		}
	}
}

func TestCatchUp(t *testing.T) {
	for _, c := range []CatchUp{CatchUpOnce, CatchUpSkip} {
		if got, err := ParseCatchUp(c.String()); err != nil || got != c {
			t.Errorf("ParseCatchUp(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseCatchUp("all"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseCatchUp(all) = %v", err)
	}
}

func ExampleTimes_Plan() {
	ts, _ := When{Every: time.Minute}.Parse()
	next := at("2026-03-01T10:01:00Z")
	// No replica could run the schedule from 10:00:30 to 10:05:10.
	p := ts.Plan(next, at("2026-03-01T10:05:10Z"), CatchUpOnce)
	fmt.Println(p.Ticks, p.Next)
	p = ts.Plan(next, at("2026-03-01T10:05:10Z"), CatchUpSkip)
	fmt.Println(p.Ticks, p.Next)
	// Output:
	// [2026-03-01 10:04:00 +0000 UTC 2026-03-01 10:05:00 +0000 UTC] 2026-03-01 10:06:00 +0000 UTC
	// [2026-03-01 10:05:00 +0000 UTC] 2026-03-01 10:06:00 +0000 UTC
}
