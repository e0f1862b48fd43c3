#!/bin/sh
# Writes the files deploy/k8s/kustomization.yaml's generators read into deploy/k8s/secrets/
# (kept out of git): a CA (ca.crt; keep ca.key offline once the farm runs), the servers' TLS
# certificate signed by it (tls.crt, tls.key) for every name workers and clients dial plus
# localhost (the probes), and a random PostgreSQL password (postgres.env). Files already there
# are kept, so running it again changes nothing.
#   deploy/k8s/make-secrets.sh [NAMESPACE [EXTRA_DNS_NAME...]]
# NAMESPACE: the kustomization's namespace (default gtco); EXTRA_DNS_NAME: names the servers are
# reached by from outside the cluster. GTCO_SECRETS_DIR overrides the output directory.
set -eu
dir=${GTCO_SECRETS_DIR:-$(dirname "$0")/secrets}
namespace=${1:-gtco}
[ $# -gt 0 ] && shift
names=DNS:localhost
for host in gtco-server gtco-server-0.gtco-server gtco-server-1.gtco-server; do
  for suffix in "" ".$namespace" ".$namespace.svc" ".$namespace.svc.cluster.local"; do
    names="$names,DNS:$host$suffix"
  done
done
for extra in "$@"; do names="$names,DNS:$extra"; done

umask 077
mkdir -p "$dir"
if [ ! -f "$dir/ca.crt" ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -sha256 -days 3650 -subj "/CN=GTCO farm CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  echo "wrote $dir/ca.crt and $dir/ca.key"
fi
if [ ! -f "$dir/tls.crt" ]; then
  openssl req -newkey rsa:3072 -nodes -sha256 -subj "/CN=gtco-server" -keyout "$dir/tls.key" \
    -out "$dir/tls.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$names" >"$dir/tls.ext"
  openssl x509 -req -sha256 -days 825 -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$dir/tls.ext" -out "$dir/tls.crt" 2>/dev/null
  rm -f "$dir/tls.csr" "$dir/tls.ext"
  echo "wrote $dir/tls.crt and $dir/tls.key"
fi
if [ ! -f "$dir/postgres.env" ]; then
  printf 'password=%s\n' "$(openssl rand -hex 24)" >"$dir/postgres.env"
  echo "wrote $dir/postgres.env"
fi
