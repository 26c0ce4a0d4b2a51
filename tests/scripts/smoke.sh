#!/usr/bin/env bash
# A short end-to-end check of a deployed stack, run right after `sam deploy` (or `make dev`):
#   make smoke API=https://abc123.execute-api.us-east-1.amazonaws.com TOKEN=<jwt>
#   API=... TOKEN=... tests/scripts/smoke.sh
# With a fresh random post id it likes, reads the like back, waits for the count to converge,
# lists my likes and the post's likers, reads the summary, unlikes, and waits for the count to
# return to where it started. Every step prints its latency; the first failing step is named
# and the exit status is 1 (2 for a usage error). If it fails after the like, it removes the
# like again on the way out, so the stack is left as it was found.
#
# SMOKE_DEADLINE (default 30): seconds each eventually consistent read may take to converge.
# Needs bash, curl and python3 (for JSON).
set -uo pipefail

API="${API:-${1:-}}"
TOKEN="${TOKEN:-${2:-}}"
DEADLINE="${SMOKE_DEADLINE:-30}"

usage() {
  echo "usage: make smoke API=<base url, the stack's ApiUrl output> TOKEN=<a JWT from the stack's identity provider>" >&2
  echo "   or: API=<url> TOKEN=<jwt> tests/scripts/smoke.sh" >&2
  exit 2
}
if [ -z "$API" ] || [ -z "$TOKEN" ]; then usage; fi
case "$API" in http://* | https://*) ;; *)
  echo "smoke: API=$API is not an http(s) URL" >&2
  usage
  ;;
esac
case "$DEADLINE" in '' | *[!0-9]*)
  echo "smoke: SMOKE_DEADLINE=$DEADLINE is not a whole number of seconds" >&2
  exit 2
  ;;
esac
for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "smoke: $tool not found" >&2; exit 2; }
done
API="${API%/}"
# The interpreter itself, not a version manager's shim: it runs once per answer.
py="$(python3 -c 'import sys; print(sys.executable)')"

work="$(mktemp -d -t likes-smoke.XXXXXX)"
body="$work/body"
# The token goes to curl in a file, not on its command line (which other users can see).
printf 'Authorization: Bearer %s\n' "$TOKEN" >"$work/auth"
liked=0 # 1 while this run's like may be in place: the exit trap then removes it
post="smoke-$("$py" -c 'import uuid; print(uuid.uuid4())')"

# A JSON value from the last answer: jget 'd["like_count"]'. Prints nothing if it is not JSON.
jget() {
  "$py" - "$body" "$1" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(json.dumps(eval(sys.argv[2], {"d": d})))
except Exception:
    pass
EOF
}

# A check of the last answer: jcheck 'd["liked"] is True'.
jcheck() { [ "$(jget "bool($1)")" = "true" ]; }

# Milliseconds since the epoch: bash 5's clock, else python's.
if [ -n "${EPOCHREALTIME:-}" ]; then
  now_ms() { local t="${EPOCHREALTIME/[.,]/}"; echo "${t:0:${#t}-3}"; }
else
  now_ms() { "$py" -c 'import time; print(int(time.time() * 1000))'; }
fi

