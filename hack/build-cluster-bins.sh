#!/usr/bin/env bash
# Builds bin/kube-apiserver (k8s.io/kubernetes v1.36.3) and bin/etcd
# (go.etcd.io/etcd/server/v3 v3.6.5) at the repo root from the pinned modules
# in e2e/tools and e2e/tools/etcd. Needs only Go and a reachable module proxy.
#
# A binary is rebuilt only when it is missing or its stamp file no longer
# matches the pinned module files (go.mod/go.sum hash + Go version), so a
# second run is a no-op. FORCE=1 rebuilds anyway.
#
# Usage: hack/build-cluster-bins.sh [kube-apiserver|etcd]...   (default: both)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bindir="${root}/bin"
mkdir -p "${bindir}"

kube_version="v1.36.3"
etcd_version="v3.6.5"

stamp_of() { # moddir
	{
		go env GOVERSION GOOS GOARCH
		cat "$1/go.mod" "$1/go.sum"
	} | sha256sum | cut -d' ' -f1
}

up_to_date() { # binary stampvalue
	[[ -x "${bindir}/$1" && -f "${bindir}/.$1.stamp" && "$(cat "${bindir}/.$1.stamp")" == "$2" && -z "${FORCE:-}" ]]
}

build() { # name moddir pkg ldflags
	local name="$1" moddir="$2" pkg="$3" ldflags="$4" stamp
	stamp="$(stamp_of "${moddir}")"
	if up_to_date "${name}" "${stamp}"; then
		echo "${name}: up to date (${bindir}/${name})"
		return
	fi
	echo "${name}: building ${pkg} (this takes a while the first time)"
	local start=$SECONDS
	rm -f "${bindir}/.${name}.stamp"
	# -mod=mod lets a fresh machine fill go.sum gaps from the proxy; the
	# versions themselves are fixed by go.mod (require + replace).
	(cd "${moddir}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w ${ldflags}" -o "${bindir}/${name}.tmp" "${pkg}")
	mv "${bindir}/${name}.tmp" "${bindir}/${name}"
	echo "${stamp}" >"${bindir}/.${name}.stamp"
	echo "${name}: built in $((SECONDS - start))s"
}

kube_ldflags="-X k8s.io/component-base/version.gitVersion=${kube_version}"
kube_ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
kube_ldflags+=" -X k8s.io/component-base/version.gitMinor=36"
kube_ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(etcd kube-apiserver)
for t in "${targets[@]}"; do
	case "$t" in
	kube-apiserver) build kube-apiserver "${root}/e2e/tools" k8s.io/kubernetes/cmd/kube-apiserver "${kube_ldflags}" ;;
	etcd) build etcd "${root}/e2e/tools/etcd" go.etcd.io/etcd/server/v3 "" ;;
	*) echo "unknown target $t" >&2; exit 2 ;;
	esac
done
