#!/usr/bin/env bash
# standin-images.sh: build, with no registry, the images the compose files
# run, from what this machine has:
#
#   lockworker:local  the Dockerfile's "prebuilt" stage: the binary built
#                     here by `make build` (the Makefile's flags) on a
#                     stand-in for gcr.io/distroless/static-debian12:nonroot
#                     (CA certificates, /etc/passwd with nonroot 65532,
#                     /tmp, /home/nonroot; nothing else: no shell)
#   redis:7-alpine    this machine's redis-server and redis-cli with their
#                     libraries, /bin/sh for the entrypoint, user redis
#                     (999), /data; kept as it is when the engine already
#                     has a real redis:7-alpine
#
# Then run the compose files as shipped, without building:
#
#   deploy/standin-images.sh
#   docker-compose up --no-build --scale worker=3
#
# Needs docker, make, go (with the module cache or a module proxy),
# redis-server and redis-cli (on PATH or bin/: make redis-server), ldd
# and GNU tar. CA_BUNDLE names the machine's CA certificates (default
# Debian's /etc/ssl/certs/ca-certificates.crt). Every stand-in image
# carries the label org.lockworker.standin=true.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# As the Makefile: bin/ first, where make links bin/redis-server.
export PATH="$root/bin:$PATH"
runtime_image=lockworker/standin-distroless-static:nonroot
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

label=org.lockworker.standin=true

# build TAG DOCKER-BUILD-ARGUMENTS...: docker build, tagged TAG and
# labelled; the image TAG named before is removed when nothing uses it, so
# rebuilds leave no untagged images behind.
build() {
	local tag=$1 old new
	shift
	old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	docker build -q --label "$label" -t "$tag" "$@" >/dev/null
	new=$(docker image inspect -f '{{.Id}}' "$tag")
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker image rm "$old" >/dev/null 2>&1 || true
	fi
}

# build_from_tar TAG TARBALL [INSTRUCTION...]: an image FROM scratch holding
# the tarball's files (with its owners and modes) and the instructions.
build_from_tar() {
	local tag=$1 tarball=$2
	shift 2
	local ctx=$work/ctx-${tag//[:\/]/-}
	mkdir -p "$ctx"
	mv "$tarball" "$ctx/rootfs.tar"
	{
		echo "FROM scratch"
		echo "ADD rootfs.tar /"
		printf '%s\n' "$@"
	} >"$ctx/Dockerfile"
	build "$tag" "$ctx"
}

# add TARBALL OWNER DIR PATH...: append DIR/PATH... to the tarball, owned
# by OWNER (uid:gid), modes as they are on disk, and a fixed time, so the
# same files make the same tarball and the engine's build cache holds.
add() {
	local tarball=$1 owner=$2 dir=$3
	shift 3
	tar -C "$dir" -rf "$tarball" --numeric-owner --owner="${owner%:*}" --group="${owner#*:}" \
		--mtime=@0 --no-recursion "$@"
}

# with_libs FILE...: the files and every shared library they load (ldd),
# the dynamic loader included, as absolute paths.
with_libs() {
	printf '%s\n' "$@"
	ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }'
}

# copy_into DIR FILE...: each file to the same path under DIR, symlinks
# resolved, so the loader finds the libraries where ldd saw them.
copy_into() {
	local dir=$1 f
	shift
	for f in "$@"; do
		mkdir -p "$dir$(dirname "$f")"
		cp -L "$f" "$dir$f"
	done
}

runtime_base() {
	local fs=$work/runtime tarball=$work/runtime.tar
	mkdir -p "$fs/etc/ssl/certs" "$fs/tmp" "$fs/home/nonroot"
	cat >"$fs/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/sbin/nologin
		nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
		nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
	EOF
	cat >"$fs/etc/group" <<-'EOF'
		root:x:0:
		nobody:x:65534:
		nonroot:x:65532:
	EOF
	echo "hosts: files dns" >"$fs/etc/nsswitch.conf"
	cp -L "${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$fs/etc/ssl/certs/ca-certificates.crt"
	chmod 0755 "$fs/etc" "$fs/etc/ssl" "$fs/etc/ssl/certs" "$fs/home"
	chmod 0644 "$fs/etc/passwd" "$fs/etc/group" "$fs/etc/nsswitch.conf" "$fs/etc/ssl/certs/ca-certificates.crt"
	chmod 1777 "$fs/tmp"
	chmod 0700 "$fs/home/nonroot"
	add "$tarball" 0:0 "$fs" etc etc/passwd etc/group etc/nsswitch.conf etc/ssl etc/ssl/certs \
		etc/ssl/certs/ca-certificates.crt tmp home
	add "$tarball" 65532:65532 "$fs" home/nonroot
	build_from_tar "$runtime_image" "$tarball"
	echo "built $runtime_image (stand-in for gcr.io/distroless/static-debian12:nonroot)"
}

