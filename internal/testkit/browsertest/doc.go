// Package browsertest drives a real headless chromium from tests, for the
// dashboard's page: Debian's chromium found on PATH (never downloaded),
// one tab per Page, the page's console errors collected (CSP violations
// show there), bounded waits on DOM conditions, screenshots.
//
// Guaranteed: Open skips the test, saying how to install chromium, when
// none is found; the browser is closed by the test's cleanup. Screenshots
// go to the test's temporary directory, and also to the file named by
// LOCKWORKER_SCREENSHOT when it is set (for docs/dashboard.md).
//
// Not guaranteed: anything about timing beyond the bounds a test gives.
package browsertest
