// Package chartsvg draws lockworker's state chart: a machine.Description
// in, a laid-out Chart (boxes, arrows, labels) and its SVG out. The
// dashboard serves both; nothing here knows the page.
//
// It guarantees:
//   - every state gets a box and every trigger the description lists is
//     drawn exactly once: on an arrow, in a bundle (one trigger from many
//     states to one, drawn as a box around its sources with one arrow out),
//     or in the list of ignored triggers;
//   - the drawing depends only on the description: the same chart gives
//     the same bytes, so a golden file holds it;
//   - the SVG carries its look as presentation attributes, with no script
//     and no <style>, and data-state, data-from, data-to and data-trigger
//     attributes a page can mark the current state and the last
//     transitions by.
//
// It does not guarantee a drawing free of crossings for any chart: the
// layout is tuned for charts of lockworker's size and shape (a handful of
// states, one bundle), and a test holds lockworker's own chart to it.
package chartsvg
