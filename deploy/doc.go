// Package deploy holds the compose files beyond the main docker-compose.yml
// (docker-compose.redlock.yml: three independent Redis masters) and the
// tests that check every way of running lockworker without a Docker engine:
// the compose files' structure and hardening, that the variables they set,
// .env.example and internal/config agree exactly, that the Dockerfile
// builds the way the Makefile does, and that this build is a static binary.
//
// What the tests do not show: that an image builds or a stack starts; that
// needs a Docker engine (docker compose config -q, docker compose up).
package deploy
