#!/usr/bin/env bash
# A private nginx on the loopback for the network tests (a test helper, not
# part of the library). Nothing in /etc or /var is read or written: the
# configuration, pid file, logs and temp folders live in RUNDIR.
#
#   nginx.sh start ROOT RUNDIR [--tls] [--h2c] [--workers N] [--connections N]
#                  [--owner PID] [--s3-listing DIR]
#   nginx.sh stop RUNDIR
#   nginx.sh check          exit 0 when nginx can be run, else 1 with the
#                           reason on stdout
#
# GF_NGINX=PATH names the nginx binary (the tests' skip is tested with a
# path that does not exist).
#
# start serves ROOT read-only (GET and HEAD) at http://127.0.0.1:PORT, with
# Range, keep-alive (a million requests a connection), sendfile and ETag;
# --tls adds https on a second port with a CA and a server certificate made
# at start by openssl (RUNDIR/tls/ca.pem; the certificate names 127.0.0.1
# and localhost); --h2c adds HTTP/2 cleartext (prior knowledge, no
# Upgrade) on a third port. nginx also listens on a unix socket,
# RUNDIR/nginx.sock (or a name in /tmp when that path is too long), which
# is how netproxy reaches it: a second loopback TCP hop costs more CPU than
# nginx itself (docs/TESTING.md). Ports are chosen at random in 20000-32767,
# below the kernel's ephemeral range, so an outgoing connection or a
# listener on port 0 never takes one; a port found taken at bind is
# chosen again. With --owner PID, a watchdog stops nginx when PID exits
# (a test that crashes leaves nothing running).
#
# --s3-listing DIR: a request for a path of one component (/bucket?...,
# an S3 bucket's ListObjectsV2, path-style) is answered with the file
# DIR/bucket.xml (the caller writes it: one page, nginx's own ETags, so
# that If-Match holds); every other request is served from ROOT: a store
# that answers as S3 does for a folder, as fast as nginx (benchmarks).
#
# start prints, and writes to RUNDIR/env, lines a shell can eval:
#   GF_NGINX_URL=http://127.0.0.1:PORT   GF_NGINX_PORT=PORT
#   GF_NGINX_TLS_URL=https://127.0.0.1:P GF_NGINX_TLS_PORT=P  GF_NGINX_CA=FILE
#   GF_NGINX_H2C_URL=http://127.0.0.1:P  GF_NGINX_H2C_PORT=P
#   GF_NGINX_SOCK=PATH (the unix socket)
#   GF_NGINX_ACCESS_LOG=FILE  GF_NGINX_ERROR_LOG=FILE  GF_NGINX_PID=PID
#   GF_NGINX_RUNDIR=RUNDIR
# (the TLS and h2c lines only with their option). The access log has one
# line a request, fields separated by tabs:
#   msec  request-line  range-header  status  body-bytes  bytes-sent
#   connection-serial  request-number-on-connection  request-time
# ("-" for an absent Range header). Exit status of start: 0, or 1 with
# the reason on stderr (nginx's error log is printed with it).
set -u

die() {
  echo "nginx.sh: $*" >&2
  exit 1
}

# $GF_NGINX when set (the only one tried), else nginx on PATH or in
# /usr/sbin.
find_nginx() {
  local n
  if [ -n "${GF_NGINX:-}" ]; then
    [ -x "$GF_NGINX" ] && echo "$GF_NGINX"
    return
  fi
  for n in "$(command -v nginx 2>/dev/null)" /usr/sbin/nginx; do
    if [ -n "$n" ] && [ -x "$n" ]; then
      echo "$n"
      return 0
    fi
  done
  return 1
}

# A port nothing listens on now, in 20000-32767.
pick_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12768))
    # Connection refused: no listener (a connect succeeding means taken).
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

make_tls() {
  local d=$1/tls
  mkdir -p "$d"
  # EC P-256: made in milliseconds (an RSA key takes long on a busy host).
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 \
    -subj "/CN=gpufeed test CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>"$d/openssl.log" ||
    return 1
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$d/server.key" -out "$d/server.csr" -subj "/CN=127.0.0.1" \
    >/dev/null 2>>"$d/openssl.log" || return 1
  printf '%s\n' "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost" >"$d/server.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
    -CAcreateserial -out "$d/server.pem" -days 2 -extfile "$d/server.ext" \
    >/dev/null 2>>"$d/openssl.log" || return 1
}

