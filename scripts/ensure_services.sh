#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer before the tests.
# Starts them if they are installed but down; with CI=true, failing to reach them is an error.
set -u

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! redis_up && command -v redis-server >/dev/null; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
for _ in $(seq 1 30); do
  pg_up && redis_up && break
  sleep 1
done

missing=""
pg_up || missing="$missing PostgreSQL(127.0.0.1:5432)"
redis_up || missing="$missing Redis(127.0.0.1:6379)"
if [ -n "$missing" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "unreachable:$missing (CI=true requires them)" >&2
    exit 1
  fi
  echo "warning: unreachable:$missing; their integration tests will be skipped" >&2
fi
exit 0
