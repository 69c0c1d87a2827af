// Package chartsvg draws lockworker's state chart: a machine.Description
// in, the Chart placed by a table drawn by hand for it (table.go) and its
// SVG out. The dashboard serves both; nothing here knows the page.
//
// It guarantees that every state gets a box and every trigger the
// description lists is drawn once (on an arrow or in a bundle; ignored
// ones not at all), or Layout fails naming what the table lacks; that the
// same description gives the same bytes, so a golden file holds them; and
// that the SVG carries its look as presentation attributes, with no script
// and no <style>, and data-state, data-from, data-to and data-trigger
// attributes a page marks the current state and the last transitions by.
//
// It does not place any other chart: a new state or arrow needs its line
// in the table.
package chartsvg