# req METHOD PATH: sets $status (000 if no answer), $ms (latency), $answered_ms (when the answer
# was in) and $curl_error; the body is in $body.
req() {
  local out
  : >"$body"
  if out="$(curl -sS -o "$body" -w '%{http_code} %{time_total}' --connect-timeout 5 --max-time 20 \
    -X "$1" -H "@$work/auth" "$API$2" 2>"$work/err")"; then
    curl_error=""
  else
    curl_error="$(tr '\n' ' ' <"$work/err")"
  fi
  answered_ms="$(now_ms)"
  status="${out%% *}"
  [ -n "$status" ] || status=000
  local t="${out##* }" # seconds, e.g. 0.012345
  if [[ "$t" =~ ^([0-9]+)[.,]([0-9]+)$ ]]; then
    local frac="${BASH_REMATCH[2]}000"
    ms=$((10#${BASH_REMATCH[1]} * 1000 + 10#${frac:0:3}))
  else
    ms='?'
  fi
}

fail() {
  local step="$1" why="$2"
  printf '  FAIL %-22s %s\n' "$step" "$why"
  echo "smoke: FAILED at step '$step': $why" >&2
  exit 1
}

# What is wrong with the last answer, in words.
explain() {
  if [ "$status" = 000 ]; then
    echo "no answer from $API (${curl_error:-no HTTP response}); is the stack up and the URL right?"
  elif [ "$status" = 401 ] || [ "$status" = 403 ]; then
    echo "HTTP $status: the token was refused ($(head -c 300 "$body")); TOKEN must be a valid, unexpired JWT of the stack's identity provider, with the JwtIssuer and JwtAudience the stack was deployed with"
  else
    echo "HTTP $status: $(head -c 300 "$body")"
  fi
}

ok() { printf '  ok   %-22s %6s ms  %s\n' "$1" "$2" "$3"; }

# step NAME METHOD PATH WANT CHECK: one request that must answer 200 and pass CHECK (a Python
# expression over the answer `d`; WANT says it in words).
step() {
  local name="$1" method="$2" path="$3" want="$4" check="$5"
  req "$method" "$path"
  [ "$status" = 200 ] || fail "$name" "$(explain)"
  jcheck "$check" || fail "$name" "unexpected answer $(head -c 300 "$body") (wanted $want)"
  ok "$name" "$ms" "$(head -c 120 "$body")"
}

# converge NAME PATH WANT CHECK [SINCE]: polls PATH until it answers 200 passing CHECK, within
# $DEADLINE s of SINCE (epoch ms; default now), and reports how long after SINCE it did. A 503
# (throttled, Retry-After) is retried like a stale answer; any other error fails at once.
converge() {
  local name="$1" path="$2" want="$3" check="$4" start="${5:-}" polls=0 took
  [ -n "$start" ] || start="$(now_ms)"
  while :; do
    req GET "$path"
    polls=$((polls + 1))
    case "$status" in
      200) if jcheck "$check"; then break; fi ;;
      503) ;;
      *) fail "$name" "$(explain)" ;;
    esac
    if [ $(($(now_ms) - start)) -ge $((DEADLINE * 1000)) ]; then
      fail "$name" "did not converge within ${DEADLINE} s ($polls reads); last answer HTTP $status $(head -c 300 "$body") (wanted $want)"
    fi
    sleep 0.25
  done
  took=$((answered_ms - start))
  ok "$name" "$ms" "after ${took} ms, $polls read(s): $(head -c 100 "$body")"
}

cleanup() {
  if [ "$liked" = 1 ]; then
    req DELETE "/posts/$post/like"
    if [ "$status" = 200 ]; then
      echo "smoke: removed this run's like of $post" >&2
    else
      echo "smoke: could not remove this run's like of $post: $(explain)" >&2
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "smoke: $API, post $post, counts may take up to ${DEADLINE} s"
started="$(now_ms)"

step "count (start)" GET "/posts/$post/likes/count" "a like_count for $post" \
  'd["post_id"] == "'"$post"'" and isinstance(d["like_count"], int)'
count0="$(jget 'd["like_count"]')"

liked=1
step "like" PUT "/posts/$post/like" "liked: true, changed: true" \
  'd["liked"] is True and d["changed"] is True and isinstance(d["user_id"], str)'
me="$(jget 'd["user_id"]')" # a JSON string, quotes included
liked_at_ms="$(now_ms)"

step "did I like it" GET "/posts/$post/like" "liked: true with a liked_at" \
  'd["liked"] is True and d["liked_at"] is not None'

converge "count after like" "/posts/$post/likes/count" "like_count $((count0 + 1))" \
  "d[\"like_count\"] == $count0 + 1" "$liked_at_ms"

converge "my likes" "/users/me/likes?limit=100" "$post among my likes" \
  'any(i["post_id"] == "'"$post"'" for i in d["items"])'

converge "likers" "/posts/$post/likes?limit=10" "user $me among the post's likers" \
  'any(i["user_id"] == '"$me"' for i in d["items"])'

converge "summary" "/likes/summary?post_ids=$post" \
  "one item: like_count $((count0 + 1)), liked_by_me true" \
  'len(d["items"]) == 1 and {k: d["items"][0].get(k) for k in ("post_id", "like_count", "liked_by_me")} == {"post_id": "'"$post"'", "like_count": '"$count0"' + 1, "liked_by_me": True}'

step "unlike" DELETE "/posts/$post/like" "liked: false, changed: true" \
  'd["liked"] is False and d["changed"] is True'
liked=0
unliked_at_ms="$(now_ms)"

step "did I like it (after)" GET "/posts/$post/like" "liked: false, liked_at null" \
  'd["liked"] is False and d["liked_at"] is None'

converge "count back to start" "/posts/$post/likes/count" "like_count $count0" \
  "d[\"like_count\"] == $count0" "$unliked_at_ms"

echo "smoke: passed, 10 steps in $(($(now_ms) - started)) ms"