write_conf() {
  local run=$1 root=$2 port=$3 tport=$4 hport=$5 workers=$6 sock=$7 conns=$8 user="" s3=${9:-}
  # As root, nginx's workers would run as nobody, who may not read ROOT
  # (a folder under /root): they run as the current user instead.
  if [ "$(id -u)" = 0 ]; then
    user="user $(id -un) $(id -gn);"
  fi
  cat >"$run/nginx.conf" <<EOF
# Made by tests/net/nginx.sh; everything it writes is under $run.
daemon on;
master_process on;
$user
worker_processes $workers;
pid $run/nginx.pid;
lock_file $run/nginx.lock;
error_log $run/error.log info;
events {
  worker_connections $conns;
}
http {
  types { }
  default_type application/octet-stream;
  log_format gf '\$msec\t\$request\t\$http_range\t\$status\t\$body_bytes_sent\t\$bytes_sent\t\$connection\t\$connection_requests\t\$request_time';
  access_log $run/access.log gf;
  client_body_temp_path $run/tmp/body;
  proxy_temp_path $run/tmp/proxy;
  fastcgi_temp_path $run/tmp/fastcgi;
  uwsgi_temp_path $run/tmp/uwsgi;
  scgi_temp_path $run/tmp/scgi;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server_tokens off;
  server {
    listen 127.0.0.1:$port;
    listen unix:$sock backlog=4096;
EOF
  if [ "$tport" != 0 ]; then
    cat >>"$run/nginx.conf" <<EOF
    listen 127.0.0.1:$tport ssl;
    ssl_certificate $run/tls/server.pem;
    ssl_certificate_key $run/tls/server.key;
EOF
  fi
  if [ "$hport" != 0 ]; then
    echo "    listen 127.0.0.1:$hport http2;" >>"$run/nginx.conf"
  fi
  cat >>"$run/nginx.conf" <<EOF
    root $root;
    location / {
      limit_except GET { deny all; }
    }
EOF
  if [ -n "$s3" ]; then
    cat >>"$run/nginx.conf" <<EOF
    location ~ ^/([^/]+)\$ {
      default_type application/xml;
      alias $s3/\$1.xml;
    }
EOF
  fi
  cat >>"$run/nginx.conf" <<EOF
  }
}
EOF
}

cmd_check() {
  local n
  if ! n=$(find_nginx); then
    echo "nginx not found (Debian: apt-get install nginx-light)"
    return 1
  fi
  if ! "$n" -v >/dev/null 2>&1; then
    echo "$n does not run"
    return 1
  fi
  return 0
}

