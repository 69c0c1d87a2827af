// Package deploy holds the compose files beyond the main docker-compose.yml
// (docker-compose.redlock.yml: three independent Redis masters), the
// stand-in recipe (standin-images.sh: the images the compose files run,
// built with no registry from what the machine has), and the tests that
// check every way of running lockworker without a Docker engine: the
// compose files' structure and hardening, that the variables they set,
// .env.example and internal/config agree exactly, that the Dockerfile
// builds the way the Makefile does, on bases that are build arguments
// defaulting to the official images, with a prebuilt stage that the legacy
// builder reaches without the Go image, and that this build is a static
// binary.
//
// What these tests do not show: that an image builds or a stack starts.
// deploy/e2e (make compose-e2e) does, in a real Docker engine.
package deploy
