package machine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDescribeChart(t *testing.T) {
	d := Describe()
	if d.Initial != Idle.String() {
		t.Errorf("Initial = %q, want %q", d.Initial, Idle)
	}
	var names []string
	for _, s := range d.States {
		names = append(names, s.Name)
	}
	var want []string
	for _, s := range States() {
		want = append(want, s.String())
	}
	if !slices.Equal(names, want) {
		t.Errorf("states %v, want the chart's %v", names, want)
	}
	var lines []string
	for _, tr := range d.Transitions {
		lines = append(lines, tr.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"idle -> acquiring_lock on TRY_ACQUIRE_LOCK (transition)",
		"acquiring_lock -> working on LOCK_ACQUIRED (transition) / startWork",
		"waiting_to_acquire_lock -> acquiring_lock on RELEASE_NOTICE (transition)",
		"waiting_to_acquire_lock -> acquiring_lock on RETRY_TIMER (transition)",
		"working -> cleanup on STOP (transition)",
		"cleanup -> cleanup on STOP (ignored)",
		"releasing_lock -> idle on LOCK_RELEASED (transition)",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("transition %q missing from:\n%s", want, got)
		}
	}
	if slices.Contains(lines, "cleanup -> cleanup on STOP (transition)") || slices.Contains(lines, "releasing_lock -> cleanup on STOP (transition)") {
		t.Errorf("a stopping state leaves to cleanup on STOP:\n%s", got)
	}
	for _, s := range d.States {
		if s.Name == AcquiringLock.String() && !slices.Equal(s.Entry, []string{"acquire"}) {
			t.Errorf("acquiring_lock entry = %v, want [acquire]", s.Entry)
		}
		if s.Name == Working.String() && !slices.Equal(s.Entry, []string{"armRenewTimer"}) {
			t.Errorf("working entry = %v, want [armRenewTimer] (startWork only on LOCK_ACQUIRED)", s.Entry)
		}
	}
	for _, tr := range d.Transitions {
		if tr.From == ReleasingLock.String() && tr.Trigger == LockReleased.String() && len(tr.Guards) != 1 {
			t.Errorf("%v: guards %v, want one", tr, tr.Guards)
		}
	}
}

// TestDescriptionMatchesDOT: the Description (and so the Mermaid graph
// and the page's chart) says exactly what stateless was configured with:
// every node and edge line of stateless's own DOT is the one the
// Description implies, and there is no other.
func TestDescriptionMatchesDOT(t *testing.T) {
	dot, err := Chart(FormatDOT)
	if err != nil {
		t.Fatal(err)
	}
	d := Describe()
	var want []string
	for _, s := range d.States {
		label := s.Name
		for i, a := range s.Entry {
			sep := `\n`
			if i == 0 {
				sep = "|"
			}
			label += sep + "entry / " + a
		}
		want = append(want, "\t"+s.Name+` [label="`+label+`"];`)
	}
	type pair struct{ from, to string }
	var pairs []pair
	moves, ignored := map[pair][]TransitionInfo{}, map[pair][]TransitionInfo{}
	for _, tr := range d.Transitions {
		p := pair{tr.From, tr.To}
		if !slices.Contains(pairs, p) {
			pairs = append(pairs, p)
		}
		if tr.Kind == KindIgnored {
			ignored[p] = append(ignored[p], tr)
		} else {
			moves[p] = append(moves[p], tr)
		}
	}
	byTrigger := func(x, y TransitionInfo) int { return strings.Compare(x.Trigger, y.Trigger) }
	rows := func(ts []TransitionInfo) string {
		slices.SortStableFunc(ts, byTrigger)
		var b strings.Builder
		for _, tr := range ts {
			b.WriteString(`<TR><TD ALIGN="LEFT">` + tr.label() + `</TD></TR>`)
		}
		return b.String()
	}
	for _, p := range pairs {
		label := rows(moves[p])
		if len(ignored[p]) > 0 {
			label += `<TR><TD><B>Ignored</B></TD></TR>` + rows(ignored[p])
		}
		want = append(want, "\t"+p.from+" -> "+p.to+` [label=<<TABLE BORDER="0">`+label+`</TABLE>>];`)
	}
	want = append(want, "\tinit -> "+d.Initial)

	var got []string
	for line := range strings.SplitSeq(dot, "\n") {
		if strings.Contains(line, " [label=") && !strings.HasPrefix(line, "\tinit ") || strings.Contains(line, " -> ") {
			got = append(got, line)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("stateless's DOT lacks the line the Description implies:\n%s\nDOT:\n%s", w, dot)
		}
	}
	if len(got) != len(want) {
		t.Errorf("stateless's DOT has %d node and edge lines, the Description implies %d:\n%s", len(got), len(want), dot)
	}
}

// TestRoutine: the steps of the two loops, and only those, are routine.
func TestRoutine(t *testing.T) {
	want := map[[2]int]bool{
		{int(AcquiringLock), int(AcquireFailed)}:        true,
		{int(WaitingToAcquireLock), int(RetryTimer)}:    true,
		{int(Working), int(RenewTimer)}:                 true,
		{int(RenewLock), int(LockRenewed)}:              true,
		{int(WaitingToAcquireLock), int(ReleaseNotice)}: false,
	}
	for _, s := range States() {
		for tr := range Trigger(len(triggerNames)) {
			if got := Routine(s, tr); got != want[[2]int{int(s), int(tr)}] {
				t.Errorf("Routine(%v, %v) = %v", s, tr, got)
			}
		}
	}
}

// TestKindNames: a Kind prints and marshals as its name, so the
// description's JSON says "transition" or "ignored".
func TestKindNames(t *testing.T) {
	b, err := json.Marshal(TransitionInfo{From: "a", To: "a", Trigger: "T", Kind: KindIgnored})
	if err != nil || !strings.Contains(string(b), `"kind":"ignored"`) {
		t.Fatalf("JSON %s (%v)", b, err)
	}
	if KindTransition.String() != "transition" || Kind(9).String() != "Kind(9)" {
		t.Fatalf("names %q, %q", KindTransition, Kind(9))
	}
}
