package chartsvg

// The picture, placed by hand in SVG units (Y down), by the names the
// machine's description uses: the followers' wait on top, the loop from
// idle to the leader's renewals in the middle, the way out below the box
// STOP leaves. TestChartClean fails where text or arrows collide,
// TestChartIsTheMachine where this table and the machine differ.
const (
	width, height  = 972, 342
	nodeH          = 46
	x0, x1, x2, x3 = 120, 370, 630, 880 // column centres
	xStop          = 494                // between acquiring_lock and working
	y0, y1, y2     = 53, 163, 303       // row centres
	yMid, yLow     = 108, 233           // between the rows
)

// place is a state's box: its centre and width.
type place struct{ x, y, w float64 }

var places = map[string]place{
	"waiting_to_acquire_lock": {x1, y0, 194},
	"pause_work":              {x3, y0, 124},
	"idle":                    {x0, y1, 84},
	"acquiring_lock":          {x1, y1, 130},
	"working":                 {x2, y1, 154},
	"renew_lock":              {x3, y1, 106},
	"releasing_lock":          {x0, y2, 130},
	"cleanup":                 {xStop, y2, 124},
}

// route is an arrow: a polyline between two boxes' borders, and its
// label's centre.
type route struct {
	line  []pt
	label pt
}

type pt struct{ x, y float64 }

// start is the arrow into the initial state, idle.
var start = []pt{{48, y1}, {78, y1}}

// routes are the arrows by the states they join. Two arrows between the
// same states run side by side, labelled outside the pair.
var routes = map[[2]string]route{
	{"idle", "acquiring_lock"}:                    {[]pt{{162, y1}, {305, y1}}, pt{233.5, y1}},
	{"acquiring_lock", "working"}:                 {[]pt{{435, y1}, {553, y1}}, pt{494, y1}},
	{"acquiring_lock", "waiting_to_acquire_lock"}: {[]pt{{x1 + 14, 140}, {x1 + 14, 76}}, pt{x1 + 67, yMid}},
	{"waiting_to_acquire_lock", "acquiring_lock"}: {[]pt{{x1 - 14, 76}, {x1 - 14, 140}}, pt{x1 - 64, yMid}},
	{"working", "renew_lock"}:                     {[]pt{{707, y1 - 8}, {827, y1 - 8}}, pt{767, y1 - 20}},
	{"renew_lock", "working"}:                     {[]pt{{827, y1 + 8}, {707, y1 + 8}}, pt{767, y1 + 20}},
	{"renew_lock", "pause_work"}:                  {[]pt{{x3, 140}, {x3, 76}}, pt{x3 - 47, yMid}},
	{"pause_work", "waiting_to_acquire_lock"}:     {[]pt{{818, y0}, {467, y0}}, pt{642.5, y0}},
	{"working", "cleanup"}:                        {[]pt{{610, 186}, {540, 280}}, pt{575, yLow}},
	{"renew_lock", "cleanup"}:                     {[]pt{{860, 186}, {556, y2}}, pt{708, 244.5}},
	{"cleanup", "releasing_lock"}:                 {[]pt{{432, y2}, {185, y2}}, pt{308.5, y2}},
	{"releasing_lock", "idle"}:                    {[]pt{{x0, 280}, {x0, 186}}, pt{x0 + 47, yLow}},
	{"releasing_lock", "waiting_to_acquire_lock"}: {[]pt{{55, y2}, {24, y2}, {24, y0}, {273, y0}}, pt{150, y0}},
}

// fans are the bundles by trigger and target: a trigger from many states
// to one, drawn as a box around its sources with one arrow out.
var fans = map[[2]string]struct {
	route
	box Rect
}{
	{"STOP", "cleanup"}: {route{[]pt{{xStop, 200}, {xStop, 280}}, pt{xStop - 23, 240}}, Rect{64, 16, 892, 184}},
}