lockworker_image() {
	local ctx=$work/lockworker
	mkdir -p "$ctx"
	make -s -C "$root" build BIN="$ctx/lockworker"
	# The stage copies the whole context: nothing but the binary.
	echo ".dockerignore" >"$ctx/.dockerignore"
	build lockworker:local --target prebuilt --build-arg RUNTIME_IMAGE="$runtime_image" \
		-f "$root/Dockerfile" "$ctx"
	echo "built lockworker:local (Dockerfile --target prebuilt, binary from make build)"
}

redis_image() {
	local tag=redis:7-alpine
	if docker image inspect "$tag" >/dev/null 2>&1 &&
		[ -z "$(docker image inspect -f "{{index .Config.Labels \"${label%=*}\"}}" "$tag")" ]; then
		echo "kept $tag: the engine has the real one"
		return
	fi
	local fs=$work/redis tarball=$work/redis.tar
	local server cli sh tool
	for tool in redis-server redis-cli; do
		if ! command -v "$tool" >/dev/null; then
			echo "standin-images.sh: no $tool on PATH or in bin/; make redis-server installs Debian's redis-tools and links bin/redis-server" >&2
			exit 1
		fi
	done
	server=$(command -v redis-server) cli=$(command -v redis-cli) sh=$(readlink -f /bin/sh)
	mapfile -t files < <(with_libs "$server" "$cli" "$sh" | sort -u)
	copy_into "$fs" "${files[@]}"
	mkdir -p "$fs/usr/local/bin" "$fs/bin" "$fs/etc" "$fs/data"
	# Where the image wants them, unless they are there already (a Redis
	# installed under /usr/local/bin).
	[ "$server" = /usr/local/bin/redis-server ] || mv "$fs$server" "$fs/usr/local/bin/redis-server"
	[ "$cli" = /usr/local/bin/redis-cli ] || mv "$fs$cli" "$fs/usr/local/bin/redis-cli"
	[ "$sh" = /bin/sh ] || mv "$fs$sh" "$fs/bin/sh"
	# As the official image: the compose network is the boundary, so no
	# protected mode (the official image patches its default to "no").
	cat >"$fs/usr/local/bin/docker-entrypoint.sh" <<-'EOF'
		#!/bin/sh
		set -e
		if [ "$1" = redis-server ]; then
			set -- "$@" --protected-mode no
		fi
		exec "$@"
	EOF
	chmod 0755 "$fs/usr/local/bin/docker-entrypoint.sh"
	echo "root:x:0:0:root:/root:/sbin/nologin" >"$fs/etc/passwd"
	echo "redis:x:999:1000:redis:/data:/sbin/nologin" >>"$fs/etc/passwd"
	printf 'root:x:0:\nredis:x:1000:\n' >"$fs/etc/group"
	chmod -R a+rX "$fs"
	chmod 0755 "$fs/data"
	(cd "$fs" && find . -path ./data -prune -o -print | sed 's|^\./||' | grep -v '^\.$' | sort) >"$work/redis.list"
	add "$tarball" 0:0 "$fs" -T "$work/redis.list"
	add "$tarball" 999:1000 "$fs" data
	build_from_tar "$tag" "$tarball" \
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"USER 999:1000" "WORKDIR /data" "VOLUME /data" "EXPOSE 6379" \
		'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["redis-server"]'
	echo "built $tag (stand-in: $("$server" --version | cut -d' ' -f3) from $server)"
}

runtime_base
lockworker_image
redis_image
