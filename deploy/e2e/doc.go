// Command e2e (make compose-e2e) runs the compose files as shipped in
// this machine's Docker engine, with real containers, and prints what it
// measured. For each file (docker-compose.yml, then
// deploy/docker-compose.redlock.yml) it brings the stack up with
// `--scale worker=3 --no-build` under a project name of its own, with a
// short LOCK_TTL given through --env-file, and checks:
//
//   - the three workers get healthy and exactly one leads (status --json
//     through `compose exec`, and each worker's last logged transition);
//     every log line of a worker carries its own workerId;
//   - each worker runs as 65532:65532 on a read-only root with no
//     capability and no-new-privileges: as configured (docker inspect) and
//     as the kernel sees its process (/proc, when the engine is local);
//   - with Redlock, stopping one Redis leaves the leader leading through
//     more than LOCK_TTL of renewals;
//   - `docker stop` of the leader: another leads within 1s of SIGTERM and
//     the stopped one exits 0;
//   - `docker kill -s KILL` of the next leader: another leads, never before
//     the killed one's lease could have ended;
//   - jobs enqueued with `compose exec worker /lockworker enqueue` before,
//     between and after those changes are all committed, and their
//     deliveries (the log handler's lines, merged across containers by
//     time) follow the enqueue order under three successive tokens.
//
// Then `down -v --remove-orphans`, on success and on failure, and a check
// that no container, network or volume of the project is left.
//
// Times are taken as handoverbench takes them with local processes: from
// the moment the signal was sent (here the engine's kill event) to the
// "time" of the new leader's to=working log line; the engine, the
// containers and this command share one clock.
//
// Images: deploy/standin-images.sh builds them from this machine (no
// registry needed) unless the official bases can be pulled (-images).
//
// What it does not show: more than one sample per figure (it is a check,
// not a benchmark; make bench measures distributions with local
// processes); a Redis restart without its data; the official images,
// where no registry answers.
package main