cmd_start() {
  [ $# -ge 2 ] || die "usage: nginx.sh start ROOT RUNDIR [--tls] [--h2c] [--workers N] [--connections N] [--owner PID]"
  local root=$1 run=$2 tls=0 h2c=0 workers=1 conns=1000 owner="" s3="" nginx
  shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --tls) tls=1 ;;
      --h2c) h2c=1 ;;
      --workers) workers=$2; shift ;;
      --connections) conns=$2; shift ;;
      --owner) owner=$2; shift ;;
      --s3-listing) s3=$2; shift ;;
      *) die "unknown option $1" ;;
    esac
    shift
  done
  nginx=$(find_nginx) || die "nginx not found (Debian: apt-get install nginx-light)"
  [ -d "$root" ] || die "$root is not a folder"
  root=$(cd "$root" && pwd)
  mkdir -p "$run/tmp" || die "cannot make $run"
  run=$(cd "$run" && pwd)
  [ -e "$run/nginx.pid" ] && die "$run already holds a running nginx (stop it first)"
  if [ $tls = 1 ]; then
    command -v openssl >/dev/null || die "openssl not found (Debian: apt-get install openssl)"
    make_tls "$run" || die "openssl failed: $(cat "$run/tls/openssl.log")"
  fi
  # A unix socket's path has at most 107 bytes.
  local sock=$run/nginx.sock
  if [ ${#sock} -gt 100 ]; then
    sock=$(mktemp -u /tmp/gfnginx.XXXXXXXX.sock)
  fi
  echo "$sock" >"$run/sock"
  local try port tport=0 hport=0
  for try in 1 2 3 4 5 6 7 8; do
    port=$(pick_port) || die "no free port"
    [ $tls = 1 ] && { tport=$(pick_port) || die "no free port"; }
    [ $h2c = 1 ] && { hport=$(pick_port) || die "no free port"; }
    if [ "$port" = "$tport" ] || [ "$port" = "$hport" ] ||
      { [ "$tport" != 0 ] && [ "$tport" = "$hport" ]; }; then
      continue
    fi
    write_conf "$run" "$root" "$port" "$tport" "$hport" "$workers" "$sock" "$conns" "$s3"
    : >"$run/error.log"
    rm -f "$sock"
    # nginx forks its master and returns once the sockets are bound; its
    # stderr goes to a file, or a caller reading ours to the end would
    # wait for the daemon.
    if "$nginx" -p "$run/" -c "$run/nginx.conf" -e "$run/error.log" \
      </dev/null >>"$run/nginx.out" 2>&1; then
      break
    fi
    rm -f "$run/nginx.pid"
    if ! grep -q "Address already in use" "$run/error.log" "$run/nginx.out" 2>/dev/null; then
      cat "$run/nginx.out" "$run/error.log" >&2
      die "nginx did not start"
    fi
    port=""
  done
  [ -n "$port" ] || die "no free port after 8 tries"
  local i pid=""
  for i in $(seq 1 100); do
    pid=$(cat "$run/nginx.pid" 2>/dev/null) && [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] || die "nginx wrote no pid file"
  {
    echo "GF_NGINX_URL=http://127.0.0.1:$port"
    echo "GF_NGINX_PORT=$port"
    if [ $tls = 1 ]; then
      echo "GF_NGINX_TLS_URL=https://127.0.0.1:$tport"
      echo "GF_NGINX_TLS_PORT=$tport"
      echo "GF_NGINX_CA=$run/tls/ca.pem"
    fi
    if [ $h2c = 1 ]; then
      echo "GF_NGINX_H2C_URL=http://127.0.0.1:$hport"
      echo "GF_NGINX_H2C_PORT=$hport"
    fi
    echo "GF_NGINX_SOCK=$sock"
    echo "GF_NGINX_ACCESS_LOG=$run/access.log"
    echo "GF_NGINX_ERROR_LOG=$run/error.log"
    echo "GF_NGINX_PID=$pid"
    echo "GF_NGINX_RUNDIR=$run"
  } >"$run/env"
  if [ -n "$owner" ]; then
    # The watchdog: its own session, no terminal or pipes of the caller
    # held open.
    setsid bash "$0" watch "$run" "$owner" "$pid" </dev/null >/dev/null 2>&1 &
    echo $! >"$run/watchdog.pid"
  fi
  cat "$run/env"
}

# Whether process group PGID has a live member. A zombie is not one: the
# master's parent is whoever adopted the daemon, which may reap it late.
group_alive() {
  ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}

# Stops the nginx whose master is PID (its own process group: nginx's
# daemon calls setsid): TERM, then KILL to the group after 5 s.
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    group_alive "$pid" || return 0
    sleep 0.05
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  for i in $(seq 1 40); do
    group_alive "$pid" || return 0
    sleep 0.05
  done
  return 1
}

cmd_watch() {
  local run=$1 owner=$2 pid=$3
  while kill -0 "$owner" 2>/dev/null && [ -e "$run/nginx.pid" ]; do
    sleep 0.5
  done
  if [ -e "$run/nginx.pid" ]; then
    stop_pid "$pid"
    rm -f "$run/nginx.pid"
    [ -e "$run/sock" ] && rm -f "$(cat "$run/sock")"
  fi
}

cmd_stop() {
  [ $# = 1 ] || die "usage: nginx.sh stop RUNDIR"
  local run=$1 pid wd
  pid=$(cat "$run/nginx.pid" 2>/dev/null) || return 0
  wd=$(cat "$run/watchdog.pid" 2>/dev/null) || wd=""
  [ -n "$pid" ] || return 0
  stop_pid "$pid" || die "nginx (pid $pid) did not stop"
  rm -f "$run/nginx.pid"
  [ -e "$run/sock" ] && rm -f "$(cat "$run/sock")"
  if [ -n "$wd" ]; then
    kill "$wd" 2>/dev/null || true
    rm -f "$run/watchdog.pid"
  fi
  return 0
}

[ $# -ge 1 ] || die "usage: nginx.sh start|stop|check ..."
sub=$1
shift
case "$sub" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  check) cmd_check ;;
  watch) cmd_watch "$@" ;;
  *) die "unknown command $sub" ;;
esac
